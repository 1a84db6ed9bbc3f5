"""``python -m clonebench.standin --listen 127.0.0.1:PORT``: run the stand-in Fish server (test/demo only).

``python -m clonebench.standin --test-list prompts.tsv --res-dir DIR [--seed N] [--ignore-reference]``: the
stand-in as a batch inference script instead (``clonebench.standin.batch``), writing ``DIR/<id>.wav``.

``--behaviours loop=0.25,truncate=0.15,prompt_copy=0.1`` makes the server answer like a failing cloning model for
those fractions of requests (a valid 200 WAV with bad content: ``loop`` the utterance 3 times, ``truncate`` its
first 40 %, ``prompt_copy`` the reference audio, ``silence`` 2 s of -70 dBFS noise), picked from a hash of each
request's text and reference, so the same pair always gets the same behaviour (``clonebench.standin.behaviours``);
the fault ``{"kind": "behave", "as": "loop"}`` (``--faults`` / ``--sticky-fault``) forces one."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from clonebench.core.atomic import atomic_write_text
from clonebench.standin.behaviours import parse_behaviours
from clonebench.standin.openai_api import BUILDS
from clonebench.standin.server import StandinServer
from clonebench.standin.stream_profile import parse_profile


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clonebench.standin", description=__doc__)
    parser.add_argument("--listen", default="127.0.0.1:0", help="loopback host:port (port 0 = any free port)")
    parser.add_argument("--protocol", choices=("fish", "s2cpp", "openai", "triton", "cosyvoice", "zonos2",
                                                     "gpt_sovits", "sglang_omni"), default="fish",
                        help="Fish api_server (/v1/tts), s2.cpp (/generate) or OpenAI speech (/v1/audio/speech)")
    parser.add_argument("--api-key-env", help="environment variable holding the Bearer key to require")
    parser.add_argument("--latency", type=float, default=0.0, help="fixed extra seconds per synthesis")
    parser.add_argument("--parallel", action="store_true", help="synthesize requests concurrently (Fish does not)")
    parser.add_argument("--tone", action="store_true", help="answer a cheap tone instead of speech (load benchmarks)")
    parser.add_argument("--faults", help="JSON list of faults to queue (see clonebench.standin.faults)")
    parser.add_argument("--sticky-fault", help="JSON fault applied to every request once the queue is empty")
    parser.add_argument("--behaviours", default="", metavar="NAME=FRACTION,...",
                        help="failure behaviours by fraction of requests, e.g. loop=0.25,truncate=0.15,prompt_copy=0.1 "
                             "(names: loop, truncate, prompt_copy, silence; deterministic per text/reference)")
    parser.add_argument("--ignore-seed", action="store_true", help="accept seeds and ignore them (some vLLM-Omni versions)")
    parser.add_argument("--vllm-build", choices=BUILDS, default="after-6553",
                        help="--protocol openai: behave as vLLM-Omni before #5406 (extra_params sampling ignored, "
                             "sample_rate dropped) or after #6553 (sampling applied, sample_rate refused, int64 seeds)")
    parser.add_argument("--references-dir", type=Path, help="folder for reference_id lookups; gpt_sovits: the "
                        "shared folder whose server-side reference paths it reads")
    parser.add_argument("--stream-profile", metavar="FIELD=VALUE,...",
                        help="script when each chunk leaves (serving runs' truth): first=0.2,rtf=0.5,slowdown=0.5,"
                             "jitter=0,chunk=1,schedule=fixed|sentence (clonebench.standin.stream_profile)")
    parser.add_argument("--port-file", type=Path, help="write the bound URL here once listening")
    parser.add_argument("--max-lifetime", type=float, default=3600.0, help="stop by itself after this many seconds")
    batch = parser.add_argument_group("batch mode (no server): ZipVoice-style inference over a prompt list")
    batch.add_argument("--test-list", type=Path, help="prompts.tsv (id, reference_text, reference_wav, text) or .lst")
    batch.add_argument("--res-dir", type=Path, help="folder to write <id>.wav into")
    batch.add_argument("--seed", type=int, default=0, help="varies each utterance's prosody (default %(default)s)")
    batch.add_argument("--ignore-reference", action="store_true", help="one default voice for every line")
    args = parser.parse_args(argv)
    if args.test_list or args.res_dir:
        if not (args.test_list and args.res_dir):
            parser.error("batch mode needs both --test-list and --res-dir")
        from clonebench.standin.batch import run_batch

        return run_batch(args.test_list, args.res_dir, args.seed, args.ignore_reference)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s standin %(levelname)s %(message)s")
    try:
        behaviours = parse_behaviours(args.behaviours)
    except ValueError as exc:
        parser.error(f"--behaviours: {exc}")
    try:
        profile = parse_profile(args.stream_profile) if args.stream_profile else None
    except ValueError as exc:
        parser.error(f"--stream-profile: {exc}")
    host, _, port = args.listen.rpartition(":")
    api_key = os.environ.get(args.api_key_env) if args.api_key_env else None
    if args.api_key_env and not api_key:
        parser.error(f"--api-key-env {args.api_key_env}: that variable is not set")
    server = StandinServer((host or "127.0.0.1", int(port)), api_key=api_key, latency=args.latency,
                           serial=not args.parallel, references_dir=args.references_dir, protocol=args.protocol,
                           tone=args.tone, ignore_seed=args.ignore_seed, vllm_build=args.vllm_build,
                           behaviours=behaviours, stream_profile=profile)
    if args.faults:
        server.faults.add(json.loads(args.faults))
    if args.sticky_fault:
        server.faults.set_sticky(json.loads(args.sticky_fault))
    stopper = threading.Timer(args.max_lifetime, server.shutdown)
    stopper.daemon = True
    stopper.start()
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    if args.port_file:
        atomic_write_text(args.port_file, server.url + "\n")
    print(f"stand-in {args.protocol} server (eSpeak NG, not a cloning model) listening on {server.url}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
