#!/usr/bin/env python
"""Launch the official Fish Speech API server from a checkout, seeded at startup, with one worker.

    /srv/fish-speech/.venv/bin/python scripts/serve_fish_s2.py --checkout /srv/fish-speech --seed 42 \\
        --record results/fish_service.json -- \\
        --listen 127.0.0.1:18011 --llama-checkpoint-path /srv/s2-pro \\
        --decoder-checkpoint-path /srv/s2-pro/codec.pth

Run it with the fish-speech environment's Python (it imports the server, which needs torch, kui,
pyrootutils...); it needs nothing from clonebench.

Why: the server's warm-up synthesis and any request sent without a seed draw from the process RNG, so
an unseeded start makes the first outputs unrepeatable. This sets Python's, NumPy's and torch's
(CPU and CUDA) generators before the server module is imported, then runs ``tools.api_server`` as
``python -m`` would, from the checkout (reference folders resolve relative to it). ``--workers``
other than 1 is refused: each worker would load its own model copy with its own RNG stream, and
requests would land on them in no fixed order: every spelling the server's argparse would read as
``--workers`` (``--worker 2``, ``--wo=2``...) is found with argparse's own prefix matching against the
server's option list, read from the checkout's ``tools/server/api_utils.py``. Everything after ``--``
goes to the server unchanged. ``--record FILE`` writes the service record (the exact command line,
the checkout's commit, the startup seed) that a run reads through ``adversary.service_record=FILE``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import runpy
import sys
from pathlib import Path

from service_record import drop_options, git_commit, redact, write_record

# tools/server/api_utils.py parse_args() at fish-speech 3dd1f85: (option strings, takes a value)
SERVER_OPTIONS_3DD1F85 = [(("--mode",), True), (("--llama-checkpoint-path",), True),
                          (("--decoder-checkpoint-path",), True), (("--decoder-config-name",), True),
                          (("--device",), True), (("--half",), False), (("--compile",), False),
                          (("--max-text-length",), True), (("--listen",), True), (("--workers",), True),
                          (("--api-key",), True)]


def server_options(checkout: Path | None) -> list[tuple[tuple[str, ...], bool]]:
    """The server's argparse options, read from ``tools/server/api_utils.py`` (3dd1f85's list if unreadable)."""
    source = checkout / "tools" / "server" / "api_utils.py" if checkout else None
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (AttributeError, OSError, SyntaxError, ValueError):
        return SERVER_OPTIONS_3DD1F85
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            names = tuple(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
            action = next((k.value.value for k in node.keywords if k.arg == "action"
                           and isinstance(k.value, ast.Constant)), None)
            if names:
                found.append((names, action not in ("store_true", "store_false", "count")))
    return found if any("--workers" in names for names, _ in found) else SERVER_OPTIONS_3DD1F85


def workers_value(server_args: list[str], options: list[tuple[tuple[str, ...], bool]]) -> str | None:
    """What the server's argparse would take as ``--workers`` from ``server_args`` (prefixes, ``=`` forms
    included), by running argparse itself over the same option list. None when not given."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    parser.add_argument("-h", "--help", action="store_true")  # the server's parser has it too
    for names, takes_value in options:
        if takes_value:
            parser.add_argument(*names, type=str)
        else:
            parser.add_argument(*names, action="store_true")
    try:
        parsed, _ = parser.parse_known_args(server_args)
    except (argparse.ArgumentError, SystemExit) as exc:
        raise SystemExit(f"serve_fish_s2: the server would refuse these arguments: {exc}") from None
    return parsed.workers


def refuse_workers(server_args: list[str], checkout: Path | None = None) -> None:
    value = workers_value(server_args, server_options(checkout))
    if value is not None and value.strip() != "1":
        raise SystemExit(f"serve_fish_s2: --workers {value} refused (as the server's argparse reads {server_args}): "
                         "run one worker per server (start several servers on several ports for throughput)")


def output_args(server_args: list[str], options: list[tuple[tuple[str, ...], bool]]) -> list[str]:
    """The server arguments that can change the audio: all but the listen address and the API key (each in the
    spelling argparse would accept), normalised to the full option names."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    actions = [(parser.add_argument(*names, **({"type": str} if takes_value else {"action": "store_true"})), takes_value)
               for names, takes_value in options]
    parsed, rest = parser.parse_known_args(server_args)
    out = []
    for action, takes_value in actions:
        name = max(action.option_strings, key=len)
        value = getattr(parsed, action.dest)
        if name in ("--listen", "--api-key"):
            continue
        if takes_value and value is not None:
            out += [name, value]
        elif not takes_value and value:
            out.append(name)
    return out + rest


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
    parser.add_argument("--record", type=Path, help="write the service record here (for adversary.service_record)")
    args = parser.parse_args(own)
    checkout = args.checkout.resolve()
    if not (checkout / "tools" / "api_server.py").is_file():
        raise SystemExit(f"serve_fish_s2: {checkout}/tools/api_server.py not found (--checkout must be a fish-speech checkout)")
    refuse_workers(server_args, checkout)
    options = [n for names, _ in server_options(checkout) for n in names]
    # every spelling argparse reads as --api-key: the name and its unambiguous prefixes
    secret = {"--api-key"[:i] for i in range(3, 10)
              if not any(o.startswith("--api-key"[:i]) and o != "--api-key" for o in options)}
    if args.record:
        commit = git_commit(checkout)
        kept = output_args(server_args, server_options(checkout))
        write_record(args.record, {
            "server": "fish_speech_api_server", "protocol": "fish_s2_http",
            "command": [sys.executable, str(Path(__file__).resolve()), *redact(argv, secret)],
            "server_args": redact(server_args, secret),
            "output_args": kept, "checkout": str(checkout), "checkout_commit": commit, "startup_seed": args.seed,
            # what decides the audio (checkpoint paths excluded: hashed through adversary.service_*_path)
            "fingerprint": {"checkout_commit": commit, "startup_seed": args.seed,
                            "output_args": drop_options(kept, {"--llama-checkpoint-path", "--decoder-checkpoint-path"})}})
    seeded = seed_everything(args.seed)
    os.environ["CLONEBENCH_STARTUP_SEED"] = str(args.seed)
    print(json.dumps({"serve_fish_s2": {"checkout": str(checkout), "seed": args.seed, "seeded": seeded,
                                        "server_args": redact(server_args, secret)}}), flush=True)
    os.chdir(checkout)
    sys.path.insert(0, str(checkout))
    sys.argv = [str(checkout / "tools" / "api_server.py"), *server_args]
    runpy.run_module("tools.api_server", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
