"""``clonebench listening-results`` on tests built from real runs and rated by simulated raters with a known
answer (tests/listening_sim.py): the scores and CIs recover it, the screening drops the raters it must, and a file
that does not belong is refused."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from clonebench.cli.main import main as cli
from clonebench.core.errors import ClonebenchError
from clonebench.listening.build import build_test
from clonebench.listening.integrity import sealed
from clonebench.listening.ratings import load_key
from clonebench.listening.results import write_results
from tests.listening_runs import generation_runs
from tests.listening_sim import Population, expected_mean


@pytest.fixture(scope="module")
def runs(tmp_path_factory, demo_dataset):
    return generation_runs(tmp_path_factory.mktemp("listening_results_runs"), demo_dataset)


def build(runs, out: Path, kind: str, *extra: str) -> dict:
    assert cli(["listening-test", str(runs["run_a"]), str(runs["run_b"]), "--kind", kind, "--items", "8",
                "--output", str(out), "--label", "fish", "--label", "s2cpp", *extra]) == 0
    return load_key(out)


def write(folder: Path, files: dict[str, dict]) -> list[Path]:
    paths = []
    for name, data in files.items():
        paths.append(folder / "ratings" / f"{name}.json")
        paths[-1].write_text(json.dumps(data))
    return paths


def straight_liner(population: Population, rater: str, value: int) -> dict:
    """A rater who gives every trial the same answer (the checks catch them)."""
    data = population.rater(rater)["ratings"]
    for record in data["trials"]:
        record["rating"] = value
    return sealed(population.key["salt"], data)


@pytest.mark.slow
def test_mos_recovers_the_known_system_means_and_differences(runs, tmp_path):
    """Eight simulated rater panels: each system's 95 % CI covers the model's mean in (nearly) every panel, and the
    real difference is found in every panel."""
    out = tmp_path / "mos"
    key = build(runs, out, "mos")
    truth = {"S1": 3.9, "S2": 3.1, "natural": 4.4}
    covered = {code: 0 for code in truth}
    for panel in range(8):
        population = Population(key, truth, seed=100 + panel)
        files = {f"r{k:02d}": population.rater(f"r{k:02d}") for k in range(12)}
        files["lazy"] = straight_liner(population, "lazy", 5)  # rates the degraded clips 5: excluded
        for old in (out / "ratings").glob("*.json"):
            old.unlink()
        summary = write_results(out, write(out, files))
        kept = summary["raters"]["kept"]
        excluded = {e["rater"]: e["reason"] for e in summary["raters"]["excluded"]}
        assert summary["raters"]["given"] == 13 and kept >= 10 and kept + len(excluded) == 13
        assert excluded["lazy"] == "failed 2 of 4 checks: degraded clip rated 5 (> 2); degraded clip rated 5 (> 2)"
        scores = {r["condition"]: r for r in summary["scores"]}
        for code, mu in truth.items():  # the model's mean of the 5-point answer
            expected = expected_mean(mu, population.total_sd, "mos")
            covered[code] += scores[code]["ci"][0] <= expected <= scores[code]["ci"][1]
            assert scores[code]["n_ratings"] == kept * 8 and scores[code]["n_raters"] == kept
        diffs = {(d["a"], d["b"]): d for d in summary["differences"]}
        assert diffs[("S1", "S2")]["ci"][1] < 0 and diffs[("S1", "S2")]["p_holm"] < 0.05  # s2cpp below fish
        assert diffs[("S2", "natural")]["ci"][0] > 0 and diffs[("S1", "natural")]["delta"] > 0
    assert min(covered.values()) >= 6, covered  # 95 % CIs: at most 2 misses in 8 (P < 0.6 % by chance)
    assert [r["label"] for r in summary["scores"]] == ["fish", "s2cpp", "natural recordings"]
    assert 0.2 < summary["agreement"]["krippendorff_alpha"] < 1 and summary["agreement"]["units"] == 24
    rows = list(csv.DictReader((out / "ratings_long.csv").open()))
    assert {r["system"] for r in rows if r["type"] == "rating"} == {"fish", "s2cpp", "natural recordings"}
    assert {r["kept"] for r in rows if r["rater"] == "lazy"} == {"False"}


@pytest.mark.slow
def test_cmos_recovers_the_known_preference_with_a_paired_test(runs, tmp_path, capsys):
    out = tmp_path / "cmos"
    key = build(runs, out, "cmos")
    population = Population(key, {"S1": 3.2, "S2": 4.0}, seed=5)
    paths = write(out, {f"r{k}": population.rater(f"r{k}") for k in range(12)})
    capsys.readouterr()
    assert cli(["listening-results", str(out), *map(str, paths), "--format", "latex"]) == 0
    assert r"\toprule" in capsys.readouterr().out
    [row] = json.loads((out / "results.json").read_text())["cmos"]
    assert (row["first"], row["second"], row["label"]) == ("S1", "S2", "s2cpp vs fish")
    expected = expected_mean(0.8, population.total_sd, "cmos")
    assert row["ci"][0] <= expected <= row["ci"][1] and row["ci"][0] > 0 and row["p_wilcoxon"] < 0.05


@pytest.mark.slow
def test_mushra_post_screening_excludes_raters_who_miss_the_hidden_reference(runs, tmp_path):
    out = tmp_path / "mushra"
    key = build(runs, out, "mushra")
    population = Population(key, {"S1": 70, "S2": 45, "natural": 100, "anchor": 20}, seed=3,
                            rater_sd=4, item_sd=4, noise_sd=6)

    def missing_reference(rater: str, items: int) -> dict:
        data = population.rater(rater)["ratings"]
        for record in data["trials"][:items]:
            hidden = next(k for k, c in enumerate(record["clips"]) if key["clips"][c]["role"] == "natural")
            record["ratings"][hidden] = 70
        return sealed(key["salt"], data)
    files = {f"r{k}": population.rater(f"r{k}") for k in range(6)}
    files["one_of_8"] = missing_reference("one_of_8", 1)   # 12.5 % of items below 90: kept (BS.1534: > 15 %)
    files["two_of_8"] = missing_reference("two_of_8", 2)   # 25 %: excluded
    summary = write_results(out, write(out, files))
    assert [e["rater"] for e in summary["raters"]["excluded"]] == ["two_of_8"]
    assert "failed 2 of 8 checks: hidden reference rated 70 (< 90)" in summary["raters"]["excluded"][0]["reason"]
    means = {r["condition"]: r["mean"] for r in summary["scores"]}
    assert means["natural"] > means["S1"] > means["S2"] > means["anchor"]
    assert summary["agreement"]["level"] == "interval"


@pytest.mark.slow
def test_files_that_do_not_belong_are_refused_each_with_its_reason(runs, tmp_path, capsys):
    out = tmp_path / "smos"
    key = build(runs, out, "smos", "--items", "4")
    population = Population(key, {"S1": 3.5, "S2": 3.0, "natural": 4.2}, seed=1)
    good = population.rater("good")

    def variant(change) -> dict:
        data = json.loads(json.dumps(good))
        change(data["ratings"])
        return sealed(key["salt"], data["ratings"])  # resealed: only the check under test can refuse it
    tampered = json.loads(json.dumps(good))
    tampered["ratings"]["trials"][0]["rating"] = 6 - tampered["ratings"]["trials"][0]["rating"]  # digest kept
    files = {
        "tampered": tampered,
        "other_test": variant(lambda r: r.update(test_id="lt-000000000000")),
        "missing": variant(lambda r: r["trials"].pop()),
        "off_scale": variant(lambda r: r["trials"][1].update(rating=6)),
        "unknown_trial": variant(lambda r: r["trials"][2].update(trial="t" + "0" * 20)),
        "swapped_clip": variant(lambda r: r["trials"][3].update(clips=r["trials"][4]["clips"])),
    }
    paths = write(out, files)
    (out / "ratings" / "truncated.json").write_text(json.dumps(good)[:-40])
    (out / "ratings" / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    surrogate = json.dumps(good).replace('"user_agent": "simulated"', '"user_agent": "\\ud800"')
    (out / "ratings" / "surrogate.json").write_text(surrogate)
    paths += [out / "ratings" / f"{name}.json" for name in ("truncated", "deep", "surrogate")]
    with pytest.raises(ClonebenchError) as refused:
        write_results(out, paths)
    message = str(refused.value)
    for name, reason in (("tampered", "integrity digest does not match"), ("other_test", "ratings of test 'lt-000000000000'"),
                         ("missing", "1 of 16 trials missing"), ("off_scale", "rating 6 is not one of [1, 2, 3, 4, 5]"),
                         ("unknown_trial", "is not a trial of this test"), ("swapped_clip", "are not the trial's clips"),
                         ("truncated", "not a readable JSON file"), ("deep", "RecursionError"),
                         ("surrogate", "integrity digest does not match")):
        assert f"{name}.json: refused:\n  " in message and reason in message, (name, message)
    assert not (out / "results.json").exists()
    # the same rater twice, and the command line's exit code and message
    twice = write(out, {"good": good, "good_copy": good})
    capsys.readouterr()
    assert cli(["listening-results", str(out), *map(str, twice)]) == 2
    assert "rater 'good' has 2 files" in capsys.readouterr().err
    assert cli(["listening-results", str(out), str(twice[0])]) == 0  # the good file alone is accepted


@pytest.mark.slow
def test_a_manifest_path_leading_out_of_its_run_is_refused(runs, tmp_path):
    copy = tmp_path / "crafted"
    shutil.copytree(runs["run_a"], copy)
    manifest = json.loads((copy / "run_manifest.json").read_text())
    outside = tmp_path / "elsewhere.wav"
    shutil.copyfile(copy / manifest["samples"][0]["audio_path"], outside)
    manifest["samples"][0]["audio_path"] = "../elsewhere.wav"
    (copy / "run_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ClonebenchError, match="outside the run directory"):
        build_test([copy], "mos", 2, tmp_path / "test")
    assert not (tmp_path / "test").exists() and not list(tmp_path.glob(".test.partial-*"))
