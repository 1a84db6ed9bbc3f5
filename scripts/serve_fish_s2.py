#!/usr/bin/env python
"""Launch the official Fish Speech API server from a checkout, seeded at startup, with one worker.

    python scripts/serve_fish_s2.py --checkout /srv/fish-speech --seed 42 -- \\
        --listen 127.0.0.1:18011 --llama-checkpoint-path /srv/s2-pro \\
        --decoder-checkpoint-path /srv/s2-pro/codec.pth

Why: the server's warm-up synthesis and any request sent without a seed draw from the process RNG, so
an unseeded start makes the first outputs unrepeatable. This sets Python's, NumPy's and torch's
(CPU and CUDA) generators before the server module is imported, then runs ``tools.api_server`` as
``python -m`` would, from the checkout (reference folders resolve relative to it). ``--workers``
other than 1 is refused: each worker would load its own model copy with its own RNG stream, and
requests would land on them in no fixed order. Everything after ``--`` goes to the server unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import runpy
import sys
from pathlib import Path


def refuse_workers(server_args: list[str]) -> None:
    for index, arg in enumerate(server_args):
        value = None
        if arg == "--workers" and index + 1 < len(server_args):
            value = server_args[index + 1]
        elif arg.startswith("--workers="):
            value = arg.split("=", 1)[1]
        if value is not None and value.strip() != "1":
            raise SystemExit(f"serve_fish_s2: --workers {value} refused: run one worker per server (start several "
                             "servers on several ports for throughput)")


def seed_everything(seed: int) -> dict:
    random.seed(seed)
    seeded = {"python": True}
    try:
        import numpy as np
        np.random.seed(seed)
        seeded["numpy"] = True
    except ImportError:
        seeded["numpy"] = False
    try:
        import torch
        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
        seeded["torch"] = True
    except ImportError:
        seeded["torch"] = False
    return seeded


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, server_args = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, required=True, help="fish-speech checkout (has tools/api_server.py)")
    parser.add_argument("--seed", type=int, default=42, help="startup seed (default %(default)s)")
    args = parser.parse_args(own)
    refuse_workers(server_args)
    checkout = args.checkout.resolve()
    if not (checkout / "tools" / "api_server.py").is_file():
        raise SystemExit(f"serve_fish_s2: {checkout}/tools/api_server.py not found (--checkout must be a fish-speech checkout)")
    seeded = seed_everything(args.seed)
    os.environ["CLONEBENCH_STARTUP_SEED"] = str(args.seed)
    print(json.dumps({"serve_fish_s2": {"checkout": str(checkout), "seed": args.seed, "seeded": seeded,
                                        "server_args": server_args}}), flush=True)
    os.chdir(checkout)
    sys.path.insert(0, str(checkout))
    sys.argv = [str(checkout / "tools" / "api_server.py"), *server_args]
    runpy.run_module("tools.api_server", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
