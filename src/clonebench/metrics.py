"""Score WAV files from Python with exactly the evaluate phase's scorers and protocols.

One file, or many with each model loaded once::

    from clonebench import metrics

    with metrics.Evaluator(["sim", "sva", "wer", "mcd"], device="cpu") as evaluator:
        evaluator.score("generated.wav", reference="target.wav", text="The text it should say.", language="en")
        # {'sim': 0.61, 'sva': 1.0, 'wer': 0.05, 'mcd': 5.2}
        evaluator.score_many([{"generated": "a.wav", "reference": "a_target.wav", "text": "...", "language": "en"}, ...])

The signature mirrors rvcbench 2.2.1's ``metrics.Evaluator(...).score(generated, reference=, text=, language=,
target=)``: ``reference`` is the recording the speaker metrics (``sim``, ``sva``, ``emotion_match``) compare with,
``target`` a recording of the same text for ``mcd`` and ``stoi`` (defaults to ``reference``); ``text`` and
``language`` are what ``wer`` needs. ``fail`` (failure modes, a clonebench metric) also reads ``prompt=`` (the clip
the system was given; a copy of it is ``prompt_copy``), ``prompt_text=`` and ``prompt_language=`` (the speaking
rate the text's duration is expected at); with ``details=True`` its flags come back under ``failures``. A ``clonebench score`` or run gives a pair's target recording as both, so
``score(generated, reference=target_recording, text=target_text, language=target_language)`` returns the numbers
of that run (tested). The scorer settings come from the same configs and overrides as a run
(``config_name="demo"`` gives the offline wheel models; ``overrides=["evaluation.whisper.model=tiny.en"]``).
The metric cache is optional (``cache_dir``); every model is loaded when the Evaluator is made and released by
``close()`` or the end of the ``with`` block. rvcbench's names ``speechmos`` and ``emotion`` are accepted for
``mos`` and ``emotion_match``, and ``"all"`` for every metric.
"""

from __future__ import annotations

from pathlib import Path

from clonebench.core.hashing import HashCache, sha256_file
from clonebench.data.identity import digest
from clonebench.evaluate.base import ScoreItem
from clonebench.evaluate.cache import MetricCache
from clonebench.evaluate.registry import METRIC_GROUPS, groups_for

METRICS = tuple(METRIC_GROUPS)
ALIASES = {"speechmos": "mos", "emotion": "emotion_match"}
# scorer group -> what it compares the generated audio with (as rvcbench's metrics.METRICS)
COMPARED = {"ecapa": "reference", "emotion": "reference", "mcd": "target", "stoi": "target", "whisper": "text",
            "dnsmos": None, "utmos": None, "failures": "text", "seedtts_whisper": "text",
            "seedtts_paraformer": "text"}


def available() -> list[str]:
    return list(METRICS)


