"""The server's answers as the ratings files ``listening-results`` reads: one sealed file per finished rater,
``DIR/ratings/server-<rater>.json``, exactly the format the page downloads (same schema, same integrity digest), so
``clonebench listening-results DIR DIR/ratings/*.json`` gives the same numbers for the same answers. Raters who
have not finished are counted, not exported (the results refuse an incomplete file)."""

from __future__ import annotations

import json
from pathlib import Path

from clonebench.core.atomic import atomic_write_text
from clonebench.listening.integrity import sealed
from clonebench.listening.ratings import RATINGS_SCHEMA
from clonebench.listening.server.store import Store

PREFIX = "server-"


def payload(key: dict, rater: dict, answers: dict[str, list[dict]]) -> dict:
    return {"schema": RATINGS_SCHEMA, "test_id": key["test_id"], "kind": key["kind"], "rater_id": rater["rater_id"],
            "user_agent": rater["user_agent"] or "", "started_at": rater["started_at"],
            "finished_at": rater["finished_at"], "collected_by": "clonebench listening-serve",
            "training": answers["training"], "trials": answers["test"]}


def export(key: dict, store: Store, ratings_dir: Path) -> dict:
    """Write every finished rater's file; return ``{"written": [paths], "unfinished": n}``."""
    ratings_dir = Path(ratings_dir)
    ratings_dir.mkdir(parents=True, exist_ok=True)
    written, unfinished = [], 0
    for rater in store.raters():
        if not rater["finished_at"]:
            unfinished += 1
            continue
        path = ratings_dir / f"{PREFIX}{rater['rater_id']}.json"
        sheet = sealed(key["salt"], payload(key, rater, store.answers(rater["id"])))
        atomic_write_text(path, json.dumps(sheet, indent=1, ensure_ascii=False))  # as is: the digest covers it
        written.append(str(path))
    return {"written": written, "unfinished": unfinished}
