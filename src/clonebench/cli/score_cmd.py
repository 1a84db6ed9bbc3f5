"""Score WAVs made outside clonebench (a folder of <id>.wav per model, as listed by ``clonebench prompts``) with
the evaluate phase of a run: same scorers, metric cache and outputs; the run records the folder's file hashes.

    clonebench score --manifest M [--root DIR] --generated DIR [--generated DIR2 ...] --output OUT
                     [--model NAME ...] [--resume] [--check-only] [--device cpu|cuda:0]
                     [--config-name vc|demo|...] [Hydra overrides, e.g. evaluation.metrics=[sim,wer]]
    clonebench score --suite S [--tasks T ...] --data-root DIR --generated DIR [...] --output OUT [...]

Every problem (missing, wrong id, ambiguous, unreadable, empty, non-finite, leaked target, extra files) is
printed per id before anything is scored; an id with a problem is a failed sample and the run is partial.
With several folders each model is written to OUT/<model>/ and, when they are comparable, compared in
OUT/comparison.{md,tex,csv,json} (``clonebench compare``; for a suite, OUT/comparison/<task>/ per task). With
``--suite`` each model's output is a suite run scored with each task's own protocol (``external.score_suite``: suite
results and rvcbench's submission.json; ``evaluation.metrics`` is then the suite's). Exit status: 0 complete,
1 partial, 2 refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from clonebench.cli import pair_source
from clonebench.core.redact import shown


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pair_source.add_arguments(parser)
    parser.add_argument("--generated", type=Path, action="append", required=True,
                        help="folder of <id>.wav (or <task>/<pair_id>.wav) files; repeat for several models")
    parser.add_argument("--model", action="append", help="model name per --generated folder (default: its name)")
    parser.add_argument("--output", type=Path, required=True,
                        help="results folder (with several models: one folder per model inside it)")
    parser.add_argument("--resume", action="store_true",
                        help="continue an output folder scored with the same request; unchanged audio is a cache hit")
    parser.add_argument("--check-only", action="store_true", help="check the folders, print every problem, score nothing")
    parser.add_argument("--device", help="scoring device (sets +vc.evaluation.device)")
    parser.add_argument("--config-name", default="vc", help="config whose evaluation settings are used (default "
                                                            "%(default)s; demo: the offline wheel models)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides of the scoring settings, e.g. "
                                                     "evaluation.metrics=[sim,sva,wer,mcd]")


def _header(cfg, source: str, pair_sets) -> dict:
    from clonebench.core.provenance import environment_provenance
    from clonebench.runs.pipeline import config_container

    config = config_container(cfg)
    origin = pair_sets[0].origin
    if origin.get("kind") == "suite":
        config["dataset"] = {"name": origin["suite"]["suite"], "use_hf_dataset": False, "manifest_filename": None,
                             "root_path": origin["data_root"], "suite": origin["suite_source"]}
    else:
        config["dataset"] = {"name": pair_sets[0].task, "use_hf_dataset": False,
                             "manifest_filename": origin.get("manifest"), "root_path": origin.get("root")}
    return {"phase": "external+evaluate", "config_source": source, "config": config,
            "provenance": environment_provenance()}


def run(args: argparse.Namespace) -> int:
    from clonebench.config.compose import scoring_settings
    from clonebench.external.score_folders import plan, score_systems, tally_parts

    settings, cfg, source = scoring_settings(args.config_name, args.overrides, args.device)
    sets = pair_source.pair_sets(args)
    suite = pair_source.suite(args)
    if suite is not None:
        from clonebench.external.score_suite import check_protocols

        check_protocols(settings, suite)
    systems = plan(sets, args.generated, args.model, args.output, settings.evaluation.max_clip_seconds)
    for system in systems:
        for check in system.checks:
            print(f"{system.model} ({system.folder}), task {check.task}: " + ", ".join(tally_parts(check)))
            for line in check.lines():
                print("  " + shown(line))
    if args.check_only:
        return 0 if all(c.counts()["usable"] == c.counts()["ids"] for s in systems for c in s.checks) else 1
    scoring_config = {"config_name": args.config_name, "overrides": list(args.overrides), "device": args.device,
                      "evaluation": config_container_evaluation(cfg)}
    header = _header(cfg, source, sets)
    if suite is None:
        summaries = score_systems(settings, header, sets, systems, args.resume, scoring_config)
    else:
        from clonebench.external.score_suite import score_suite_systems

        summaries = score_suite_systems(settings, header, suite, sets[0].origin["suite_source"], sets, systems,
                                        args.resume, scoring_config)
    for system, summary in zip(systems, summaries):
        for task, entry in summary["tasks"].items():
            print(task_line(system, task, entry))
        if suite is not None:
            print(f"{system.model}: suite {suite.name} {summary['suite_status']}: "
                  f"{system.out_dir / 'suite_summary.md'}, {system.out_dir / 'submission.json'}")
    if len(systems) > 1:
        for task in summaries[0]["tasks"] if suite is not None else [None]:
            _compare(systems, args.output, task, summaries)
    return 0 if all(s["status"] == "complete" for s in summaries) else 1


def task_line(system, task: str, entry: dict) -> str:
    """``model / task: status: sim 0.5000, wer 0.1000 -> run dir``, built from its non-empty parts: a task without
    metric values (not scored, every sample failed) prints no dangling separator."""
    means = ", ".join(f"{m} {v:.4f}" for m, v in (entry.get("means") or {}).items() if v is not None)
    head = ": ".join(part for part in (f"{system.model} / {task}", entry.get("status") or "", means) if part)
    run_dir = entry.get("run_dir")
    return f"{head} -> {system.out_dir / run_dir}" if run_dir else head


def config_container_evaluation(cfg) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg.evaluation, resolve=True)


def _compare(systems, output: Path, task: str | None, summaries: list[dict]) -> None:
    """The systems' comparison (``clonebench compare``): of the one task, or of one suite task into
    OUT/comparison/<task>/ when every system scored it."""
    from clonebench.core.errors import ClonebenchError
    from clonebench.report.compare_render import write_comparison

    if task is None:
        specs, where = [f"{s.model}={s.out_dir}" for s in systems], output
    else:
        if any(summary["tasks"][task]["status"] == "not_scored" for summary in summaries):
            print(f"no comparison of task {task}: not scored for every model")
            return
        specs = [f"{s.model}={s.out_dir / summary['tasks'][task]['run_dir']}" for s, summary in zip(systems, summaries)]
        where = output / "comparison" / task
    try:
        paths = write_comparison(specs, where, formats=("md", "latex", "csv"))
        print("comparison: " + ", ".join(str(p) for p in paths))
    except ClonebenchError as exc:
        print(f"no comparison{f' of task {task}' if task else ''} written: {shown(exc)}")
