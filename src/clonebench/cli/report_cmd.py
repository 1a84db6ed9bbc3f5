"""A paper table of evaluated runs and suite runs: rows = runs, the paper's columns with n and 95 % CI; or an HTML
report to read and listen to.

    clonebench report RUN|SUITE_DIR [...] --format md|latex|csv|html [--with-paper] [--paper-version v3|v2]
                      [--allow-partial] [--output FILE|DIR] [--copy-audio] [--listening DIR ...]

Columns follow the paper version: v3 (default) SIM MOS WER MCD, VCTK/Chinese/Cross-lingual SIM, then RTF SVA Emo
DNSMOS; v2 SIM WER MOS MCD RTF SVA Emo DNSMOS. --with-paper adds that version's published rows
(reproduction/paper/: v3's 22 models, v2's 18 LibriTTS rows), marked as published values. A suite run
(run_vc.py --config-name suite/...) is one row filled from its tasks (report.paper_v3); its HTML page adds the
suite's task section. Partial runs are refused unless --allow-partial, which labels them. A timing run
(adversary.measure=ttfb) among the runs gives the RTF of the quality run of the same pairs and server.
--format html writes a folder (``--output DIR``, required) holding index.html, the plots and, with --copy-audio,
the audio. --listening DIR adds the human scores of a listening test (clonebench listening-results) beside the
predicted MOS.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clonebench.core.atomic import atomic_write_text
from clonebench.core.errors import ClonebenchError
from clonebench.core.redact import shown
from clonebench.report.paper import COLUMNS, csv_text, latex, markdown, paper_rows, run_rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", type=Path,
                        help="evaluated run directories, and timing runs (adversary.measure=ttfb) for the RTF column")
    parser.add_argument("--format", choices=("md", "latex", "csv", "html"), default="md")
    parser.add_argument("--with-paper", action="store_true", help="add the paper's published rows")
    parser.add_argument("--paper-version", choices=("v3", "v2"), default="v3",
                        help="the paper's table layout and published rows: v3 (arXiv v3, default) or v2")
    parser.add_argument("--allow-partial", action="store_true", help="include partial runs, labelled (partial)")
    parser.add_argument("--label", action="append", help="row label per run, in order (default: run_name)")
    parser.add_argument("--output", type=Path, help="write here instead of standard output (html: the folder)")
    parser.add_argument("--copy-audio", action="store_true",
                        help="html: copy the audio into the folder (default: link it by relative path)")
    parser.add_argument("--listening", action="append", type=Path, default=[],
                        help="a listening-test folder with results.json: its human scores as columns")


def run(args: argparse.Namespace) -> int:
    from clonebench.report.html_data import load_view

    if args.format == "html" and not args.output:
        raise ClonebenchError("--format html writes a folder: give it with --output DIR")
    from clonebench.report.paper_v3 import COLUMNS_V3, paper_rows_v3, suite_row
    from clonebench.report.rtf import attach_rtf, is_timing_run, load_timing
    from clonebench.suite.record import is_suite_dir
    from clonebench.suite.results import load_suite_results

    suites = [load_suite_results(path) for path in args.runs if is_suite_dir(path)]
    runs = [path for path in args.runs if not is_suite_dir(path)]
    timings = [load_timing(path) for path in runs if is_timing_run(path)]
    views = [load_view(path) for path in runs if not is_timing_run(path)]
    for view in views:  # recorded files missing, or old absolute paths read inside the run folder given
        for note in view.notes:
            print(f"note: {shown(note)}", file=sys.stderr)
    if not views and not suites:
        raise ClonebenchError("only timing runs given: add the evaluated quality run(s) of the same pairs and server")
    partial_suites = [str(s.suite_dir) for s in suites if s.status != "complete"]
    if partial_suites and not args.allow_partial:
        raise ClonebenchError(f"suite run(s) {partial_suites} are not complete: finish them, or pass --allow-partial "
                              "to include them labelled (partial)")
    tables = [v.table for v in views]
    partial = [t for t in tables if t.status != "complete"]
    if partial and not args.allow_partial:
        raise ClonebenchError(f"partial run(s) {[str(t.run_dir) for t in partial]}: finish them, or pass "
                              "--allow-partial to include them labelled (partial)")
    for table, label in zip(tables, args.label or []):
        table.label = label
    columns = COLUMNS_V3 if args.paper_version == "v3" else COLUMNS
    rows = run_rows(tables, columns)
    attach_rtf(rows, [v.generation for v in views], timings)
    if args.listening:
        from clonebench.listening.paper_columns import attach_listening

        rows += attach_listening(rows, [v.samples for v in views], args.listening)
    rows += [suite_row(s) for s in suites]
    if args.with_paper:
        rows += paper_rows_v3() if args.paper_version == "v3" else paper_rows()
    if args.format == "html":
        from clonebench.report.html_page import paper_table, static_text, write_html_report
        from clonebench.suite.html import suite_section, write_suite_page

        if views:
            page = write_html_report(views, rows, args.output, copy_audio=args.copy_audio, columns=columns,
                                     sections=[suite_section(s) for s in suites])
        else:  # suite runs only: no per-sample table
            page = write_suite_page(paper_table(rows, columns), list(suites), args.output, static_text("report.css"))
        print(f"HTML report: {page}")
        if args.copy_audio:  # content-addressed copies: one file per distinct clip
            print(f"audio: {len(list((Path(args.output) / 'audio').glob('*.wav')))} clip(s) copied into "
                  f"{Path(args.output) / 'audio'}")
        return 0
    text = {"md": markdown, "latex": latex, "csv": csv_text}[args.format](rows, columns)
    if args.output:
        atomic_write_text(args.output, text)
    else:
        print(text, end="")
    return 0
