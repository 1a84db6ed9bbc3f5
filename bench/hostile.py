#!/usr/bin/env python
"""What each hostile answer costs the client: one attempt per answer, each in a fresh process, with the
default response cap (``adversary.max_response_bytes``) unless ``--cap`` is given.

Prints per answer: the outcome and error class, the attempt's duration, the bytes the client held at most
(the cap, or what the error reports) and the peak resident-memory growth of the process over its size before
the attempt. The hostile stand-in runs in its own process (``python -m clonebench.standin --sticky-fault``).

    python bench/hostile.py [--cap BYTES] [--timeout 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _standins import ENV, start_standin  # noqa: E402

ANSWERS = {
    "oversized (2 GiB declared)": {"kind": "oversized", "bytes": 2 << 30},
    "endless chunked": {"kind": "endless"},
    "gzip bomb (2 GiB inflated)": {"kind": "compressed_bomb", "encoding": "gzip", "inflated": 2 << 30},
    "deflate bomb (2 GiB inflated)": {"kind": "compressed_bomb", "encoding": "deflate", "inflated": 2 << 30},
    "drip (1 byte/s)": {"kind": "drip", "interval": 1.0},
    "Retry-After: soon": {"kind": "bad_header", "variant": "retry_after", "value": "soon"},
    "Content-Length: 12abc": {"kind": "bad_header", "variant": "content_length"},
}
ONE_ATTEMPT = r"""
import asyncio, json, re, sys
import httpx
from clonebench.adversary.base import PreparedRequest
from clonebench.adversary.bounded import bounded_client
from clonebench.adversary.transport import AttemptFailed, RetryPolicy, send

url, cap, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
body = json.dumps({"text": "A hostile answer.", "references": [], "format": "wav"}).encode()
request = PreparedRequest("POST", url, body, {"Content-Type": "application/json"})
def status_kb(field):
    return int(next(l for l in open("/proc/self/status") if l.startswith(field)).split()[1])

def peak_kb():
    return status_kb("VmHWM:")

base = status_kb("VmRSS:")

async def main():
    async with bounded_client(cap, timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0))) as http:
        try:
            data, _, attempts = await send(http, request, RetryPolicy(1, 0.01, 0.1, deadline=timeout),
                                           lambda a: None, lambda a: None)
            return attempts[-1], len(data)
        except AttemptFailed as exc:
            return exc.attempts[-1], None

attempt, size = asyncio.run(main())
read = re.search(r"more than (\d+) bytes read", attempt.error or "")
held = size if size is not None else cap + 1 if attempt.error_class == "ResponseTooLarge" and "decoded" in attempt.error \
    else int(read.group(1)) if read else 0 if "declared" in (attempt.error or "") else attempt.response_bytes
print(json.dumps({"outcome": attempt.outcome, "error_class": attempt.error_class,
                  "duration_s": round(attempt.duration_s, 2), "held_bytes": held,
                  "rss_growth_mib": round((peak_kb() - base) / 1024, 1)}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=int, default=None, help="bytes (default: adversary.max_response_bytes default)")
    parser.add_argument("--timeout", type=float, default=5.0, help="adversary.timeout for the attempt")
    args = parser.parse_args()
    from clonebench.adversary.bounded import DEFAULT_MAX_RESPONSE_BYTES

    cap = args.cap or DEFAULT_MAX_RESPONSE_BYTES
    print(f"cap {cap} bytes, timeout {args.timeout:g} s")
    print(f"{'answer':<32} {'outcome':<16} {'error class':<20} {'seconds':>8} {'held bytes':>12} {'RSS +MiB':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for number, (name, fault) in enumerate(ANSWERS.items()):
            server, url = start_standin(Path(tmp), f"hostile{number}", "--sticky-fault", json.dumps(fault))
            try:
                result = subprocess.run([sys.executable, "-c", ONE_ATTEMPT, f"{url}/v1/tts", str(cap), str(args.timeout)],
                                        capture_output=True, text=True, env=ENV, timeout=600)
            finally:
                server.terminate()
                server.wait(timeout=30)
            if result.returncode != 0:
                print(f"{name:<32} failed: {result.stderr[-500:]}")
                continue
            r = json.loads(result.stdout.strip().splitlines()[-1])
            print(f"{name:<32} {r['outcome']:<16} {str(r['error_class']):<20} {r['duration_s']:>8} "
                  f"{str(r['held_bytes']):>12} {r['rss_growth_mib']:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