class Evaluator:
    """Score generated speech with a fixed set of metrics; each scorer is loaded once, released on ``close()``."""

    def __init__(self, metrics=("sim", "sva", "wer", "mcd"), *, device: str | None = None, config_name: str = "vc",
                 overrides=(), cache_dir: str | Path | None = None):
        import torch

        from clonebench.config.compose import scoring_settings
        from clonebench.evaluate.device import resolve_device
        from clonebench.evaluate.scoring import make_scorer, scorer_provenance

        names = list(METRICS) if metrics == "all" else [metrics] if isinstance(metrics, str) else list(metrics)
        names = list(dict.fromkeys(ALIASES.get(m, m) for m in names))
        unknown = [m for m in names if m not in METRIC_GROUPS]
        if unknown or not names:
            raise ValueError(f"unknown metrics {unknown or '[]'}; available: {', '.join(METRICS)}")
        self.metrics = names
        settings, _, _ = scoring_settings(config_name, [*overrides, f"evaluation.metrics=[{','.join(names)}]"], device)
        self.settings = settings
        if settings.evaluation.cpu_threads:
            torch.set_num_threads(settings.evaluation.cpu_threads)
        self.device, _ = resolve_device(settings.evaluation.device)
        self._hash_cache = HashCache(None)
        self._cache = MetricCache(None, Path(cache_dir)) if cache_dir is not None else None
        self._scorers, self.provenance = {}, {}
        try:
            for group in groups_for(tuple(names)):
                scorer = make_scorer(group, settings, self.device, self._hash_cache)
                self._scorers[group] = scorer
                scorer.load()
                self.provenance[group] = scorer_provenance(scorer, settings.evaluation.batch_size)
        except BaseException:
            self.close()
            raise

    def _item(self, group: str, request: dict) -> ScoreItem:
        generated = Path(request["generated"])
        if not generated.is_file():
            raise FileNotFoundError(generated)
        need = COMPARED[group]
        compared = (request.get("target") or request.get("reference")) if need == "target" else request.get(need)
        if need in ("reference", "target"):
            if compared is None:
                raise ValueError(f"{group} ({', '.join(m for m in self.metrics if METRIC_GROUPS[m] == group)}) needs "
                                 f"{'target= or reference=' if need == 'target' else 'reference='}")
            if not Path(compared).is_file():
                raise FileNotFoundError(compared)
        text, language = request.get("text") or "", request.get("language") or ""
        if need == "text" and not (text and language):
            raise ValueError("wer needs text= and language= (e.g. language='en')")
        path = Path(compared) if need in ("reference", "target") else None
        generated_sha, compared_sha = sha256_file(generated), sha256_file(path) if path else ""
        prompt = Path(request["prompt"]) if request.get("prompt") and group == "failures" else None
        if prompt is not None and not prompt.is_file():
            raise FileNotFoundError(prompt)
        prompt_sha = sha256_file(prompt) if prompt else ""
        identity = {"generated": generated_sha, "compared": compared_sha, "text": text, "language": language}
        if prompt is not None or request.get("prompt_text"):
            identity["prompt"] = [prompt_sha, request.get("prompt_text") or "", request.get("prompt_language") or ""]
        return ScoreItem(sample_id=digest(identity)[:32], pair_id=generated.stem, speaker_id="",
                         generated_path=generated, generated_sha256=generated_sha, target_path=path,
                         target_sha256=compared_sha, target_text=text, language=language, prompt_path=prompt,
                         prompt_sha256=prompt_sha, prompt_text=request.get("prompt_text") or "",
                         prompt_language=request.get("prompt_language") or "")

    def score_many(self, requests: list[dict], *, details: bool = False) -> list[dict]:
        """``{metric: value}`` per request (``generated``, ``reference``, ``target``, ``text``, ``language``); a
        metric the scorer could not give is None, with the reason under ``"errors"``."""
        import torch

        from clonebench.evaluate.scoring import score_items

        if not self._scorers:
            raise RuntimeError("this Evaluator is closed")
        out = [{"errors": []} for _ in requests]
        every = [{"target_text": r.get("text") or "", "language": r.get("language") or ""} for r in requests]
        for group, scorer in self._scorers.items():
            items = [self._item(group, r) for r in requests]
            torch.manual_seed(0)
            records, _ = score_items(scorer, self.provenance[group]["fingerprint"], items, self._cache,
                                     self.settings.evaluation.batch_size)
            for result, values, item in zip(out, every, items):
                record = records[item.sample_id]
                values.update(record.values if record.ok else {})
                if record.ok:
                    result.update(record.values if details else
                                  {m: record.values.get(m) for m in self.metrics if METRIC_GROUPS[m] == group})
                else:
                    result.update({m: None for m in self.metrics if METRIC_GROUPS[m] == group})
                    result["errors"].append(f"{group}: {record.error}")
        if "fail" in self.metrics:
            from clonebench.failures.flags import finalise

            for result, values in zip(out, every):
                finalise(values)  # the audio flags with the Whisper values of the same clip
                result["fail"] = values.get("fail")
                if details and "failures" in values:
                    result.update({k: values[k] for k in ("fail", "failures", "failure_detail")})
        return out

    def score(self, generated, *, reference=None, target=None, text=None, language=None, prompt=None,
              prompt_text=None, prompt_language=None, details: bool = False) -> dict:
        """``{metric: value}`` for one file; a ValueError when a scorer cannot score it (too short, invalid)."""
        result = self.score_many([{"generated": generated, "reference": reference, "target": target, "text": text,
                                   "language": language, "prompt": prompt, "prompt_text": prompt_text,
                                   "prompt_language": prompt_language}], details=details)[0]
        errors = result.pop("errors")
        if errors:
            raise ValueError(f"{generated}: " + "; ".join(errors))
        return result

    def close(self) -> None:
        scorers, self._scorers = list(self._scorers.values()), {}
        for scorer in scorers:
            scorer.release()
        self._hash_cache.close()

    def __enter__(self) -> "Evaluator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def score_under_load(run_dir, metrics=("sim", "wer"), *, device: str | None = None, config_name: str = "vc",
                     overrides=()) -> dict:
    """A serving run's answers that changed under load (docs/serving.md), scored: SIM of each to the same request's
    answer sent alone, WER of each and of the answer alone. Writes and returns ``serving_quality.json``; the
    report shows it beside the level's table."""
    from clonebench.core.atomic import atomic_write_json
    from clonebench.report.serving_quality import OUTPUT, changed_pairs, per_level

    run_dir = Path(run_dir)
    wanted = [metrics] if isinstance(metrics, str) else list(metrics)
    if not wanted or set(wanted) - {"sim", "wer"}:
        raise ValueError(f"metrics {wanted}: sim, wer or both")
    data, jobs = changed_pairs(run_dir)
    under_load, alone, result = [], [], {"metrics": wanted}
    if jobs:
        with Evaluator(wanted, device=device, config_name=config_name, overrides=overrides) as evaluator:
            under_load = evaluator.score_many([{"generated": str(w), "reference": str(a), "text": i["text"],
                                                "language": i["language"]} for _, w, a, i in jobs])
            alone = evaluator.score_many([{"generated": str(a), "reference": str(a), "text": i["text"],
                                           "language": i["language"]} for _, _, a, i in jobs]) \
                if "wer" in wanted else [{} for _ in jobs]
            result["scorers"] = evaluator.provenance
    result["levels"] = per_level(data, jobs, under_load, alone)
    atomic_write_json(run_dir / OUTPUT, result)
    return result
