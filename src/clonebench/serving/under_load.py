"""Quality under load: the same seeded request's answer under load against its answer sent alone.

A request is prepared once, so every time a pair is sent the bytes are the same; a deterministic server seeded the
same way answers the same audio whatever else it is doing. A batching server (vLLM-Omni, SGLang-Omni, Triton) may
not: batched kernels, padding and scheduling can change the numbers. Per level this counts the answers whose WAV
is byte-identical to that pair's answer sent alone (the cold request, the warm-up and closed-loop level 1), and
keeps both WAVs of every pair that differs under ``under_load/`` so that the quality metrics can compare them
(``clonebench.metrics.score_under_load``: SIM to the alone answer, WER of each)."""

from __future__ import annotations

from pathlib import Path

from clonebench.core.atomic import atomic_write_bytes
from clonebench.serving.client import RequestRecord

FOLDER = "under_load"


class UnderLoad:
    def __init__(self, run_dir: Path):
        self.folder = run_dir / FOLDER
        self.alone: dict[str, str] = {}      # sample id -> sha256 of its first answer sent alone
        self.alone_audio: dict[str, bytes] = {}

    def note(self, record: RequestRecord, alone: bool, level_name: str) -> None:
        """Called with every finished request; frees its body."""
        body, record.body = record.body, None
        if not record.ok or body is None:
            return
        if alone:
            if record.sample_id not in self.alone:
                self.alone[record.sample_id] = record.audio_sha256
                self.alone_audio[record.sample_id] = body
            return
        reference = self.alone.get(record.sample_id)
        if reference is None or reference == record.audio_sha256:
            return
        alone_path = self.folder / "alone" / f"{record.sample_id}.wav"
        if not alone_path.exists():
            alone_path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(alone_path, self.alone_audio[record.sample_id])
        path = self.folder / level_name / f"{record.sample_id}-{record.audio_sha256[:12]}.wav"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, body)
        record.under_load_wav = str(path.relative_to(self.folder.parent))

    def summary(self, records: list[dict]) -> dict:
        """Over a level's successful measured requests."""
        ok = [r for r in records if r["phase"] == "measured" and r["ok"]]
        compared = [r for r in ok if r["sample_id"] in self.alone]
        differing = [r for r in compared if r["audio_sha256"] != self.alone[r["sample_id"]]]
        return {"compared": len(compared), "identical": len(compared) - len(differing),
                "not_sent_alone": len(ok) - len(compared),
                "differing": [{"sample_id": r["sample_id"], "wav": r.get("under_load_wav"),
                               "alone_wav": f"{FOLDER}/alone/{r['sample_id']}.wav"} for r in differing]}
