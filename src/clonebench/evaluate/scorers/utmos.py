"""MOS: UTMOS22 strong learner, as SpeechMOS (tarepan/SpeechMOS) reimplements it, the paper's MOS column.

Upstream (RVCBench) calls ``torch.hub.load("tarepan/SpeechMOS", "utmos22_strong", trust_repo=True)`` without a
revision, then scores each generated WAV downmixed to mono by the channel mean and resampled to 24 kHz:
``predictor(wave[None], 24000)`` (SpeechMOS resamples to 16 kHz inside). Here the code is pinned to
``tarepan/SpeechMOS`` at ``v1.2.0`` and the weights are loaded by this scorer, never by the hub entry point,
only after their sha256 matched the lock:

- ``evaluation.utmos.local_dir``: a SpeechMOS checkout (its ``hubconf.py``) holding the weights file
  ``utmos22_strong_step7459_v1.pt`` (or ``evaluation.utmos.weights``: its path); loaded with
  ``torch.hub.load(local_dir, "utmos22_strong", source="local", pretrained=False)``;
- else, when ``allow_hub``: the code from GitHub at the pinned tag and the weights from SpeechMOS's v1.0.0
  release, into torch's hub cache (for users online).

The weights' sha256 is not recorded in this repository: it could not be computed here (no network), so the
lock is ``evaluation.utmos.sha256`` and the scorer refuses to run without it. Status: **unverified** (the real
weights were never run here; see docs/scoring.md).
"""

from __future__ import annotations

from pathlib import Path

from clonebench.evaluate.protocols.assets import AssetError
from clonebench.evaluate.protocols.audio import resample_mono_torchaudio
from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord

REPO = "tarepan/SpeechMOS"
REVISION = "v1.2.0"
ENTRY = "utmos22_strong"
WEIGHTS = "utmos22_strong_step7459_v1.pt"
WEIGHTS_URL = f"https://github.com/{REPO}/releases/download/v1.0.0/{WEIGHTS}"
WEIGHTS_SHA256: str | None = None  # not known here: give evaluation.utmos.sha256
RATE = 24_000


class UTMOSScorer(Scorer):
    name = "utmos"
    metrics = ("mos",)
    needs_reference = False
    needs_text = False
    uses_gpu = True
    sample_rate = RATE
    verified = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._source: str | None = None
        self._code_sha256: dict[str, str] = {}
        self._weights_sha256: str | None = None

    def packages(self) -> tuple[str, ...]:
        return ("torch", "torchaudio", "numpy", "soundfile")

    def lock(self) -> str:
        sha = self.options.get("sha256") or WEIGHTS_SHA256
        if not sha:
            raise AssetError(f"{REPO} {WEIGHTS}: no sha256 lock is recorded for these weights; give the sha256 of the "
                             "file you verified as evaluation.utmos.sha256 (the scorer never loads unlocked weights)")
        return str(sha).lower()

    def version(self) -> str:
        return (f"UTMOS22 strong via {REPO}@{REVISION} {ENTRY}, weights {WEIGHTS} sha256:{self.lock()[:16]}, "
                f"torchaudio resample to {RATE} Hz per channel, then channel mean (upstream RVCBench loading), one clip per call; v2 (unverified)")

    def protocol(self) -> dict:
        return {"model": f"{REPO}:{ENTRY}", "revision": REVISION, "weights_sha256": self.lock(), "sample_rate": RATE}

    def assets(self) -> list[dict]:
        return [{"id": f"{REPO}:{ENTRY}", "revision": REVISION, "files": {WEIGHTS: self.lock(), **self._code_sha256},
                 "source": self._source, "verified_scorer": False}]

    def _code_and_weights(self) -> tuple[Path, Path, str]:
        import torch

        local = self.options.get("local_dir")
        weights = self.options.get("weights")
        if local is not None:
            local = Path(local)
            if not (local / "hubconf.py").is_file():
                raise AssetError(f"evaluation.utmos.local_dir={local}: no hubconf.py (a {REPO} checkout at {REVISION})")
            weights = Path(weights) if weights else local / WEIGHTS
            if not weights.is_file():
                raise AssetError(f"{weights}: missing; put {WEIGHTS} there or give evaluation.utmos.weights")
            return local, weights, f"local:{local}"
        if not self.options.get("allow_hub", True):
            raise AssetError(f"{REPO}: no evaluation.utmos.local_dir and allow_hub is false; give a local checkout "
                             f"with {WEIGHTS}")
        self.lock()  # refuse before downloading anything when there is no lock
        try:
            torch.hub.load(f"{REPO}:{REVISION}", ENTRY, trust_repo=True, pretrained=False)  # fetches the pinned code
            code = Path(torch.hub.get_dir()) / f"{REPO.replace('/', '_')}_{REVISION}"
            cached = Path(torch.hub.get_dir()) / "checkpoints" / WEIGHTS
            if not cached.is_file():
                cached.parent.mkdir(parents=True, exist_ok=True)
                torch.hub.download_url_to_file(WEIGHTS_URL, str(cached), progress=False)
        except Exception as exc:  # offline: the assets were not given
            raise AssetError(f"{REPO}@{REVISION} or {WEIGHTS} could not be fetched ({type(exc).__name__}); give "
                             "evaluation.utmos.local_dir") from exc
        return code, Path(weights) if weights else cached, f"hub:{REPO}@{REVISION} + {WEIGHTS_URL}"

    def load(self) -> None:
        import torch

        code, weights, self._source = self._code_and_weights()
        digest = self.hash_cache.sha256(weights)
        if digest != self.lock():
            raise AssetError(f"{weights}: sha256 {digest}, the lock (evaluation.utmos.sha256) says {self.lock()}; "
                             "replace the file or correct the lock")
        self._weights_sha256 = digest
        self._code_sha256 = {str(p.relative_to(code)): self.hash_cache.sha256(p)
                             for p in sorted(code.rglob("*.py")) if ".git" not in p.parts}
        model = torch.hub.load(str(code), ENTRY, source="local", pretrained=False)
        state = torch.load(str(weights), map_location="cpu", weights_only=True)
        model.load_state_dict(state, strict=True)
        self._model = model.to(self.device).eval()

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        import torch

        records = []
        for item in items:  # one clip per call: padding a batch would change the frame average
            wave = resample_mono_torchaudio(item.generated_path, RATE).unsqueeze(0).to(self.device)
            with torch.inference_mode():
                score = self._model(wave, RATE)
            records.append(ScoreRecord(item.sample_id, {"mos": float(score.reshape(-1)[0].item())}))
        return records
