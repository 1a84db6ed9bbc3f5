"""The resume chain: origins come from the manifest header, else Hydra's recorded config; a run killed while
starting (no manifest, config cut short) is refused naming the run to resume from instead."""

from __future__ import annotations

import json

import pytest

from clonebench.core.errors import ResumeError
from clonebench.generate.resume import resume_chain


def _run(path, origin=None):
    path.mkdir(parents=True)
    (path / "run_manifest.json").write_text(json.dumps({"status": "interrupted", "resume_origin": origin and str(origin)}))
    return path


def test_the_chain_follows_manifest_and_hydra_origins(tmp_path):
    first = _run(tmp_path / "20260101-000000-a")
    second = _run(tmp_path / "20260101-000100-b", first)
    started = tmp_path / "20260101-000200-c"  # killed before it wrote a manifest: Hydra's config says the origin
    (started / ".hydra").mkdir(parents=True)
    (started / ".hydra" / "config.yaml").write_text(f"vc:\n  resume_from: {second}\n")
    newest = _run(tmp_path / "20260101-000300-d", started)
    assert resume_chain(newest) == [newest, started, second, first]


def test_a_run_killed_while_starting_is_refused_naming_the_run_to_resume(tmp_path):
    first = _run(tmp_path / "20260101-000000-a")
    torn = tmp_path / "20260101-000100-b"
    (torn / ".hydra").mkdir(parents=True)
    (torn / ".hydra" / "config.yaml").write_text("")  # cut short by the kill
    newest = _run(tmp_path / "20260101-000200-c", torn)
    for start in (torn, newest):
        with pytest.raises(ResumeError, match=rf"killed while starting.*probably {first}"):
            resume_chain(start)


def test_a_cycle_ends_the_chain(tmp_path):
    a = tmp_path / "a"
    b = _run(tmp_path / "b", a)
    _run(a, b)
    assert resume_chain(a) == [a, b]


def test_a_run_killed_before_it_wrote_anything_leads_back_to_the_run_to_resume(tmp_path):
    """An empty run directory (killed before Hydra wrote its config) in the chain, or given itself, names the
    newest earlier run with a manifest; with none before it, says to start a new run."""
    first = _run(tmp_path / "20260101-000000-a")
    empty = tmp_path / "20260101-000100-b"
    empty.mkdir()
    refused = _run(tmp_path / "20260101-000200-c", empty)  # a resume of the empty run, refused after recording it
    for start in (empty, refused):
        with pytest.raises(ResumeError, match=rf"probably {first}, the newest run before it"):
            resume_chain(start)
    lonely = tmp_path / "other" / "20260101-000000-a"
    lonely.mkdir(parents=True)
    with pytest.raises(ResumeError, match="none before it has one: start a new run without vc.resume_from"):
        resume_chain(_run(tmp_path / "other" / "20260101-000100-b", lonely))


def test_a_moved_origin_is_refused_as_gone(tmp_path):
    newest = _run(tmp_path / "20260101-000100-b", tmp_path / "20260101-000000-gone")
    with pytest.raises(ResumeError, match="no longer a run directory"):
        resume_chain(newest)
