"""``clonebench SUBCOMMAND ...``: subcommands are registered lazily as 'module:function' pairs."""

from __future__ import annotations

import argparse
import importlib
import sys

from clonebench.core.errors import ClonebenchError
from clonebench.core.redact import TerminalWriter, shown

SUBCOMMANDS = {
    # name: (module with add_arguments(parser) and run(args) -> int, one-line help)
    "status": ("clonebench.cli.status", "coverage, statuses and errors of a run directory"),
    "manifest": ("clonebench.cli.manifest_cmd", "sample ids, seeds and input fingerprint of a manifest"),
    "compare": ("clonebench.cli.compare_cmd", "compare N systems on the same pairs (paired statistics), or a run with a historical set"),
    "compare-check": ("clonebench.cli.compare_check", "exit 1 unless two runs are comparable"),
    "report": ("clonebench.cli.report_cmd", "paper table of runs (markdown, LaTeX, CSV)"),
    "plot": ("clonebench.cli.plot_cmd", "per-speaker SIM and per-utterance WER plots (PNG)"),
    "doctor": ("clonebench.cli.doctor", "check the installation and print the fix for each problem"),
    "repeat": ("clonebench.cli.repeat", "re-send a run's first requests; report byte-identical outputs"),
    "merge": ("clonebench.cli.merge_cmd", "merge a sweep's shard runs into one run"),
    "listening-test": ("clonebench.cli.listening_test_cmd", "a MOS/SMOS/CMOS/MUSHRA listening test page from runs"),
    "listening-results": ("clonebench.cli.listening_results_cmd", "scores, CIs and agreement of a listening test"),
    "prompts": ("clonebench.cli.prompts_cmd", "export references and texts for a model that is not a server"),
    "score": ("clonebench.cli.score_cmd", "score folders of WAVs made outside clonebench (one per model)"),
    "suite": ("clonebench.cli.suite_cmd", "summary and submission.json of a suite run, derived from its task runs"),
}


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    parser = argparse.ArgumentParser(prog="clonebench", description="voice-cloning evaluation harness")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        module.add_arguments(sub.add_parser(name, help=help_text, description=module.__doc__))
        modules[name] = module
    return parser, modules


def main(argv: list[str] | None = None) -> int:
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    stdout, sys.stdout = sys.stdout, TerminalWriter(sys.stdout)  # manifest and journal text is untrusted
    try:
        return modules[args.command].run(args)
    except ClonebenchError as exc:
        print(f"clonebench {args.command}: error: {shown(exc, keep_newlines=True)}", file=sys.stderr)
        return 2
    finally:
        sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
