"""compare, compare-check, report, plot, doctor and repeat on runs made against the stand-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from clonebench.cli.main import main as cli
from clonebench.runs.pipeline import run
from clonebench.standin import running_standin
from tests.conftest import REPO, compose

COMMON = ["evaluation.whisper.backend=faster_whisper", "evaluation.whisper.model=tiny.en",
          "evaluation.whisper.allow_hub=false", "evaluation.ecapa.allow_hub=false", "adversary.max_samples=4",
          "adversary.retry_initial_delay=0.01", "evaluation.metrics=[sim,sva,wer,mcd]"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, demo_dataset):
    tmp = tmp_path_factory.mktemp("reports")
    out = {}
    with running_standin(max_lifetime=900) as server:
        for name, extra in (("a", ["+seed=42"]), ("a2", ["+seed=42"]), ("b", ["+seed=7"]), ("partial", ["+seed=42"])):
            if name == "partial":
                server.faults.add([{"kind": "status", "code": 400}])
            cfg = compose("demo", [f"paths.results_dir={tmp / 'results'}", f"run_name=run_{name}",
                                   f"dataset.manifest_filename={demo_dataset / 'metadata.json'}",
                                   f"dataset.root_path={demo_dataset}", f"adversary.endpoint_url={server.url}/v1/tts",
                                   "adversary.reference_check=false", *COMMON, *extra])
            run(cfg, tmp / "results" / name, "test")
            out[name] = tmp / "results" / name
        out["url"] = server.url
        yield out


def test_compare_two_runs_writes_paired_deltas(runs, tmp_path, capsys):
    output = tmp_path / "cmp.json"
    assert cli(["compare", "--current", str(runs["b"]), "--historical", str(runs["a"]), "--output", str(output)]) == 0
    result = json.loads(output.read_text())
    assert set(result["metrics"]) == {"mcd", "wer", "sim"} and result["checks"]["inputs"]["pair_ids"] == 4
    assert result["checks"]["inputs"]["audio_hashes"] == 8 and result["checks"]["protocols"]["wer"] == "same protocol"
    assert "95% CI (speaker bootstrap)" in capsys.readouterr().out
    assert cli(["compare", "--current", str(runs["a2"]), "--historical", str(runs["a"]), "--output", str(output)]) == 0
    same = json.loads(output.read_text())["metrics"]
    assert same["sim"]["paired_mean_delta"] == 0.0 and same["sim"]["delta_ci95"] == [0.0, 0.0]  # seeded: identical


def test_compare_with_the_libritts16_baseline_refuses_other_pairs(runs, capsys):
    assert cli(["compare", str(runs["a"])]) == 2
    assert "different pairs" in capsys.readouterr().err


def test_compare_script_is_the_same_command(runs, tmp_path):
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "compare_reproduction_subset.py"), "--current",
                             str(runs["b"]), "--historical", str(runs["a"])], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "paired" not in result.stderr and "mcd" in result.stdout


def test_compare_check(runs, capsys):
    assert cli(["compare-check", str(runs["a"]), str(runs["a2"])]) == 0
    assert "comparable" in capsys.readouterr().out
    assert cli(["compare-check", str(runs["a"]), str(runs["b"])]) == 1
    assert "seed policy: per_sample_seed(run_seed+source_index) seed 42 vs" in capsys.readouterr().out
    assert cli(["compare-check", str(runs["a"]), str(runs["partial"])]) == 1
    out = capsys.readouterr().out
    assert "evaluation is partial" in out and "generation is partial" in out


def test_report_formats(runs, capsys):
    assert cli(["report", str(runs["a"]), str(runs["b"]), "--format", "md", "--with-paper"]) == 0
    md = capsys.readouterr().out
    assert md.count(" (published) |") == 22 and "| run_a |" in md and "**" in md  # paper v3 by default
    assert "| Fish Audio S2 † (published) |" in md and "Cross-lingual SIM↑" in md
    assert cli(["report", str(runs["a"]), "--format", "md", "--with-paper", "--paper-version", "v2"]) == 0
    v2 = capsys.readouterr().out
    assert v2.count(" (published) |") == 18 and "Cross-lingual" not in v2 and "Fish Audio S2" not in v2
    assert cli(["report", str(runs["a"]), str(runs["b"]), "--format", "latex"]) == 0
    tex = capsys.readouterr().out
    assert r"\toprule" in tex and r"\bottomrule" in tex and r"\textbf{" in tex and "run\\_a" in tex
    assert cli(["report", str(runs["a"]), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("model,source,sim,sim_ci_low")
    assert cli(["report", str(runs["a"]), str(runs["partial"])]) == 2
    assert "--allow-partial" in capsys.readouterr().err
    assert cli(["report", str(runs["a"]), str(runs["partial"]), "--allow-partial"]) == 0
    assert "run_partial (partial)" in capsys.readouterr().out


def test_plot_writes_pngs(runs, tmp_path):
    assert cli(["plot", str(runs["a"]), str(runs["b"]), "--output", str(tmp_path)]) == 0
    for name in ("sim_per_speaker.png", "wer_per_utterance.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_repeat_finds_seeded_outputs_identical(runs, capsys):
    assert cli(["repeat", str(runs["a"]), "--count", "2", "--repeats", "2", "--endpoint", f"{runs['url']}/v1/tts"]) == 0
    out = capsys.readouterr().out
    assert "2/2 samples byte-identical on every repeat" in out and "request same" in out


def test_doctor(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    ok = subprocess.run([sys.executable, "-m", "clonebench.cli.main", "doctor", "--eval"], capture_output=True,
                        text=True, env=env, timeout=300)
    assert ok.returncode == 0 and "asset speechbrain/spkrec-ecapa-voxceleb: 5 files sha256-valid" in ok.stdout
    assert "asset silero-vad/6.2.3: 1 files sha256-valid (scorer failures; configs demo, vc)" in ok.stdout  # fail's VAD
    assert "scorer mcd: packages present, no model file" in ok.stdout and "scorer stoi:" in ok.stdout
    broken = subprocess.run([sys.executable, "-m", "clonebench.cli.main", "doctor"], capture_output=True, text=True,
                            env={**env, "PATH": str(tmp_path)}, timeout=300)
    assert broken.returncode == 1 and "fix: apt-get install espeak-ng" in broken.stdout


def test_cross_implementation_runs_are_not_comparable_on_seed_policy(runs, tmp_path, demo_dataset, capsys):
    """The same pairs served by s2.cpp (no seed) and by Fish (seeded): compare-check refuses, report says so."""
    with running_standin(protocol="s2cpp", max_lifetime=600) as server:
        cfg = compose("demo", [f"paths.results_dir={tmp_path / 'results'}", "run_name=run_s2cpp",
                               f"dataset.manifest_filename={demo_dataset / 'metadata.json'}",
                               f"dataset.root_path={demo_dataset}", "adversary=s2cpp_http",
                               f"adversary.endpoint_url={server.url}/generate", *COMMON])
        run(cfg, tmp_path / "results" / "s2cpp", "test")
    assert cli(["compare-check", str(runs["a"]), str(tmp_path / "results" / "s2cpp")]) == 1
    out = capsys.readouterr().out
    assert "seed policy 'not_supported'" in out and "seed policy: per_sample_seed(run_seed+source_index) seed 42 vs " \
        "not_supported seed 42" in out
    assert cli(["report", str(runs["a"]), str(tmp_path / "results" / "s2cpp")]) == 0
    assert "run_s2cpp (no seed)" in capsys.readouterr().out
