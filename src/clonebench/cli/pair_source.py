"""The command-line options that choose the pairs of ``clonebench prompts`` and ``clonebench score``.

The one seam for new sources: ``add_arguments`` declares the options and ``pair_sets`` turns them into pair
sets (``clonebench.external.pair_sets``). Two sources:

- a manifest: ``--manifest M [--root DIR] [--task NAME] [--variant V] [--speaker ID]``, one pair set;
- an rvcbench suite: ``--suite S [--tasks T ...] --data-root DIR`` (rvcbench's options), one pair set per
  generated task; ``suite`` then gives the loaded suite (its protocol, derived tasks and record).
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.data.manifest import Selection
from clonebench.external.pair_sets import PairSet, from_manifest, from_suite

MANIFEST_ONLY = ("root", "task", "speaker")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("pairs (a manifest, or an rvcbench suite)")
    group.add_argument("--manifest", type=Path, help="JSON or CSV pair manifest")
    group.add_argument("--root", type=Path, help="dataset root the manifest's audio paths resolve under "
                                                 "(default: the manifest's folder); every file is hash-verified")
    group.add_argument("--task", help="task name in the output ids <task>__<pair_id> (default: the rows' "
                                      "dataset_name in lower case)")
    group.add_argument("--variant", default="speaker",
                       help="manifest_variant to select ('all' for every row; default %(default)s)")
    group.add_argument("--speaker", help="select one speaker id")
    group.add_argument("--suite", help="an rvcbench suite (onboarding-v1, core-v1, full-v1) or the folder of a "
                                       "suite.json, instead of --manifest")
    group.add_argument("--tasks", nargs="+", action="extend",
                       help="with --suite: the tasks to use (their anchors and derived sources are added)")
    group.add_argument("--data-root", type=Path, help="with --suite: the local copy of the suite's Hugging Face "
                                                      "dataset (<hf_config_name>/<file name>); nothing is downloaded")


def suite(args: argparse.Namespace):
    """The suite the options name (with its task selection), or None for a manifest."""
    from clonebench.suite.definition import load_suite

    if args.suite is None:
        return None
    return load_suite(args.suite, args.tasks)


def _check(args: argparse.Namespace) -> None:
    if args.suite is not None:
        given = ["--manifest"] if args.manifest is not None else []
        given += [f"--{name}" for name in MANIFEST_ONLY if getattr(args, name) is not None]
        given += ["--variant"] if args.variant != "speaker" else []
        if given:
            raise ClonebenchError("--suite takes its pairs from the suite's frozen selections: drop "
                                  f"{', '.join(given)} (or drop --suite to use a manifest)")
        if args.data_root is None:
            raise ClonebenchError(f"--suite {args.suite} needs --data-root DIR: a local copy of the suite's Hugging "
                                  "Face dataset, laid out as the repository (<hf_config_name>/<file name>); nothing "
                                  "is downloaded")
        return
    if args.tasks or args.data_root is not None:
        raise ClonebenchError("--tasks and --data-root select pairs of a suite: add --suite NAME (or, for a manifest, "
                              "use --task and --root)")
    if args.manifest is None:
        raise ClonebenchError("give the pairs with --manifest PATH (a JSON or CSV pair manifest) or --suite NAME "
                              "--data-root DIR (an rvcbench suite)")


def pair_sets(args: argparse.Namespace) -> list[PairSet]:
    """The pair sets the options name, one per task, in order."""
    _check(args)
    if args.suite is not None:
        from clonebench.suite.inputs import SuiteInputError

        try:
            return from_suite(suite(args), args.suite, args.data_root)
        except SuiteInputError as exc:  # the same report, in this command's option names
            raise ClonebenchError(_option_names(str(exc))) from None
    selection = Selection(None if args.variant == "all" else args.variant, args.speaker)
    return [from_manifest(args.manifest, args.root, task=args.task, selection=selection)]


def _option_names(message: str) -> str:
    """A suite input report written for run_vc.py (``dataset.root_path``, ``suite.tasks=[a,b]``) in the options
    of ``clonebench prompts/score`` (``--data-root``, ``--tasks a b``)."""
    message = re.sub(r"suite\.tasks=\[([^\]]*)\]", lambda m: "--tasks " + " ".join(m.group(1).split(",")), message)
    return message.replace("dataset.root_path=", "--data-root ").replace("dataset.root_path", "--data-root")


def source_arguments(args: argparse.Namespace) -> str:
    """The pair options as given, shell-quoted, to repeat in a later command (e.g. the score command)."""
    if args.suite is not None:
        given = [("--suite", args.suite), ("--tasks", " ".join(shlex.quote(t) for t in args.tasks) if args.tasks
                                           else None), ("--data-root", args.data_root)]
        return " ".join(f"{flag} {value if flag == '--tasks' else shlex.quote(str(value))}"
                        for flag, value in given if value is not None)
    given = [("--manifest", args.manifest), ("--root", args.root), ("--task", args.task),
             ("--variant", None if args.variant == "speaker" else args.variant), ("--speaker", args.speaker)]
    return " ".join(f"{flag} {shlex.quote(str(value))}" for flag, value in given if value is not None)
