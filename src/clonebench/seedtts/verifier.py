"""Seed-TTS-eval's SIM verifier: WavLM-Large + ECAPA-TDNN (UniSpeech ``wavlm_large_finetune.pth``), own code.

The benchmark (BytedanceSpeech/seed-tts-eval ``cal_sim.sh`` -> UniSpeech ``verification_pair_list_v2.py`` ->
``verification.py``) builds ``ECAPA_TDNN_SMALL(feat_dim=1024, feat_type="wavlm_large")``, whose front end is
s3prl's ``wavlm_large`` (``torch.hub``), loads ``torch.load(checkpoint)["model"]`` with ``strict=False``, and
for each pair reads both clips with ``librosa.load(path, sr=None, mono=False)`` (float32, native rate, first
channel), resamples each with ``torchaudio.transforms.Resample(sr, 16000)`` (on the CPU), embeds each clip alone
(a batch of one) and reports ``F.cosine_similarity`` of the two embeddings. The model's forward pass: the
waveform layer-normalised, WavLM's ``layers + 1`` hidden states (every layer's input, then the final
LayerNorm's output), their sum weighted by ``softmax(feature_weight)``, transposed to (B, C, T), plus 1e-6,
``InstanceNorm1d`` (no affine, no running statistics), then the ECAPA-TDNN head (``verifier_ecapa.py``).

This module reproduces that, and loads as the benchmark does: ``load_state_dict(state, strict=False)``. What
``strict=False`` does not check is then verified (:func:`build_verifier`): every tensor the forward pass reads
(every WavLM tensor except ``mask_emb``, ``feature_weight``, the head's weights and BatchNorm statistics) must
have been loaded from the file, or the checkpoint is refused, naming the keys, the file and the fix; upstream's
``strict=False`` would silently keep the s3prl hub's WavLM weights (or random ones) for any tensor the file
lacks. Keys of the file that the model does not have (a layout of another day) are ignored, as upstream ignores
them, and listed: a warning, and ``model.load_report["unexpected_keys"]``. Keys upstream's model holds but never
reads in a forward pass: ``feature_extract.model.mask_emb`` (training-time masking) and the BatchNorm
``num_batches_tracked`` counters; they may be absent (:data:`UNUSED_KEYS`).

The layout the published file was made in: UniSpeech's ``ECAPA_TDNN_SMALL(feat_dim=1024,
feat_type="wavlm_large")`` (microsoft/UniSpeech ``downstreams/speaker_verification/models/ecapa_tdnn.py``,
unchanged since 40ac183, 2021-12-20, the day the fine-tuned models were added) around s3prl's ``wavlm_large`` hub
upstream of its day (s3prl ``s3prl/upstream/wavlm`` at c5610b60, 2021-11-30): ``feature_extract.model.*`` is
that WavLM (``nn.utils.weight_norm``'s ``weight_g``/``weight_v`` for the positional conv, still so at s3prl's
head), the head's modules at the top level. No public source states the file's sha256 or lists its keys.
"""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from clonebench.core.errors import ClonebenchError
from clonebench.seedtts.verifier_ecapa import EcapaHead, HeadShape, head_shape
from clonebench.seedtts.verifier_wavlm import WavLM, WavLMShape, shape_from_state

RATE = 16_000
WAVLM_PREFIX = "feature_extract.model."
UNUSED_KEYS = frozenset({WAVLM_PREFIX + "mask_emb"})  # accepted if present, never read
SHOWN = 8  # keys named per list in an error
log = logging.getLogger(__name__)


class SeedTTSCheckpointError(ClonebenchError):
    pass


class _FeatureExtract(nn.Module):
    """Stands where s3prl's UpstreamExpert stood (``feature_extract``), holding WavLM as ``model``."""

    def __init__(self, shape: WavLMShape):
        super().__init__()
        self.model = WavLM(shape)


class SeedTTSVerifier(nn.Module):
    def __init__(self, wavlm: WavLMShape, head: HeadShape):
        super().__init__()
        if head.feat_dim != wavlm.embed_dim:
            raise ValueError(f"the head reads {head.feat_dim} features, WavLM gives {wavlm.embed_dim}")
        self.feature_extract = _FeatureExtract(wavlm)
        self.feature_weight = nn.Parameter(torch.zeros(wavlm.layers + 1))
        self.instance_norm = nn.InstanceNorm1d(head.feat_dim)
        EcapaHead.build(self, head)
        self.wavlm_shape, self.head_shape = wavlm, head
        self.load_report: dict = {}  # build_verifier: how many tensors were loaded, the file's keys not loaded

    def features(self, wav: torch.Tensor) -> torch.Tensor:
        """(1, T) 16 kHz -> (1, C, frames): the normalised layer-weighted WavLM features."""
        states = torch.stack(self.feature_extract.model.hidden_states(wav[0]), dim=0)
        weights = F.softmax(self.feature_weight, dim=-1).view(-1, 1, 1, 1)
        x = (weights * states).sum(dim=0).transpose(1, 2) + 1e-6
        return self.instance_norm(x)

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        """(1, T) 16 kHz waveform -> (1, emb_dim) embedding; one clip per call, as upstream embeds."""
        if wav.dim() != 2 or wav.shape[0] != 1:
            raise ValueError(f"expected one clip as a (1, T) tensor, got {tuple(wav.shape)}")
        return EcapaHead.run(self, self.features(wav))


