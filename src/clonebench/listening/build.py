"""``clonebench listening-test``: a test folder from runs.

    DIR/site/index.html, DIR/site/clips/<id>.wav   what raters get (open the page, or put site/ on a static host)
    DIR/key.json                                    what the experimenter keeps: which id is which system, the
                                                    design, the audio gains, the screening rules, the salt
    DIR/ratings/                                    where the raters' files go

The folder is written under a temporary name and renamed into place: a test is created whole or not at all, and
an existing test is never overwritten (raters may already hold its page)."""

from __future__ import annotations

import os
import secrets
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from clonebench.core.atomic import atomic_write_json
from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_file
from clonebench.listening.audio import write_clips
from clonebench.listening.design import ANCHOR, ANCHOR_LABEL, NATURAL, NATURAL_LABEL, SCREENING, Design, build_design
from clonebench.listening.page import write_page
from clonebench.listening.sources import System, load_systems

KEY = "key.json"
SITE = "site"
KEY_SCHEMA = "clonebench.listening.key/v1"


def _systems(design: Design, systems: list[System]) -> list[dict]:
    sampled = [p.pair_id for p in design.items]
    out = [{"code": f"S{k + 1}", "label": s.label, "role": "run", "run_name": s.run_name,
            "run_dir": str(s.run_dir.resolve()), "generation_run_dir": str(s.generation_dir.resolve()),
            "clips_sha256": {p: s.clips[p].sha256 for p in sampled}} for k, s in enumerate(systems)]
    used = {c.system for c in design.clips.values()}
    if NATURAL in used:
        out.append({"code": NATURAL, "label": NATURAL_LABEL, "role": "natural"})
    if ANCHOR in used:
        out.append({"code": ANCHOR, "label": ANCHOR_LABEL, "role": "anchor"})
    return out


def _key(design: Design, systems: list[System], test_id: str, salt: str, secret: str, title: str,
         audio: dict, page_sha256: str) -> dict:
    clips = {cid: {"role": c.role, "system": c.system, "item": c.item, "source": str(c.source.path),
                   "source_sha256": c.source.sha256, "transform": c.transform, **audio["clips"][cid]}
             for cid, c in design.clips.items()}
    return {"schema": KEY_SCHEMA, "test_id": test_id, "kind": design.kind, "title": title,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seed": design.seed, "salt": salt,
            "id_secret": secret, "page_sha256": page_sha256, "systems": _systems(design, systems),
            "sampling": {"method": "speakers in a seeded order, pairs shuffled per speaker, one pair per speaker "
                                   "in turn (numpy default_rng(seed))", "eligible_pairs": design.eligible,
                         "items": [{"pair_id": p.pair_id, "speaker_id": p.speaker_id, "prompt_sha256": p.prompt.sha256,
                                    "target_sha256": p.target.sha256} for p in design.items],
                         "per_speaker": design.speakers, "training_pair": design.training_item.pair_id},
            "audio": audio["policy"], "screening": {**SCREENING, "checks_per_type": design.checks_wanted},
            "notes": design.notes, "clips": clips, "trials": [asdict(t) for t in design.trials]}


def build_test(run_dirs: list[Path], kind: str, n_items: int, out_dir: Path, seed: int = 42,
               title: str | None = None, labels: list[str] | None = None, checks: int = 2,
               pairs_per_item: int | None = None) -> dict:
    """Write the test folder; return its key."""
    out_dir = Path(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ClonebenchError(f"--output {out_dir} exists and is not empty; give a new folder (a test is never "
                              "rewritten: raters may already hold its page)")
    if pairs_per_item is not None and kind != "arena":
        raise ClonebenchError(f"--pairs-per-item is for arena tests; a {kind} test compares what its kind does")
    if checks < 0:
        raise ClonebenchError(f"--checks {checks}: give 0 or more attention checks of each type")
    systems, pairs = load_systems(run_dirs, labels)
    reserved = [s.label for s in systems if s.label in (NATURAL_LABEL, ANCHOR_LABEL)]
    if reserved:
        raise ClonebenchError(f"system label(s) {reserved} are reserved for the natural recordings and the anchor; "
                              "give another --label")
    secret, salt, test_id = secrets.token_hex(32), secrets.token_hex(16), f"lt-{secrets.token_hex(6)}"
    design = build_design(kind, systems, pairs, n_items, seed, secret, checks, pairs_per_item)
    title = title or {"mos": "Listening test: speech quality", "smos": "Listening test: voice similarity",
                      "cmos": "Listening test: comparing recordings", "mushra": "Listening test (MUSHRA)",
                      "arena": "Listening test: which recording is better?"}[kind]
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = out_dir.parent / f".{out_dir.name}.partial-{secrets.token_hex(4)}"
    try:
        (staging / SITE / "clips").mkdir(parents=True)
        (staging / "ratings").mkdir()
        sources = {cid: (c.source.path, c.source.sha256, c.transform) for cid, c in design.clips.items()}
        audio = write_clips(sources, staging / SITE / "clips")
        page = write_page(design, test_id, salt, title, staging / SITE)
        key = _key(design, systems, test_id, salt, secret, title, audio, sha256_file(page))
        atomic_write_json(staging / KEY, key)
        if out_dir.exists():
            out_dir.rmdir()  # empty (checked above)
        os.rename(staging, out_dir)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return key
