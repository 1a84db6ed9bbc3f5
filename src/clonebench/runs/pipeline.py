"""Entry point behind ``run_vc.py``: settings -> generate phase -> evaluate phase (each can run alone)."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from clonebench.config.settings import RunSettings, read_settings
from clonebench.core.errors import ClonebenchError, ConfigError
from clonebench.core.provenance import cluster_provenance, environment_provenance
from clonebench.core.records import RunStatus
from clonebench.core.redact import install_log_redaction, redact, shown
from clonebench.core.untrusted import UntrustedFileError, read_bytes

log = logging.getLogger("clonebench")

MAX_HYDRA_RECORD_BYTES = 16 * 1024 * 1024  # a .hydra/*.yaml or multirun.yaml larger than this is refused


@dataclass
class RunResult:
    run_dir: Path
    generation: RunStatus | None = None
    evaluation: dict | None = None
    serving: dict | None = None

    @property
    def ok(self) -> bool:
        if self.serving is not None:
            return True
        generated = self.generation in (None, RunStatus.GENERATED)
        evaluated = self.evaluation is None or self.evaluation["status"] == "complete"
        return generated and evaluated


def config_container(cfg: DictConfig) -> dict:
    """The resolved config as recorded in artifacts: no Hydra section, no credentials inside endpoint URLs."""
    container = OmegaConf.to_container(cfg, resolve=True)
    container.pop("hydra", None)
    adversary = container.get("adversary", {})
    if isinstance(adversary.get("endpoint_url"), str):
        adversary["endpoint_url"] = redact(adversary["endpoint_url"])
    if isinstance(adversary.get("endpoint_urls"), list):
        adversary["endpoint_urls"] = [redact(u) for u in adversary["endpoint_urls"]]
    return container


def run(cfg: DictConfig, run_dir: Path, source: str):
    """A run's result: RunResult, or a SuiteRunResult for a suite config (``suite.*``)."""
    from clonebench.data.selection import load_samples
    from clonebench.evaluate.inputs import is_external_folder, source_run_dir
    from clonebench.evaluate.phase import run_evaluation
    from clonebench.generate.phase import run_generation

    settings: RunSettings = read_settings(cfg, source)
    phase = "evaluate" if settings.vc.evaluate_only else "generate" if settings.vc.generate_only else "generate+evaluate"

    header = {"run_name": settings.run_name, "phase": phase, "config_source": redact(source),
              "config": config_container(cfg), "provenance": environment_provenance()}
    cluster = cluster_provenance()
    if cluster is not None:  # a SLURM job: which job, array task and node ran this run (runs/sweep.py reads it)
        header["cluster"] = cluster
    if settings.suite is not None:
        from clonebench.external.score_suite import external_folder
        from clonebench.suite.run import run_suite

        return run_suite(settings, run_dir, header, external_source=external_folder)
    result = RunResult(run_dir)
    if settings.vc.evaluate_only:
        if settings.evaluation.generated_audio_dir is None:
            raise ConfigError(f"{source}: +vc.evaluate_only=true needs +vc.evaluation.generated_audio_dir="
                              "results/<run>/<stamp>-<id>/generated_audio")
        if is_external_folder(settings.evaluation.generated_audio_dir):
            from clonebench.external.score_folders import score_external_folder

            result.evaluation = score_external_folder(settings, run_dir, header, load_samples(settings))
            return result
        source_run = source_run_dir(settings.evaluation.generated_audio_dir)
        result.evaluation = run_evaluation(settings, run_dir, source_run, load_samples(settings), header)
        return result
    if settings.serving is not None:
        from clonebench.serving.run import run_serving

        result.serving = run_serving(settings.client, settings.adversary_params, settings.serving,
                                     load_samples(settings), settings.seed, run_dir, header)
        return result
    recorder = run_generation(settings, run_dir, header)
    result.generation = recorder.status
    if settings.client.measure != "quality":
        log.info("timing run (adversary.measure=%s): its audio is not scored", settings.client.measure)
    elif not settings.vc.generate_only and recorder.status in (RunStatus.GENERATED, RunStatus.PARTIAL):
        result.evaluation = run_evaluation(settings, run_dir, run_dir, recorder.samples, header)
    return result


