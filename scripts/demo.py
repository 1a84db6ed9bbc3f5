#!/usr/bin/env python
"""The offline demo (README command 1): eSpeak NG pairs -> stand-in Fish server on loopback -> run_vc.py.

1. builds a small LibriTTS-shaped dataset with eSpeak NG under results/demo/data/;
2. starts the stand-in Fish server (``python -m clonebench.standin``) on a free loopback port;
3. runs ``python run_vc.py --config-name demo`` against it, then stops the server;
4. writes the HTML report of the scored run (``clonebench report RUN --format html --with-paper``) into
   ``RUN/report/`` and prints the path of its ``index.html``.
``--results DIR`` puts data and runs under DIR instead of results/. ``--failing`` makes the stand-in
behave like a failing cloning model (``--behaviours`` of ``python -m clonebench.standin``: a quarter of the pairs
loop their sentence, a quarter stop short, a quarter return the prompt itself; chosen by a hash of each pair) and
names the run ``demo_failing``: its table and report show the failure rates (docs/failure-modes.md). Further
arguments are passed to run_vc.py as Hydra overrides.
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from clonebench.demo.dataset import FAILING_BEHAVIOURS, build_demo_dataset  # noqa: E402
from clonebench.standin.process import start_process  # noqa: E402


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """This script's own options, and the rest (Hydra overrides for run_vc.py); ``--help`` prints the options and
    exits before anything is built or started."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     usage="%(prog)s [--results DIR] [--failing] [HYDRA_OVERRIDE ...]", allow_abbrev=False)
    parser.add_argument("--results", type=Path, default=REPO / "results", metavar="DIR",
                        help="folder for the demo data and runs (default: results/ of the repository)")
    parser.add_argument("--failing", action="store_true", help="a stand-in that fails on purpose; run name demo_failing")
    return parser.parse_known_args(argv)


def main(argv: list[str]) -> int:
    options, argv = parse(argv)
    results, failing = options.results.resolve(), options.failing
    if failing and not any(a.startswith("run_name=") for a in argv):
        argv = [*argv, "run_name=demo_failing"]
    manifest = build_demo_dataset(results / "demo" / "data")
    print(f"demo dataset: {manifest}")
    run_name = next((a.split("=", 1)[1] for a in argv if a.startswith("run_name=")), "demo")
    run_dir = next((Path(a.split("=", 1)[1]) for a in argv if a.startswith("hydra.run.dir=")), None)
    if run_dir is None:
        run_dir = results / run_name / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}"
        argv = [*argv, f"hydra.run.dir={run_dir}"]
    with tempfile.TemporaryDirectory() as tmp:
        flags = ("--behaviours", FAILING_BEHAVIOURS) if failing else ()
        server, url = start_process(Path(tmp) / "url", *flags, max_lifetime=1800)
        try:
            # Hydra reads its flags (-m: a sweep, e.g. of shards) only before the overrides
            flags = [a for a in argv if a in ("-m", "--multirun")]
            command = [sys.executable, str(REPO / "run_vc.py"), "--config-name", "demo", *flags,
                       f"paths.results_dir={results}", f"adversary.endpoint_url={url}/v1/tts",
                       *(a for a in argv if a not in flags)]
            code = subprocess.run(command, cwd=REPO).returncode
        finally:
            server.terminate()
            server.wait(timeout=30)
    if code == 0 and (run_dir / "metrics.json").is_file():  # (a sweep's runs are in results/<run_name>/multirun-*)
        from clonebench.cli.main import main as cli

        code = cli(["report", str(run_dir), "--format", "html", "--with-paper", "--allow-partial",
                    "--output", str(run_dir / "report")])
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
