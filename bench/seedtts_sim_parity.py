"""seed_sim parity: clonebench's Seed-TTS-eval verifier vs the benchmark's own code, on the same weights.

Builds the upstream model from a Seed-TTS-eval checkout (imported from that directory at run time, never copied):
UniSpeech's ``ECAPA_TDNN_SMALL(feat_type="wavlm_large")`` from
``thirdparty/UniSpeech/downstreams/speaker_verification/models/ecapa_tdnn.py``, loaded as its ``init_model`` does
(``torch.load(checkpoint)["model"]``, ``strict=False``), and scores pairs with its ``verification()`` (librosa
read, torchaudio resampling, one clip per pass, ``F.cosine_similarity``). The same file goes through
clonebench's ``SeedTTSSimScorer``. Prints each pair's two scores and the max abs difference.

Upstream's front end is ``torch.hub.load("s3prl/s3prl", "wavlm_large")``, which needs GitHub and the 1.2 GB
WavLM-Large download. Here ``torch.hub.load`` is replaced, for that one call, by an s3prl-equivalent upstream
built from the checkout's own ``thirdparty/UniSpeech/WavLM/WavLM.py`` (the code s3prl's ``wavlm`` upstream
carries): the same forward (``layer_norm`` of the waveform when ``cfg.normalize``, padding mask,
``extract_features(mask=False)``) and the same hooks as s3prl's ``UpstreamBase`` (each encoder layer's input,
then the encoder's output) returned as ``hidden_states``. Its WavLM config is the tiny one of the random
checkpoint (tests/tiny_models.py ``write_tiny_seedtts_verifier`` with upstream's fixed head widths), and all its
tensors are then overwritten by the checkpoint (the script checks that upstream's ``strict=False`` load leaves
nothing missing). ``fire`` (imported by ``verification.py`` for its CLI only) is stubbed when not installed.
Not run in CI.

    git -C <mirror> archive HEAD | tar -x -C /tmp/seedtts-eval
    python bench/seedtts_sim_parity.py --seed-tts-eval /tmp/seedtts-eval [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CARDS = Path("/usr/share/pocketsphinx/test/data/cards")
UPSTREAM_HEAD = {"channels": 512, "cat_out": 1536, "se_dim": 128, "attention": 128, "emb_dim": 256}
TINY_WAVLM_CFG = {  # the WavLM of tests/tiny_models.py write_tiny_seedtts_verifier, in WavLMConfig's terms
    "extractor_mode": "layer_norm", "encoder_layers": 2, "encoder_embed_dim": 64, "encoder_ffn_embed_dim": 128,
    "encoder_attention_heads": 4, "layer_norm_first": True, "conv_bias": False, "normalize": True,
    "conv_feature_layers": "[(32,10,5)] + [(32,3,2)] * 4 + [(32,2,2)] * 2", "conv_pos": 16, "conv_pos_groups": 4,
    "relative_position_embedding": True, "num_buckets": 320, "max_distance": 800, "gru_rel_pos": True,
    "encoder_layerdrop": 0.0, "dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0,
}


def upstream_modules(checkout: Path):
    """The checkout's ``verification`` and ``models.ecapa_tdnn`` modules, and its WavLM classes."""
    import torch

    sv = checkout / "thirdparty/UniSpeech/downstreams/speaker_verification"
    wavlm_dir = checkout / "thirdparty/UniSpeech/WavLM"
    if not sv.is_dir() or not (wavlm_dir / "WavLM.py").is_file():
        raise SystemExit(f"{checkout}: not a Seed-TTS-eval checkout (no {sv} or {wavlm_dir}/WavLM.py)")
    try:
        import fire  # noqa: F401
    except ImportError:
        sys.modules["fire"] = types.ModuleType("fire")  # verification.py's CLI only
    sys.path[:0] = [str(sv), str(wavlm_dir)]
    import verification
    import WavLM as wavlm_module  # the checkout's thirdparty/UniSpeech/WavLM/WavLM.py
    from models import ecapa_tdnn

    class S3prlStyleUpstream(torch.nn.Module):
        """s3prl's wavlm UpstreamExpert + UpstreamBase hooks, around the checkout's WavLM."""

        def __init__(self, cfg: dict):
            super().__init__()
            self.cfg = wavlm_module.WavLMConfig(cfg)
            self.model = wavlm_module.WavLM(self.cfg)
            self._hidden: list = []
            for layer in self.model.encoder.layers:
                layer.register_forward_hook(lambda m, inputs, output: self._hidden.append(inputs[0].transpose(0, 1)))
            self.model.encoder.register_forward_hook(lambda m, inputs, output: self._hidden.append(output[0]))

        def forward(self, wavs):
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence

            self._hidden = []
            if self.cfg.normalize:
                wavs = [F.layer_norm(wav, wav.shape) for wav in wavs]
            lengths = torch.LongTensor([len(wav) for wav in wavs]).to(wavs[0].device)
            padding = ~torch.lt(torch.arange(max(lengths)).unsqueeze(0).to(lengths.device), lengths.unsqueeze(1))
            self.model.extract_features(pad_sequence(wavs, batch_first=True), padding_mask=padding, mask=False)
            hidden, self._hidden = self._hidden, []
            return {"hidden_states": tuple(hidden), "last_hidden_state": hidden[-1]}

    return verification, ecapa_tdnn, S3prlStyleUpstream