def _optional(key: str) -> bool:
    return key in UNUSED_KEYS or key.endswith(".num_batches_tracked")


def _named(keys: set[str]) -> str:
    shown = sorted(keys)[:SHOWN]
    more = f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else ""
    return ", ".join(shown) + more


def read_checkpoint(path: Path, trusted: bool = False) -> dict[str, torch.Tensor]:
    """The ``model`` state dict of a UniSpeech speaker-verification checkpoint. Tensors only
    (``weights_only``); a file that needs full unpickling is read only when ``trusted`` (its sha256 matched
    the lock the user recorded)."""
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if not trusted:
            raise SeedTTSCheckpointError(f"{path}: not a tensors-only checkpoint ({exc}); it is read with full "
                                         "unpickling only after its sha256 matched the recorded lock") from exc
        obj = torch.load(str(path), map_location="cpu", weights_only=False)
    if not isinstance(obj, dict) or not isinstance(obj.get("model"), dict):
        raise SeedTTSCheckpointError(f"{path}: not a UniSpeech speaker-verification checkpoint (a dict whose "
                                     "'model' entry is the state dict, as torch.load(checkpoint)['model'] reads "
                                     "it); give the wavlm_large_finetune.pth file Seed-TTS-eval's README links")
    return obj["model"]


def build_verifier(state: dict[str, torch.Tensor], source: str = "<state dict>") -> SeedTTSVerifier:
    """A verifier loaded from ``state`` as the benchmark loads it (``strict=False``), refused
    (SeedTTSCheckpointError) unless every tensor its forward pass reads was loaded (:data:`UNUSED_KEYS` and
    BatchNorm counters may be absent) and every shape fits; keys the model does not have are listed
    (``model.load_report``, a warning), not loaded."""
    fix = ("give the unmodified wavlm_large_finetune.pth (Seed-TTS-eval's README link) as "
           "evaluation.seedtts.verifier_checkpoint, or a file saved as {'model': state_dict} with the "
           "UniSpeech ECAPA_TDNN_SMALL(feat_type='wavlm_large') parameter names")
    wavlm_state = {k[len(WAVLM_PREFIX):]: v for k, v in state.items() if k.startswith(WAVLM_PREFIX)}
    try:
        try:
            wavlm = shape_from_state(wavlm_state)
        except KeyError as exc:
            raise KeyError(WAVLM_PREFIX + str(exc.args[0])) from None
        model = SeedTTSVerifier(wavlm, head_shape(state))
    except KeyError as exc:
        raise SeedTTSCheckpointError(f"{source}: missing key {exc.args[0]} (the model's shape is read from it); "
                                     f"{fix}") from None
    except ValueError as exc:
        raise SeedTTSCheckpointError(f"{source}: {exc}; {fix}") from None
    try:
        result = model.load_state_dict(state, strict=False)  # as the benchmark's verification.py loads it
    except RuntimeError as exc:  # a shape mismatch
        raise SeedTTSCheckpointError(f"{source}: {exc}; {fix}") from None
    missing = {k for k in result.missing_keys if not _optional(k)}
    if missing:
        raise SeedTTSCheckpointError(
            f"{source}: {len(missing)} weight(s) the verifier's forward pass uses are not in the file: "
            f"{_named(missing)} (upstream's strict=False load would leave them as the s3prl hub's or random "
            f"weights); {fix}")
    unexpected = sorted(k for k in result.unexpected_keys if k not in UNUSED_KEYS)
    if unexpected:
        log.warning("%s: %d key(s) the Seed-TTS-eval verifier does not have were ignored, as the benchmark's "
                    "strict=False load ignores them: %s", source, len(unexpected), _named(set(unexpected)))
    model.load_report = {"loaded": len(state) - len(result.unexpected_keys), "unexpected_keys": unexpected}
    return model.eval()


def load_verifier(path: Path, trusted: bool = False) -> SeedTTSVerifier:
    return build_verifier(read_checkpoint(path, trusted), str(path))


def read_clip(path: Path) -> torch.Tensor:
    """(1, T) float32 at 16 kHz on the CPU, as upstream's ``verification``: ``librosa.load(sr=None,
    mono=False)``, the first channel, ``torchaudio.transforms.Resample(sr, 16000)``. (Upstream indexes its first
    clip's channels as ``wav[:, 0]``, which is wrong for a (channels, T) array; both clips take channel 0 here.)"""
    import librosa
    from torchaudio.transforms import Resample

    wav, rate = librosa.load(str(path), sr=None, mono=False)
    if wav.ndim == 2:
        wav = wav[0, :]
    tensor = torch.from_numpy(wav).unsqueeze(0).float()
    return Resample(orig_freq=rate, new_freq=RATE)(tensor)


@torch.no_grad()
def embed(model: SeedTTSVerifier, wav: torch.Tensor) -> torch.Tensor:
    device = next(model.parameters()).device
    return model(wav.to(device))


def similarity(first: torch.Tensor, second: torch.Tensor) -> float:
    """Upstream's score: ``F.cosine_similarity`` of two (1, emb_dim) embeddings (eps 1e-8)."""
    return float(F.cosine_similarity(first, second).reshape(-1)[0].cpu())
