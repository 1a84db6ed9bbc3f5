"""Folders made outside clonebench: scored through the CLI (several models, each scorer loaded once) and through the
Python API with identical numbers; resumed; compared as three systems with Holm-adjusted paired statistics; and
refused, naming what differs, when the pairs or the scorer protocol differ.

Real models on eSpeak NG speech: the stand-in in batch mode (ZipVoice-style) writes the folders; 4 pairs, one per
speaker, keep the module to a few dozen WAVs."""

from __future__ import annotations

import csv
import json

import pytest

from clonebench.cli.main import main as cli
from clonebench.core.atomic import atomic_write_json
from clonebench.stats.holm import holm

SCORING = ["--config-name", "demo", "evaluation.whisper.model=tiny.en", "evaluation.metrics=[sim,sva,wer,mcd]"]


@pytest.fixture(scope="module")
def scored(tmp_path_factory, demo_dataset):
    tmp = tmp_path_factory.mktemp("score_anywhere")
    rows = json.loads((demo_dataset / "metadata.json").read_text())["pairs"]
    manifest = tmp / "four.json"
    atomic_write_json(manifest, {"pairs": [r for r in rows if r["pair_id"].endswith("-000000")]})
    common = ["--manifest", str(manifest), "--root", str(demo_dataset)]
    assert cli(["prompts", *common, "--output", str(tmp / "prompts")]) == 0
    from clonebench.standin.batch import run_batch

    for name, seed, ignore in (("seed1", 1, False), ("seed2", 2, False), ("noclone", 1, True)):
        run_batch(tmp / "prompts" / "prompts.tsv", tmp / "outputs" / name, seed, ignore)
    cache = [f"evaluation.cache_dir={tmp / 'cache'}"]
    code = cli(["score", *common, *[a for n in ("seed1", "seed2", "noclone") for a in ("--generated", str(tmp / "outputs" / n))],
                "--output", str(tmp / "scores"), *SCORING, *cache])
    assert code == 0
    return {"tmp": tmp, "common": common, "manifest": manifest, "scores": tmp / "scores", "cache": cache}


