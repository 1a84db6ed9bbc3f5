"""TINY STAND-IN MODELS FOR TESTS, NOT UTMOS AND NOT THE IEMOCAP CLASSIFIER.

The real UTMOS22-strong and SpeechBrain IEMOCAP weights are not available offline, so the tests exercise the
scorers' plumbing (sources, sha256 locks, hub-style loading, audio preparation, records, columns, report) with
model folders written here, shaped like the real ones (a SpeechMOS-style ``hubconf.py`` + weights; a SpeechBrain
folder with ``custom_interface.py``, ``hyperparams.yaml``, ``label_encoder.txt``, ``wav2vec2.ckpt``,
``model.ckpt``). Their numbers mean nothing.
"""

from __future__ import annotations

from pathlib import Path

UTMOS_HUBCONF = '''"""TEST STAND-IN, NOT UTMOS: SpeechMOS's hub entry point and call signature, scoring seconds of audio."""
dependencies = ["torch"]

import torch


class TinyStandIn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.offset = torch.nn.Parameter(torch.zeros(1), requires_grad=False)

    def forward(self, wave, sr):
        if wave.dim() != 2 or wave.shape[0] != 1 or sr != 24000:
            raise ValueError(f"expected a (1, T) batch at 24 kHz, got {tuple(wave.shape)} at {sr}")
        return wave.shape[1] / sr + self.offset


def utmos22_strong(progress=True, pretrained=True):
    if pretrained:
        raise RuntimeError("the scorer must load and verify the weights itself")
    return TinyStandIn().eval()
'''

EMOTION_INTERFACE = '''"""TEST STAND-IN, NOT THE IEMOCAP MODEL: labels a clip by its loudness (one linear layer on log10 RMS)."""
import torch
from speechbrain.inference.interfaces import Pretrained


class CustomEncoderWav2vec2Classifier(Pretrained):
    MODULES_NEEDED = ["classifier", "encoder"]

    def classify_batch(self, wavs, wav_lens=None):
        wavs = wavs.to(self.device).float()
        loudness = torch.log10(wavs.pow(2).mean(dim=1, keepdim=True).sqrt() + 1e-8)
        out_prob = torch.softmax(self.mods.classifier(self.mods.encoder(loudness)), dim=-1)
        score, index = out_prob.max(dim=-1)
        return out_prob, score, index, self.hparams.label_encoder.decode_torch(index)
'''

EMOTION_HPARAMS = '''# TEST STAND-IN, NOT THE IEMOCAP MODEL
pretrained_path: unset
wav2vec2_hub: unset
encoder: !new:torch.nn.Linear
    in_features: 1
    out_features: 1
classifier: !new:torch.nn.Linear
    in_features: 1
    out_features: 4
modules:
    encoder: !ref <encoder>
    classifier: !ref <classifier>
label_encoder: !new:speechbrain.dataio.encoder.CategoricalEncoder
pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        encoder: !ref <encoder>
        classifier: !ref <classifier>
        label_encoder: !ref <label_encoder>
    paths:
        encoder: !ref <pretrained_path>/wav2vec2.ckpt
        classifier: !ref <pretrained_path>/model.ckpt
        label_encoder: !ref <pretrained_path>/label_encoder.txt
'''


def write_tiny_utmos(folder: Path) -> str:
    """A SpeechMOS-shaped folder; returns the sha256 of its weights (offset 2.0: mos = seconds + 2)."""
    import torch

    from clonebench.core.hashing import sha256_file
    from clonebench.evaluate.scorers.utmos import WEIGHTS

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hubconf.py").write_text(UTMOS_HUBCONF)
    torch.save({"offset": torch.tensor([2.0])}, folder / WEIGHTS)
    return sha256_file(folder / WEIGHTS)


def write_tiny_emotion(folder: Path, base: Path) -> dict[str, str]:
    """A SpeechBrain-shaped emotion folder (loud clips 'ang', quiet ones 'sad') and a stand-in base folder;
    returns the sha256 lock of the five files."""
    import torch
    from speechbrain.dataio.encoder import CategoricalEncoder

    from clonebench.core.hashing import sha256_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "custom_interface.py").write_text(EMOTION_INTERFACE)
    (folder / "hyperparams.yaml").write_text(EMOTION_HPARAMS)
    encoder = CategoricalEncoder()
    encoder.update_from_iterable(["neu", "ang", "hap", "sad"])
    encoder.save(folder / "label_encoder.txt")
    torch.save({"weight": torch.tensor([[1.0]]), "bias": torch.tensor([0.0])}, folder / "wav2vec2.ckpt")
    # logits: neu 0, ang 10x + 20, hap 0, sad -10x - 20 with x = log10 RMS: 'ang' above RMS 0.01, 'sad' below
    torch.save({"weight": torch.tensor([[0.0], [10.0], [0.0], [-10.0]]), "bias": torch.tensor([0.0, 20.0, 0.0, -20.0])},
               folder / "model.ckpt")
    base.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "preprocessor_config.json"):
        (base / name).write_text('{"note": "test stand-in for facebook/wav2vec2-base"}')
    return {name: sha256_file(folder / name) for name in
            ("custom_interface.py", "hyperparams.yaml", "label_encoder.txt", "wav2vec2.ckpt", "model.ckpt")}


def write_tiny_openai_whisper(path: Path) -> Path:
    """A RANDOMLY INITIALISED openai-whisper checkpoint in openai-whisper's own format (dims + state dict): tiny
    (one 64-wide layer each side) but with the real vocabulary, mel and context sizes, so ``whisper.load_model`` and
    ``transcribe`` run their real code. Its text is unsure (average log-probability near -10), so
    every window triggers the temperature fallback and openai-whisper keeps the last temperature's sample: the
    hypotheses come from the seeded RNGs."""
    import torch
    from whisper.model import ModelDimensions, Whisper

    dims = ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=64, n_audio_head=2, n_audio_layer=1,
                           n_vocab=51865, n_text_ctx=64, n_text_state=64, n_text_head=2, n_text_layer=1)
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(0)
        model = Whisper(dims)
        # openai-whisper leaves the decoder's positional embedding as torch.empty (the real checkpoint fills it):
        # uninitialised memory would make the weights, and now and then NaN logits, differ from run to run
        model.decoder.positional_embedding.normal_(0.0, 0.01)
        # small (tied) output rows: nearly uniform logits, so every window falls back (average log-probability
        # near -10) and the last temperature's sample, i.e. the seeded RNG, decides the text; the special tokens'
        # rows zeroed so that text, not <|endoftext|> or timestamps, comes out
        model.decoder.token_embedding.weight.mul_(0.05)
        model.decoder.token_embedding.weight[50257:] = 0.0
    torch.save({"dims": dims.__dict__, "model_state_dict": model.state_dict()}, path)
    return path