def results_table(metrics: dict) -> str:
    lines = [f"{'metric':<12} {'mean':>9} {'95% CI':>21} {'n':>7}"]
    for name, entry in metrics["metrics"].items():
        mean = "-" if entry["mean"] is None else f"{entry['mean']:.4f}"
        interval = entry["ci"]
        if name == "fail":  # a rate: its Wilson interval, as every table shows it (docs/statistics.md)
            interval = (metrics.get("failure_modes") or {}).get("ci")
        ci = "-" if not interval else f"[{interval[0]:.4f}, {interval[1]:.4f}]"
        lines.append(f"{name:<12} {mean:>9} {ci:>21} {entry['n_valid']:>3}/{entry['n_requested']:<3}")
        if name == "wer" and entry.get("corpus_wer") is not None:
            lines.append(f"{'corpus wer':<12} {entry['corpus_wer']:>9.4f}")
    return "\n".join(lines)


def redact_hydra_record(run_dir: Path) -> None:
    """Hydra records the command line in ``.hydra/`` (and a sweep's ``multirun.yaml``) before the run starts:
    rewrite them without secrets."""
    from clonebench.core.atomic import atomic_write_text

    sweep_record = run_dir.parent / "multirun.yaml"
    for path in sorted((run_dir / ".hydra").glob("*.yaml")) + ([sweep_record] if sweep_record.is_file() else []):
        try:  # written by Hydra for this run: a regular file, never a link, FIFO or directory
            text = read_bytes(path, max_bytes=MAX_HYDRA_RECORD_BYTES, follow=False,
                              what="Hydra record").decode("utf-8", errors="replace")
        except UntrustedFileError as exc:
            raise ClonebenchError(f"{exc}; remove it (Hydra rewrites it on the next run)") from None
        if redact(text) != text:
            atomic_write_text(path, redact(text))


def main(cfg: DictConfig, run_dir: Path, source: str) -> int:
    """Run and turn user-facing errors into one clear line and exit status 2 (1 for a failed/partial run).

    Everything shown or logged passes through ``clonebench.core.redact`` (secrets removed, control characters
    escaped); an unexpected error is logged with its (redacted) traceback and reported in one line (exit 3).
    """
    from clonebench.runs.requeue import being_requeued, requeued_attempt

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress bar
    install_log_redaction()
    cfg, run_dir = requeued_attempt(cfg, run_dir)  # a requeued cluster job resumes its earlier attempt
    redact_hydra_record(run_dir)  # URL credentials at once (a killed run leaves none); registered secrets after
    try:
        try:
            result = run(cfg, run_dir, source)
        finally:
            redact_hydra_record(run_dir)  # the secrets are registered once the settings are read
    except ClonebenchError as exc:
        log.error("%s", exc)
        print(f"clonebench: error: {shown(exc, keep_newlines=True)}", file=sys.stderr)
        return 2
    except Exception as exc:
        from clonebench.generate.phase import _Terminated

        if isinstance(exc, _Terminated) and being_requeued():  # no result: the launcher waits for the next attempt
            log.warning("terminated (%s) for a SLURM requeue: the requeued job resumes this run", exc)
            raise SystemExit(128 + 15) from None
        if isinstance(exc, _Terminated):  # SIGTERM: the run is recorded as interrupted and resumable
            log.warning("terminated (%s): resume with vc.resume_from=%s", exc, run_dir)
            print(f"clonebench: terminated ({exc}); resume with vc.resume_from={shown(run_dir)}", file=sys.stderr)
            return 128 + 15
        log.exception("unexpected error")
        print(f"clonebench: unexpected error: {shown(f'{type(exc).__name__}: {exc}')} (traceback in the run's "
              "log)", file=sys.stderr)
        return 3
    if not isinstance(result, RunResult):  # a suite run (clonebench.suite.run)
        print(shown(result.summary, keep_newlines=True))  # task reasons may quote a server's error text
        print(f"suite {result.status}: {shown(run_dir)} (suite_summary.md, submission.json)")
        return 0 if result.ok else 1
    if result.serving is not None:
        from clonebench.report.serving import serving_markdown

        print(serving_markdown(result.serving))
        print(f"serving run complete: {run_dir} (serving.json)")
    if result.generation is not None:
        print(f"run {result.generation.value}: {run_dir}")
    if result.evaluation is not None:
        print(f"evaluation {result.evaluation['status']} on {result.evaluation['device']}: {run_dir}")
        print(results_table(result.evaluation))
        for reason in result.evaluation["reasons"][:10]:
            print(f"  partial: {reason}")
    return 0 if result.ok else 1
