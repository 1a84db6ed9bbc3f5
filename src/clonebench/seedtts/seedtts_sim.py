"""seed_sim: Seed-TTS-eval's SIM ("SIM-o"), generated clip vs the pair's PROMPT clip.

The benchmark's protocol (BytedanceSpeech/seed-tts-eval ``cal_sim.sh``): UniSpeech's WavLM-Large + ECAPA-TDNN
speaker verifier fine-tuned on VoxCeleb (``wavlm_large_finetune.pth``), each clip read with librosa at its own
rate, resampled to 16 kHz by torchaudio, embedded alone, and the cosine of the two embeddings. The model is
clonebench's own implementation (``seedtts/verifier.py``); ``bench/seedtts_sim_parity.py`` compares it
with the benchmark's code on the same weights.

The checkpoint is published on Google Drive only (Seed-TTS-eval's README), with no checksum: the user downloads
it, gives its path as ``evaluation.seedtts.verifier_checkpoint`` and its sha256 as ``evaluation.seedtts.sha256``
(``sha256sum wavlm_large_finetune.pth``), which the scorer verifies before reading the file and records in its
version, protocol and assets. :data:`CHECKPOINT_SHA256` is where a verified sha256 of the published file is
recorded once known; until then the user's lock is required. The file is loaded as upstream loads it
(``load_state_dict(strict=False)``), then checked: a checkpoint that lacks a weight the forward pass uses is
refused, naming it; keys the model does not have are listed, not loaded (``seedtts.verifier.build_verifier``).
"""

from __future__ import annotations

from pathlib import Path

from clonebench.evaluate.protocols.assets import AssetError
from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord

CHECKPOINT = "wavlm_large_finetune.pth"
CHECKPOINT_URL = "https://drive.google.com/file/d/1-aE1NfzpRCLxA4GUxX9ITI3F9LlbtEGP/view"
# no source states the published file's sha256 (searched: Seed-TTS-eval, UniSpeech, their issues); give
# evaluation.seedtts.sha256
CHECKPOINT_SHA256: str | None = None
UPSTREAM = "BytedanceSpeech/seed-tts-eval cal_sim.sh (UniSpeech verification_pair_list_v2.py, model wavlm_large)"
PROTOCOL = ("librosa.load(sr=None) channel 0, torchaudio Resample to 16 kHz, one clip per forward pass, WavLM "
            "layer-weighted hidden states + InstanceNorm + ECAPA-TDNN, cosine(generated, prompt)")


class SeedTTSSimScorer(Scorer):
    name = "seedtts_sim"
    metrics = ("seed_sim",)
    needs_reference = False
    needs_text = False
    needs_prompt = True
    uses_gpu = True
    sample_rate = 16_000
    # WavLM's conv stack needs 400 samples for one frame; ECAPA's dilated convs are zero-padded (any length)
    min_duration_s = 0.025

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._sha256: str | None = None
        self._embeddings: dict[str, object] = {}

    def lock(self) -> str:
        sha = self.options.get("sha256") or CHECKPOINT_SHA256
        if not sha:
            raise AssetError(f"{CHECKPOINT}: no sha256 lock is recorded for Seed-TTS-eval's verifier checkpoint; "
                             "give the sha256 of the file you downloaded as evaluation.seedtts.sha256 "
                             "(sha256sum wavlm_large_finetune.pth); the scorer never loads unlocked weights")
        return str(sha).lower()

    def checkpoint(self) -> Path:
        path = self.options.get("verifier_checkpoint")
        if not path:
            raise AssetError(f"seed_sim needs Seed-TTS-eval's verifier checkpoint {CHECKPOINT} (published only on "
                             f"Google Drive: {CHECKPOINT_URL}); download it and give its path as "
                             "evaluation.seedtts.verifier_checkpoint")
        path = Path(path)
        if not path.is_file():
            raise AssetError(f"evaluation.seedtts.verifier_checkpoint={path}: no such file (download {CHECKPOINT} "
                             f"from {CHECKPOINT_URL})")
        return path

    @classmethod
    def source_files(cls) -> list[Path]:
        """Its own files and those that compute its numbers: an edit to any changes the fingerprint."""
        here = Path(__file__).parent
        return [*super().source_files(),
                *(here / name for name in ("verifier.py", "verifier_wavlm.py", "verifier_ecapa.py"))]

    def version(self) -> str:
        return f"seed-tts-eval SIM: {CHECKPOINT} sha256:{self.lock()[:16]}, {PROTOCOL}; clonebench implementation v1"

    def protocol(self) -> dict:
        return {"model": f"UniSpeech ECAPA_TDNN_SMALL wavlm_large {CHECKPOINT}", "weights_sha256": self.lock(),
                "reference": "prompt", "score": PROTOCOL, "upstream": UPSTREAM}

    def packages(self) -> tuple[str, ...]:
        return ("torch", "torchaudio", "librosa", "numpy", "soundfile")

    def assets(self) -> list[dict]:
        return [{"id": f"seed-tts-eval:{CHECKPOINT}", "revision": None, "files": {CHECKPOINT: self.lock()},
                 "source": f"local:{self.options.get('verifier_checkpoint')}", "url": CHECKPOINT_URL}]

    def load(self) -> None:
        from clonebench.seedtts.verifier import load_verifier

        path, expected = self.checkpoint(), self.lock()
        digest = self.hash_cache.sha256(path)
        if digest != expected:
            raise AssetError(f"{path}: sha256 {digest}, the lock (evaluation.seedtts.sha256) says {expected}; "
                             f"replace the file with the verified {CHECKPOINT} or correct the lock")
        self._sha256 = digest
        self._model = load_verifier(path, trusted=True).to(self.device)
        self._embeddings = {}

    def embed(self, path: Path):
        from clonebench.seedtts.verifier import embed, read_clip

        return embed(self._model, read_clip(path))

    def similarity(self, generated: Path, prompt: Path) -> float:
        """seed_sim of two clips, each embedded afresh (no memo)."""
        from clonebench.seedtts.verifier import similarity

        return similarity(self.embed(generated), self.embed(prompt))

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        from clonebench.seedtts.verifier import similarity

        # by content: a clip (a prompt shared by many pairs) is embedded once for the scorer's life; each
        # embedding is computed alone, so reusing it changes no bit
        local: dict[str, object] = {}

        def embedding(path: Path, sha256: str):
            memo, key = (self._embeddings, sha256) if sha256 else (local, str(path))
            if key not in memo:
                memo[key] = self.embed(path)
            return memo[key]

        records = []
        for item in items:
            if item.prompt_path is None or not Path(item.prompt_path).is_file():
                records.append(ScoreRecord(item.sample_id, error=f"seed_sim: the pair's prompt clip is missing "
                                                                 f"({item.prompt_path})"))
                continue
            generated = embedding(Path(item.generated_path), item.generated_sha256)
            prompt = embedding(Path(item.prompt_path), item.prompt_sha256)
            records.append(ScoreRecord(item.sample_id, {"seed_sim": similarity(generated, prompt)}))
        return records

    def release(self) -> None:
        self._embeddings = {}
        super().release()
