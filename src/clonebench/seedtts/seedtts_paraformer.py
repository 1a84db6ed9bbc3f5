"""Seed-TTS-eval's Chinese WER (``seed_wer_zh``): FunASR's ``paraformer-zh`` (SeACo-Paraformer large), the
transcript converted to Simplified Chinese with zhconv, scored with the benchmark's text rule
(``seedtts/text.py``: characters joined by spaces, so the WER is a character error rate).

The benchmark (BytedanceSpeech/seed-tts-eval ``run_wer.py``, ``lang=zh``), one file at a time:
``AutoModel(model="paraformer-zh")`` (FunASR resolves the name to ModelScope's
``iic/speech_seaco_paraformer_large_asr_nat-zh-cn-16k-common-vocab8404-pytorch`` at its ``master`` revision, no VAD
or punctuation model), ``model.generate(input=path, batch_size_s=300)``, ``res[0]["text"]``,
``zhconv.convert(text, "zh-cn")``, then ``process_one``. FunASR reads and resamples the file itself.

Here the model folder is FunASR's own layout (``config.yaml``, ``model.pt``, ``tokens.json``, ``am.mvn``, ...)
given as ``evaluation.seedtts.paraformer_local_path`` and handed to the same ``AutoModel`` by path with the same
``generate`` call. The benchmark pins no revision, and the sha256 of the ModelScope ``model.pt`` could not be
looked up from this machine: ``model.pt`` must match the sha256 given in the options (``sha256``), and the scorer
refuses to load without one; no hub download is made by this scorer. Differences in the call, none of which
changes the numbers: ``disable_update=True`` (no version check over the network), ``disable_pbar=True``, and
``ncpu`` = torch's current thread count (FunASR would otherwise set torch's global thread count to 4).

FunASR is installed ``--no-deps`` with the few packages its Paraformer inference imports (kaldiio,
torch-complex, jamo, jaconv): its declared dependencies (modelscope, oss2, umap-learn, tensorboardX, ...) are for
downloading and training.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from clonebench.core.errors import DependencyError
from clonebench.evaluate.protocols.assets import AssetError
from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord
from clonebench.seedtts.text import rule_protocol, score_items, with_text_rule, zh_simplified

MODEL_NAME = "paraformer-zh"
MODEL_ID = "iic/speech_seaco_paraformer_large_asr_nat-zh-cn-16k-common-vocab8404-pytorch"
MODEL_REVISION: str | None = None  # upstream downloads ModelScope's moving 'master': no revision pinned
MODEL_PT_SHA256: str | None = None  # not known here: give evaluation.seedtts.paraformer_sha256
WEIGHTS = "model.pt"
FOLDER_FILES = ("config.yaml", WEIGHTS, "tokens.json", "tokens.txt", "am.mvn", "seg_dict", "configuration.json")
FUNASR_VERSION = "1.4.16"
INSTALL = (f"pip install --no-deps 'funasr=={FUNASR_VERSION}' kaldiio torch-complex jamo jaconv && "
           "pip install 'zhconv==1.4.3' 'zhon==2.1.1'")


class SeedTTSParaformerScorer(Scorer):
    name = "seedtts_paraformer"
    metrics = ("seed_wer_zh",)
    needs_reference = False
    needs_text = True
    uses_gpu = True
    sample_rate = 16_000

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._source: str | None = None
        self._files: dict[str, str] = {}

    @classmethod
    def preflight(cls, options: dict[str, Any]) -> None:
        missing = [name for name in ("funasr", "kaldiio", "torch_complex", "zhconv", "zhon", "jiwer")
                   if importlib.util.find_spec(name) is None]
        if missing:
            raise DependencyError(f"seed_wer_zh (Seed-TTS-eval's Paraformer-zh WER) needs {missing}: {INSTALL}")
        if not options.get("local_path") or not (options.get("sha256") or MODEL_PT_SHA256):
            raise AssetError("seed_wer_zh: give evaluation.seedtts.paraformer_local_path (a FunASR paraformer-zh folder) "
                             "and evaluation.seedtts.paraformer_sha256 (the sha256 of its model.pt)")

    def packages(self) -> tuple[str, ...]:
        return ("funasr", "torch", "torchaudio", "zhconv", "zhon", "jiwer", "numpy", "kaldiio")

    def lock(self) -> str:
        sha = self.options.get("sha256") or MODEL_PT_SHA256
        if not sha:
            raise AssetError(f"{MODEL_ID} {WEIGHTS}: no sha256 lock is recorded for these weights; give the sha256 of "
                             "the file you verified as evaluation.seedtts.paraformer_sha256 (the scorer never loads "
                             "unlocked weights)")
        return str(sha).lower()

    @classmethod
    def source_files(cls) -> list[Path]:
        return with_text_rule(super().source_files())

    def version(self) -> str:
        return (f"Seed-TTS-eval zh WER: FunASR AutoModel({MODEL_NAME} = {MODEL_ID}) {WEIGHTS} sha256:{self.lock()[:16]},"
                " generate(input=path, batch_size_s=300), zhconv zh-cn, seedtts_process_one_v1 text rule; v1")

    def protocol(self) -> dict[str, Any]:
        return {"asr": MODEL_ID, "revision": MODEL_REVISION, "weights_sha256": self.lock(), "language": "zh",
                "decoding": "paraformer generate(batch_size_s=300)", "convert": "zhconv zh-cn", **rule_protocol()}

    def assets(self) -> list[dict]:
        files = dict(self._files) or {WEIGHTS: self.lock()}
        return [{"id": MODEL_ID, "revision": MODEL_REVISION, "files": files, "source": self._source}]

    def _folder(self) -> Path:
        local = self.options.get("local_path")
        if not local:
            raise AssetError(f"{MODEL_NAME} ({MODEL_ID}): give evaluation.seedtts.paraformer_local_path, a FunASR "
                             "model folder (config.yaml, model.pt, tokens.json, am.mvn); this scorer downloads nothing "
                             "(the benchmark's hub revision is the moving 'master')")
        folder = Path(local)
        missing = [name for name in ("config.yaml", WEIGHTS, "am.mvn") if not (folder / name).is_file()]
        if missing:
            raise AssetError(f"{MODEL_NAME}: {folder} lacks {missing} (a FunASR model folder)")
        self._source = f"local:{folder}"
        return folder

    def load(self) -> None:
        import torch

        folder = self._folder()
        lock = self.lock()
        files = {name: self.hash_cache.sha256(folder / name) for name in FOLDER_FILES if (folder / name).is_file()}
        if files[WEIGHTS] != lock:
            raise AssetError(f"{MODEL_NAME}: {folder / WEIGHTS} has sha256 {files[WEIGHTS]}, the lock says {lock}; "
                             "replace the folder or fix evaluation.seedtts.paraformer_sha256")
        self._files = files
        from funasr import AutoModel

        self._model = AutoModel(model=str(folder), device=self.device, disable_update=True, disable_pbar=True,
                                ncpu=torch.get_num_threads(), log_level="ERROR")

    def transcribe(self, path: Path) -> str:
        """The benchmark's Chinese transcription of one file (Simplified)."""
        result = self._model.generate(input=str(path), batch_size_s=300)
        return zh_simplified(result[0]["text"])

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        return score_items(items, "zh", self.transcribe, ScoreRecord)
