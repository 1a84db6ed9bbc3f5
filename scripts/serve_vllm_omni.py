#!/usr/bin/env python
"""Launch vLLM-Omni's OpenAI-compatible server for Fish S2 and record its command line and build in a service record.

    python scripts/serve_vllm_omni.py --record results/vllm_service.json [--checkout /srv/vllm-omni] \\
        [--build after-5406|before-5406] -- vllm serve fishaudio/s2-pro --omni --port 8000 \\
        [--deploy-config vllm_omni/deploy/fish_qwen3_omni.yaml]

Why: what a vLLM-Omni server does with a request depends on its build, which the server does not report
(shared notes, server_protocols.md, "vLLM-Omni after 2026-06", read 2026-12-01):

- since #5406 (76e4a78a, 2026-07-25) ``extra_params.{temperature,top_p,top_k}`` reach stage 0's sampling (the
  Fish slow AR); before it, every request is sampled with the deploy config's stage-0 values; repetition_penalty
  never reaches it;
- #5647 (7a2007cc, 2026-08-03) removed ``--stage-configs-path``: it is ``--deploy-config`` (default for Fish:
  ``vllm_omni/deploy/fish_qwen3_omni.yaml``; its stage-0 sampling applies to every request).

The build comes from ``--build`` (stated by the user), else from ``--checkout`` (a git checkout of vllm-omni:
its commit, and whether 76e4a78a / 7a2007cc are ancestors of it), else it is "unknown". A run reads the record with
``adversary.service_record=FILE``: its effective sampling then follows the build (clonebench.adversary.openai_speech),
and the record's ``fingerprint`` (build, output arguments, deploy config sha256) joins the generation fingerprint.
Then the server command replaces this process (same pid). Standard library only: it runs in vLLM's environment.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from service_record import drop_options, file_sha256, git_commit, redact, write_record

SAMPLING_PR = ("#5406", "76e4a78a")      # extra_params temperature/top_p/top_k reach the Fish slow AR
DEPLOY_CONFIG_PR = ("#5647", "7a2007cc")  # --stage-configs-path removed: --deploy-config
BUILDS = {"after-5406": True, "before-5406": False}
LISTEN_OPTIONS = {"--host", "--port", "--api-key", "--uvicorn-log-level"}
SECRET_OPTIONS = {"--api-key"}


def is_ancestor(checkout: Path, commit: str) -> bool | None:
    """Whether ``commit`` is in the checkout's history (None: git cannot tell, e.g. a shallow clone)."""
    try:
        result = subprocess.run(["git", "-C", str(checkout), "merge-base", "--is-ancestor", commit, "HEAD"],
                                capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(result.returncode)


def installed_version() -> str | None:
    """The installed vllm-omni distribution's version (without importing it), if any."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vllm-omni")
    except PackageNotFoundError:
        return None


def build_facts(stated: str | None, checkout: Path | None) -> dict:
    """The server build as far as it can be known; ``extra_params_sampling`` None means unknown."""
    facts = {"commit": git_commit(checkout) if checkout else None, "version": installed_version(),
             "extra_params_sampling": None, "deploy_config_option": None, "source": "unknown"}
    if checkout is not None and facts["commit"]:
        facts["extra_params_sampling"] = is_ancestor(checkout, SAMPLING_PR[1])
        since_5647 = is_ancestor(checkout, DEPLOY_CONFIG_PR[1])
        facts["deploy_config_option"] = None if since_5647 is None else \
            ("--deploy-config" if since_5647 else "--stage-configs-path")
        if facts["extra_params_sampling"] is not None:
            facts["source"] = f"git: {SAMPLING_PR[0]} ({SAMPLING_PR[1]}) is{'' if facts['extra_params_sampling'] else ' not'} an ancestor of {facts['commit']}"
    if stated is not None:
        if facts["extra_params_sampling"] is not None and facts["extra_params_sampling"] != BUILDS[stated]:
            raise SystemExit(f"serve_vllm_omni: --build {stated} contradicts the checkout ({facts['source']})")
        facts.update(extra_params_sampling=BUILDS[stated], source=f"stated: --build {stated}")
    facts["label"] = {True: f"after {SAMPLING_PR[0]}", False: f"before {SAMPLING_PR[0]}",
                      None: "unknown"}[facts["extra_params_sampling"]]
    return facts


def option_value(args: list[str], option: str) -> str | None:
    for index, arg in enumerate(args):
        if arg == option and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(option + "="):
            return arg.split("=", 1)[1]
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, server_args = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=Path, required=True, help="write the service record here")
    parser.add_argument("--checkout", type=Path, help="the vllm-omni git checkout the server runs from")
    parser.add_argument("--build", choices=sorted(BUILDS), help="state the build when there is no checkout")
    args = parser.parse_args(own)
    if not server_args or shutil.which(server_args[0]) is None and not Path(server_args[0]).is_file():
        raise SystemExit("serve_vllm_omni: give the server command after --, e.g. -- vllm serve fishaudio/s2-pro "
                         "--omni --port 8000")
    build = build_facts(args.build, args.checkout)
    if option_value(server_args, "--stage-configs-path") is not None:
        if build["deploy_config_option"] == "--deploy-config":
            raise SystemExit(f"serve_vllm_omni: --stage-configs-path was removed by {DEPLOY_CONFIG_PR[0]} "
                             f"({DEPLOY_CONFIG_PR[1]}), which this checkout contains: use --deploy-config")
        print(f"serve_vllm_omni: warning: --stage-configs-path was removed by {DEPLOY_CONFIG_PR[0]}; newer builds "
              "need --deploy-config", file=sys.stderr)
    deploy = option_value(server_args, "--deploy-config") or option_value(server_args, "--stage-configs-path")
    deploy_facts = None
    if deploy is not None:
        path = Path(deploy).resolve()
        deploy_facts = {"path": str(path), "sha256": file_sha256(path) if path.is_file() else None}
    output_args = drop_options(server_args, LISTEN_OPTIONS)
    write_record(args.record, {
        "server": "vllm-omni", "protocol": "openai_speech", "command": redact(server_args, SECRET_OPTIONS),
        "output_args": output_args, "build": build, "deploy_config": deploy_facts, "cwd": os.getcwd(),
        # what decides the audio: the build, the arguments (not the listen address or key), the deploy config
        "fingerprint": {"build": {k: build[k] for k in ("commit", "extra_params_sampling")},
                        "output_args": output_args, "deploy_config_sha256": (deploy_facts or {}).get("sha256")}})
    print(f"serve_vllm_omni: service record {args.record} (build {build['label']}); exec "
          f"{' '.join(redact(server_args, SECRET_OPTIONS))}", flush=True)
    os.execvp(server_args[0], server_args)
    return 0  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    raise SystemExit(main())