def _rows(run_dir):
    with open(run_dir / "generation_sample_metrics.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_scored_folder_is_a_generated_run_with_the_folder_provenance(scored, capsys):
    model = scored["scores"] / "seed1"
    assert {p.name for p in model.iterdir()} >= {"score_request.json", "submission_check.json", "score.json",
                                                 "espeak_demo"}
    run_dir = model / "espeak_demo"
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "generated" and manifest["seed_policy"] == "external"
    provenance = manifest["generation_provenance"]
    assert provenance["note"] == "generated outside clonebench: no service provenance"
    assert len(provenance["files"]) == 4 and all(len(f["sha256"]) == 64 for f in provenance["files"].values())
    assert json.loads((run_dir / "metrics.json").read_text())["status"] == "complete"
    summary = json.loads((model / "score.json").read_text())
    assert summary["status"] == "complete" and set(summary["tasks"]["espeak_demo"]["means"]) == {"sim", "sva", "wer", "mcd"}
    assert cli(["status", str(run_dir)]) == 0 and "4/4 generated" in capsys.readouterr().out
    assert cli(["report", str(run_dir), "--format", "md"]) == 0 and "| seed1 |" in capsys.readouterr().out
    comparison = json.loads((scored["scores"] / "comparison.json").read_text())
    assert [s["system"] for s in comparison["systems"]] == ["seed1", "seed2", "noclone"]


def test_the_python_api_gives_the_cli_numbers(scored):
    from clonebench.metrics import Evaluator

    run_dir = scored["scores"] / "noclone" / "espeak_demo"
    rows = _rows(run_dir)
    requests = [{"generated": str(run_dir / r["generated_audio"]), "reference": r["target_audio"], "text": r["target_text"],
                 "language": r["language"]} for r in rows]
    with Evaluator(["sim", "sva", "wer", "mcd"], config_name="demo", overrides=["evaluation.whisper.model=tiny.en"]) as ev:
        many = ev.score_many(requests)
        first = requests[0]
        one = ev.score(first["generated"], reference=first["reference"], text=first["text"], language=first["language"])
    for row, got in zip(rows, many):
        assert got["errors"] == []
        assert {m: got[m] for m in ("sim", "sva", "wer", "mcd")} == {m: float(row[m]) for m in ("sim", "sva", "wer", "mcd")}
    assert one == {m: many[0][m] for m in ("sim", "sva", "wer", "mcd")}
    with pytest.raises(RuntimeError):
        ev.score_many(requests)  # closed: the models were released
    with Evaluator(["mcd"], config_name="demo") as ev, pytest.raises(ValueError, match="needs target= or reference="):
        ev.score(requests[0]["generated"], text="x")  # mcd compares with a recording


def test_resume_reuses_every_score_and_refuses_another_request(scored, capsys):
    folder = scored["tmp"] / "outputs" / "seed1"
    output = scored["tmp"] / "single"
    args = ["score", *scored["common"], "--generated", str(folder), "--output", str(output), *SCORING]
    assert cli([*args, *scored["cache"]]) == 0
    before = _rows(output / "espeak_demo")
    assert cli([*args, *scored["cache"]]) == 2 and "is not empty" in capsys.readouterr().err
    assert cli([*args, *scored["cache"], "--resume"]) == 0
    scoring = json.loads((output / "espeak_demo" / "scoring_manifest.json").read_text())
    assert scoring["cache"]["misses"] == 0 and _rows(output / "espeak_demo") == before
    assert cli([*args, "evaluation.cache_dir=null", "--resume"]) == 2
    assert "scoring.overrides" in capsys.readouterr().err
    # a batch killed before it reached a model: --resume scores that model and continues the others
    import shutil

    batch = scored["tmp"] / "batch"
    shutil.copytree(scored["scores"], batch)
    shutil.rmtree(batch / "seed2")
    folders = [a for n in ("seed1", "seed2", "noclone") for a in ("--generated", str(scored["tmp"] / "outputs" / n))]
    assert cli(["score", *scored["common"], *folders, "--output", str(batch), *SCORING, *scored["cache"],
                "--resume"]) == 0
    values = lambda rows: [{m: r[m] for m in ("pair_id", "sim", "sva", "wer", "mcd")} for r in rows]  # noqa: E731
    assert values(_rows(batch / "seed2" / "espeak_demo")) == values(_rows(scored["scores"] / "seed2" / "espeak_demo"))
    assert json.loads((batch / "comparison.json").read_text())["ranked"]


def test_three_systems_holm_adjusted(scored, tmp_path, capsys):
    s = scored["scores"]
    out = tmp_path / "cmp"
    assert cli(["compare", str(s / "seed1"), str(s / "seed2"), str(s / "noclone"), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads((out / "comparison.json").read_text())
    assert result["ranked"] and result["baseline"] == "seed1" and "only 4 speakers" in result["warnings"][0]
    for metric, entry in result["metrics"].items():
        comparisons = entry["comparisons"]
        assert [(c["a"], c["b"]) for c in comparisons] == [("seed1", "seed2"), ("seed1", "noclone")]
        assert [c["p_holm"] for c in comparisons] == pytest.approx(holm([c["p_value"] for c in comparisons]))
        for c in comparisons:
            assert sum(c["wins"].values()) == c["n"] == 4 and c["p_holm"] >= c["p_value"]
    sim = {e["system"]: e["mean"] for e in result["metrics"]["sim"]["systems"]}
    assert sim["noclone"] < min(sim["seed1"], sim["seed2"])  # the voice that ignores the reference
    assert "## SIM ↑" in printed and "p (Holm)" in printed
    assert {p.name for p in out.iterdir()} == {"comparison.md", "comparison.tex", "comparison.csv", "comparison.json",
                                               "comparison.html"}
    assert r"\toprule" in (out / "comparison.tex").read_text() and "<section id=\"comparison\">" in (
        out / "comparison.html").read_text()
    # seed replicates: one system made of the two seeded folders
    assert cli(["compare", f"standin={s / 'seed1'}", f"standin={s / 'seed2'}", str(s / "noclone"), "--all-pairs",
                "--format", "json"]) == 0
    replicated = json.loads(capsys.readouterr().out)
    standin = replicated["metrics"]["wer"]["systems"][0]
    assert standin["runs"] == 2 and standin["seed"]["runs"] == 2 and standin["seed"]["seed_var"] >= 0
    assert replicated["metrics"]["wer"]["comparisons"][0]["reseeding"]["verdict"]


def test_other_pairs_or_another_protocol_are_refused_naming_what_differs(scored, tmp_path, capsys):
    s = scored["scores"]
    one = tmp_path / "one"
    assert cli(["score", *scored["common"], "--speaker", "1001", "--generated", str(scored["tmp"] / "outputs" / "seed1"),
                "--output", str(one), *SCORING, *scored["cache"]]) == 0
    capsys.readouterr()
    assert cli(["compare", str(s / "seed1"), str(one), str(s / "noclone")]) == 2
    assert "other pairs than seed1" in capsys.readouterr().err
    lower = tmp_path / "lower"
    assert cli(["score", *scored["common"], "--generated", str(scored["tmp"] / "outputs" / "seed2"), "--output",
                str(lower), *SCORING, "evaluation.whisper.normalisation=lowercase_v1", *scored["cache"]]) == 0
    capsys.readouterr()
    assert cli(["compare", str(s / "seed1"), str(lower), "--metrics", "wer,sim"]) == 2
    err = capsys.readouterr().err
    assert "wer: seed2 was scored differently from seed1" in err and "normalisation" in err
    assert "sim:" not in err  # the ECAPA protocol is the same
    assert cli(["compare", str(s / "seed1"), str(lower), "--allow-incompatible"]) == 0
    out = capsys.readouterr().out
    assert "Ranking disabled" in out and "| B − A |" not in out and "| **" not in out  # no comparison, no best


def test_a_seed_sweep_folder_is_one_system_and_the_html_report_has_the_comparison(scored, tmp_path, capsys):
    import shutil

    s = scored["scores"]
    sweep = tmp_path / "multirun-20261201-000000-abcd1234"  # the layout of a Hydra -m +seed=1,2 sweep
    for job, name in enumerate(("seed1", "seed2")):
        shutil.copytree(s / name / "espeak_demo", sweep / str(job))
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    assert cli(["compare", str(sweep), f"noclone={s / 'noclone'}", "--format", "json", "--metrics", "sim"]) == 0
    result = json.loads(capsys.readouterr().out)
    first = result["metrics"]["sim"]["systems"][0]
    assert first["runs"] == 2 and first["seed"]["runs"] == 2 and result["systems"][1]["system"] == "noclone"
    report = tmp_path / "report"
    assert cli(["report", *(str(s / n / "espeak_demo") for n in ("seed1", "seed2", "noclone")), "--format", "html",
                "--output", str(report)]) == 0
    page = (report / "index.html").read_text()
    assert '<section id="comparison">' in page and "p (Holm)" in page and "noclone − seed1" in page