def upstream_model(checkout: Path, checkpoint: Path):
    import torch

    verification, ecapa_tdnn, upstream_cls = upstream_modules(checkout)
    real_hub_load = torch.hub.load
    torch.hub.load = lambda repo, name, *a, **k: upstream_cls(TINY_WAVLM_CFG)
    try:
        model = ecapa_tdnn.ECAPA_TDNN_SMALL(feat_dim=TINY_WAVLM_CFG["encoder_embed_dim"], feat_type="wavlm_large")
    finally:
        torch.hub.load = real_hub_load
    # as verification.init_model: torch.load(checkpoint)["model"], strict=False
    state = torch.load(str(checkpoint), map_location=lambda storage, loc: storage)
    result = model.load_state_dict(state["model"], strict=False)
    print(f"upstream load_state_dict(strict=False): missing {list(result.missing_keys)}, "
          f"unexpected {list(result.unexpected_keys)}")
    if result.missing_keys:
        raise SystemExit("upstream kept tensors the checkpoint lacks: the comparison would not be on the same weights")
    return verification, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed-tts-eval", type=Path, required=True, help="a Seed-TTS-eval checkout (directory)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N] (both models run there)")
    parser.add_argument("--checkpoint", type=Path, help="a checkpoint to compare on (default: the tiny random one)")
    args = parser.parse_args()

    import torch

    from clonebench.core.hashing import HashCache, sha256_file
    from clonebench.evaluate.execution.precision import policy
    from clonebench.seedtts.seedtts_sim import SeedTTSSimScorer
    from tests.tiny_models import write_tiny_seedtts_verifier

    checkpoint = args.checkpoint or write_tiny_seedtts_verifier(
        Path(tempfile.mkdtemp(prefix="seedtts-parity-")) / "wavlm_large_finetune.pth", **UPSTREAM_HEAD)
    verification, upstream = upstream_model(args.seed_tts_eval.resolve(), checkpoint)
    clips = sorted(LIBRIVOX.glob("*.wav"))[:3] + sorted(CARDS.glob("*.wav"))[:1]
    pairs = [(clips[0], clips[1]), (clips[0], clips[2]), (clips[1], clips[3]), (clips[2], clips[2])]
    ours = SeedTTSSimScorer({"verifier_checkpoint": checkpoint, "sha256": sha256_file(checkpoint)}, args.device,
                            HashCache(None))
    worst = 0.0
    with policy(args.device):  # IEEE float32 on a GPU, as clonebench scores
        ours.load()
        cuda = args.device.startswith("cuda")
        for generated, prompt in pairs:
            theirs, _ = verification.verification("wavlm_large", str(generated), str(prompt), use_gpu=cuda,
                                                  model=upstream, device=args.device if cuda else "cuda:0")
            theirs = float(theirs.reshape(-1)[0].cpu())
            mine = ours.similarity(generated, prompt)
            worst = max(worst, abs(theirs - mine))
            print(f"{generated.name} | {prompt.name}: upstream {theirs:.9f} clonebench {mine:.9f} "
                  f"diff {abs(theirs - mine):.3g}")
    print(f"device {args.device}, torch {torch.__version__}: max abs difference {worst:.3g}")


if __name__ == "__main__":
    main()
