"""A suite run's record on disk: ``suite_manifest.json`` (rewritten atomically as tasks change state), the
``tasks/<task>/`` folders, each task run's header, and the resume chain of suite runs."""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path

from clonebench.core.atomic import atomic_write_json
from clonebench.core.errors import ResumeError
from clonebench.generate.journal import MANIFEST_NAME, read_record
from clonebench.suite.definition import Suite

SUITE_MANIFEST = "suite_manifest.json"
TASKS_DIR = "tasks"
SCHEMA = "clonebench.suite_run/v1"


class SuiteRecord:
    """``suite_manifest.json``: rewritten atomically whenever a task's state changes. Used as a context manager:
    leaving the block on an exception while the run is still ``running`` records it ``failed`` (``interrupted``
    for Ctrl-C) with the error, once, for suite runs and ``clonebench score --suite`` alike."""

    def __init__(self, suite_dir: Path, header: dict, suite: Suite, source: str, origin: Path | None, model: str):
        self.path = suite_dir / SUITE_MANIFEST
        self.payload = {"schema": SCHEMA, **header, "suite_source": source, "suite": suite.record(),
                        "suite_model": model,
                        "resume_origin": str(origin) if origin else None, "status": "running",
                        "created_at": time.time(), "tasks": {t.name: {"derived_from": t.derived_from} if t.derived
                                                            else {} for t in suite.tasks}, "errors": []}
        self.write()

    def task(self, name: str, **fields) -> None:
        self.payload["tasks"][name].update(fields)
        self.write()

    def finish(self, status: str, error: str | None = None) -> None:
        self.payload.update(status=status, finished_at=time.time())
        if error:
            self.payload["errors"].append(error)
        self.write()

    def write(self) -> None:
        self.payload["updated_at"] = time.time()
        atomic_write_json(self.path, self.payload)

    def __enter__(self) -> SuiteRecord:
        return self

    def __exit__(self, kind, exc, traceback) -> bool:
        if exc is not None and self.payload["status"] == "running":
            self.finish("interrupted" if isinstance(exc, KeyboardInterrupt) else "failed",
                        f"{type(exc).__name__}: {exc}")
        return False  # the exception goes on


def suite_chain(start: Path) -> list[Path]:
    """``start`` and the suite runs it resumed from, newest first."""
    chain: list[Path] = []
    current: Path | None = Path(os.path.realpath(start))
    while current is not None and current not in chain:
        manifest = current / SUITE_MANIFEST
        if not manifest.is_file():
            raise ResumeError(f"vc.resume_from={start}: {current} is not a suite run (no {SUITE_MANIFEST}); give the "
                              "suite directory results/<run_name>/<stamp>-<id>")
        chain.append(current)
        origin = read_record(manifest, ResumeError, "resume from another suite run of the chain").get("resume_origin")
        if origin is not None and not isinstance(origin, str):
            raise ResumeError(f"vc.resume_from={start}: {manifest} resume_origin is a {type(origin).__name__}, not a "
                              "suite directory path; resume from another suite run of the chain")
        current = Path(os.path.realpath(origin)) if origin else None
    return chain


def task_origins(resume_from: Path | None, names: list[str]) -> dict[str, Path]:
    """Per task, its run in the newest suite of the chain that started it (a task run always writes its manifest
    before anything else, so a task directory without one sent nothing and is skipped)."""
    if resume_from is None:
        return {}
    origins: dict[str, Path] = {}
    for suite_dir in suite_chain(resume_from):
        for name in names:
            candidate = suite_dir / TASKS_DIR / name
            if name not in origins and (candidate / MANIFEST_NAME).is_file():
                origins[name] = candidate
    return origins


def task_header(header: dict, suite: Suite, name: str, origin: Path | None) -> dict:
    """A task run's header: the suite record (HF revision included) and the task's own resume origin."""
    config = copy.deepcopy(header.get("config", {}))
    config.setdefault("vc", {})["resume_from"] = str(origin) if origin else None
    task = suite.task(name)
    return {**header, "run_name": f"{header.get('run_name')}/{name}", "config": config,
            "suite": {**suite.record(), "task": name, "task_definition": task.raw}}


def is_suite_dir(path: Path) -> bool:
    return (Path(path) / SUITE_MANIFEST).is_file()
