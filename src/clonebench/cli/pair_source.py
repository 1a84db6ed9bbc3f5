"""The command-line options that choose the pairs of ``clonebench prompts`` and ``clonebench score``.

The one seam for new sources: ``add_arguments`` declares the options and ``pair_sets`` turns them into pair
sets (``clonebench.data.pair_sets``). Today: a manifest (``--manifest M [--root DIR] [--task NAME] [--variant V]
[--speaker ID]``). An rvcbench suite (``--suite S [--tasks ...] [--data-root DIR]``) adds its options here and
returns one pair set per task; nothing else in the commands changes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from clonebench.data.manifest import Selection
from clonebench.data.pair_sets import PairSet, from_manifest
from clonebench.errors import ClonebenchError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("pairs")
    group.add_argument("--manifest", type=Path, help="JSON or CSV pair manifest")
    group.add_argument("--root", type=Path, help="dataset root the manifest's audio paths resolve under "
                                                 "(default: the manifest's folder); every file is hash-verified")
    group.add_argument("--task", help="task name in the output ids <task>__<pair_id> (default: the rows' "
                                      "dataset_name in lower case)")
    group.add_argument("--variant", default="speaker",
                       help="manifest_variant to select ('all' for every row; default %(default)s)")
    group.add_argument("--speaker", help="select one speaker id")


def pair_sets(args: argparse.Namespace) -> list[PairSet]:
    """The pair sets the options name, one per task, in order."""
    if args.manifest is None:
        raise ClonebenchError("give the pairs with --manifest PATH (a JSON or CSV pair manifest)")
    selection = Selection(None if args.variant == "all" else args.variant, args.speaker)
    return [from_manifest(args.manifest, args.root, task=args.task, selection=selection)]
