#!/usr/bin/env python
"""Launch the s2.cpp server (``s2 --server``) and record its exact command line in a service record.

    python scripts/serve_s2cpp.py --binary /srv/s2.cpp/build/s2 --record results/s2cpp_service.json -- \\
        -m /srv/s2-pro-q8.gguf -t /srv/tokenizer.json -c 0 -H 127.0.0.1 -P 3030

Why: s2.cpp flags change every output (``--normalize`` peak-normalizes to 0.95, ``--trim-silence``,
``--dynamic-normalize``, ``--min-tokens-before-end``, and the per-request defaults ``--max-tokens``,
``--temp``, ``--top-p``, ``--top-k``), yet the server reports none of them. The record written here
(``--record``) holds the command line, the binary's sha256 and the flags as s2.cpp reads them (exact
spellings only, last one wins; source: rodrigomatta/s2.cpp 2c33261, src/main.cpp). A run reads it with
``adversary.service_record=FILE`` into its provenance and generation fingerprint. ``--server`` is added
when missing. Then the binary replaces this process (same pid, signals reach the server directly).

s2.cpp's own defaults: max_new_tokens 1024 (the CLI warns above it), temperature 0.8, top_p 0.8, top_k 30,
no normalization, no trimming. A ``--max-tokens`` above 1024 is allowed but warned about here too.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from service_record import drop_options, file_sha256, write_record

# flag -> (setting, value it sets); the last occurrence wins, as in s2.cpp's argument loop
SWITCHES = {"--normalize": ("normalize", True), "--no-normalize": ("normalize", False),
            "--trim-silence": ("trim_silence", True), "--no-trim-silence": ("trim_silence", False),
            "--dynamic-normalize": ("dynamic_normalize", True), "--no-dynamic-normalize": ("dynamic_normalize", False)}
VALUED = {"-max-tokens": "max_new_tokens", "--max-tokens": "max_new_tokens",
          "--min-tokens-before-end": "min_tokens_before_end", "-temp": "temperature", "--temp": "temperature",
          "--temperature": "temperature", "-top-p": "top_p", "--top-p": "top_p", "-top-k": "top_k", "--top-k": "top_k",
          "-m": "model", "--model": "model", "-t": "tokenizer", "--tokenizer": "tokenizer"}
DEFAULTS = {"normalize": False, "trim_silence": False, "dynamic_normalize": False, "max_new_tokens": "1024",
            "min_tokens_before_end": "0", "temperature": "0.8", "top_p": "0.8", "top_k": "30"}
LISTEN_OPTIONS = {"-H", "--host", "-P", "--port"}
RECOMMENDED_MAX_TOKENS = 1024


def output_flags(server_args: list[str]) -> dict:
    """The settings that shape every output, as s2.cpp's argument loop reads ``server_args``."""
    flags = dict(DEFAULTS)
    index = 0
    while index < len(server_args):
        arg = server_args[index]
        if arg in SWITCHES:
            name, value = SWITCHES[arg]
            flags[name] = value
        elif arg in VALUED and index + 1 < len(server_args):
            flags[VALUED[arg]] = server_args[index + 1]
            index += 1
        index += 1
    return flags


def file_facts(path: str | None) -> dict | None:
    """Path, size and mtime of a model file (hashing a multi-GB GGUF here would delay the start: set
    adversary.service_checkpoint_path to have the run hash it, cached)."""
    if not path:
        return None
    p = Path(path).resolve()
    if not p.is_file():
        return {"path": str(p), "exists": False}
    stat = p.stat()
    return {"path": str(p), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, server_args = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, required=True, help="the s2 executable built from s2.cpp")
    parser.add_argument("--record", type=Path, required=True, help="write the service record here")
    args = parser.parse_args(own)
    binary = args.binary.resolve()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise SystemExit(f"serve_s2cpp: --binary {binary} is not an executable file (build s2.cpp first)")
    if "--server" not in server_args:
        server_args = ["--server", *server_args]
    flags = output_flags(server_args)
    try:
        if int(flags["max_new_tokens"]) > RECOMMENDED_MAX_TOKENS:
            print(f"serve_s2cpp: warning: --max-tokens {flags['max_new_tokens']} is above s2.cpp's recommended "
                  f"{RECOMMENDED_MAX_TOKENS} (it warns of voice quality degradation)", file=sys.stderr)
    except ValueError:
        print(f"serve_s2cpp: warning: --max-tokens {flags['max_new_tokens']!r} is not a number; s2.cpp ignores it "
              "silently and keeps 1024", file=sys.stderr)
    command = [str(binary), *server_args]
    binary_sha256 = file_sha256(binary)
    write_record(args.record, {
        "server": "s2cpp", "protocol": "s2cpp_http", "command": command, "server_args": server_args,
        "output_args": drop_options(server_args, LISTEN_OPTIONS), "output_flags": flags,
        "binary_sha256": binary_sha256, "model": file_facts(flags.get("model")), "cwd": os.getcwd(),
        # what decides the audio (paths excluded: the weights are hashed through adversary.service_*_path)
        "fingerprint": {"binary_sha256": binary_sha256,
                        **{k: v for k, v in flags.items() if k not in ("model", "tokenizer")}}})
    print(f"serve_s2cpp: service record {args.record}; exec {' '.join(command)}", flush=True)
    os.execv(str(binary), command)
    return 0  # pragma: no cover - execv does not return


if __name__ == "__main__":
    raise SystemExit(main())
