"""``clonebench SUBCOMMAND ...``: subcommands are registered lazily as 'module:function' pairs."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from pathlib import PurePath

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
    "listening-test": ("clonebench.cli.listening_test_cmd", "a MOS/SMOS/CMOS/MUSHRA/arena listening-test page"),
    "listening-results": ("clonebench.cli.listening_results_cmd", "scores, CIs and agreement of a listening test"),
    "listening-serve": ("clonebench.cli.listening_serve_cmd", "serve a listening test and collect its ratings (SQLite)"),
    "prompts": ("clonebench.cli.prompts_cmd", "export references and texts for a model that is not a server"),
    "score": ("clonebench.cli.score_cmd", "score folders of WAVs made outside clonebench (one per model)"),
    "suite": ("clonebench.cli.suite_cmd", "summary and submission.json of a suite run, derived from its task runs"),
    "seedtts": ("clonebench.cli.seedtts_cmd", "Seed-TTS-eval WER (%) and SIM per test set, with CIs and coverage"),
}


def literal(text: str | None) -> str | None:
    """A help string as argparse shows it verbatim: argparse %-formats every help string (for ``%(default)s``), so
    a bare '%' (``WER (%)``) would crash ``--help``. (Descriptions are formatted only when they name ``%(prog)``.)"""
    return None if text is None else text.replace("%", "%%")


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    parser = argparse.ArgumentParser(prog="clonebench", description="voice-cloning evaluation harness")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        # the module docstrings hold usage lines and examples laid out by hand: keep their line breaks. argparse
        # %-formats every subcommand's help string: a literal '%' in ours is escaped here, once for all
        module.add_arguments(sub.add_parser(name, help=literal(help_text), description=module.__doc__,
                                            formatter_class=argparse.RawDescriptionHelpFormatter))
        modules[name] = module
    return parser, modules


NOT_A_PATH = (errno.ENAMETOOLONG, errno.ELOOP)


def bounded(text, limit: int = 200) -> str:
    """A user-given string (a path, a name) as an error message shows it: escaped, and at most ``limit`` characters."""
    out = shown(os.fspath(text) if isinstance(text, PurePath) else str(text))
    return out if len(out) <= limit else f"{out[:limit - 3]}... ({len(str(text))} characters)"


def check_path_arguments(args: argparse.Namespace) -> None:
    """Every path given on the command line can be probed: a string that cannot be a path (too long, a NUL byte, a
    symlink loop, below a folder that cannot be searched) is a clear error naming it, never a traceback later. A path
    that does not exist (yet) is left to the command."""
    for dest, value in vars(args).items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if not isinstance(item, PurePath):
                continue
            try:
                os.stat(item)
            except (FileNotFoundError, NotADirectoryError):
                pass
            except OSError as exc:
                raise ClonebenchError(f"{dest} {bounded(item)}: {exc.strerror or type(exc).__name__}") from None
            except ValueError:
                raise ClonebenchError(f"{dest} {bounded(item)}: not a path (it holds a NUL byte)") from None


def main(argv: list[str] | None = None) -> int:
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    stdout, sys.stdout = sys.stdout, TerminalWriter(sys.stdout)  # manifest and journal text is untrusted
    try:
        check_path_arguments(args)
        return modules[args.command].run(args)
    except ClonebenchError as exc:
        print(f"clonebench {args.command}: error: {shown(exc, keep_newlines=True)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader (head, less) stopped reading: stop quietly, as command-line tools do
        try:  # what is still buffered goes nowhere, so that Python's flush at exit does not raise again
            os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141  # 128 + SIGPIPE, what a shell reports for a command its reader closed
    except OSError as exc:  # a string probed as a path that cannot be one: the path named, no traceback
        if exc.errno not in NOT_A_PATH:
            raise
        print(f"clonebench {args.command}: error: {bounded(exc.filename or '')}: {exc.strerror}", file=sys.stderr)
        return 2
    finally:
        sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
