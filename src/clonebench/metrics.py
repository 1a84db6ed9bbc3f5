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
``score(generated, reference=target_recording, text=target_text, language=target_language, sample_id=run_id)``
returns the numbers of that run (tested on the failing demo run, every value): Whisper's fallback decoding is seeded
from the sample id, which ``sample_id=`` (the run's CSV column) or ``pair=`` (the manifest row, its id derived as a
run derives it) gives; ``seed=`` the evaluation seed when the run's differs from its config's. Audio may be a path,
``(samples, rate)`` or an array / tensor with ``rate=`` (``given_audio``); an empty or silent clip has no number. The scorer settings come from the same configs and overrides as a run
(``config_name="demo"`` gives the offline wheel models; ``overrides=["evaluation.whisper.model=tiny.en"]``).
The metric cache is optional (``cache_dir``); every model is loaded when the Evaluator is made and released by
``close()`` or the end of the ``with`` block. rvcbench's names ``speechmos`` and ``emotion`` are accepted for
``mos`` and ``emotion_match``, and ``"all"`` for every metric.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import HashCache, sha256_file
from clonebench.data.identity import digest, sample_id_of
from clonebench.evaluate.execution.cache import MetricCache
from clonebench.evaluate.given_audio import AudioInputError, audio_path
from clonebench.evaluate.protocols.base import ScoreItem
from clonebench.evaluate.protocols.registry import METRIC_GROUPS, groups_for

__all__ = ["ALIASES", "METRICS", "AudioInputError", "Evaluator", "RequestError", "available"]

METRICS = tuple(METRIC_GROUPS)
ALIASES = {"speechmos": "mos", "emotion": "emotion_match"}
# scorer group -> what it compares the generated audio with (as rvcbench's metrics.METRICS)
COMPARED = {"ecapa": "reference", "emotion": "reference", "mcd": "target", "stoi": "target", "whisper": "text",
            "dnsmos": None, "utmos": None, "failures": "text", "seedtts_whisper": "text",
            "seedtts_paraformer": "text"}


def available() -> list[str]:
    return list(METRICS)


class RequestError(ClonebenchError, TypeError):
    """A ``score_many`` argument that is not a list (or a mapping) of request mappings."""


def _refuse_reused_ids(items: list[ScoreItem]) -> None:
    """Two requests with one sample id must be one clip (the id keys the records and the cache)."""
    def inputs(item: ScoreItem) -> tuple:
        return (item.generated_sha256, item.target_sha256, item.target_text, item.language, item.prompt_sha256,
                item.prompt_text, item.prompt_language)

    seen: dict[str, ScoreItem] = {}
    for item in items:
        other = seen.setdefault(item.sample_id, item)
        if inputs(other) != inputs(item):
            raise ValueError(f"sample id {item.sample_id} is given to two different requests ({other.generated_path}"
                             f" and {item.generated_path}): each pair of a run has its own id")


class Evaluator:
    """Score generated speech with a fixed set of metrics; each scorer is loaded once, released on ``close()``."""

    def __init__(self, metrics=("sim", "sva", "wer", "mcd"), *, device: str | None = None, config_name: str = "vc",
                 overrides=(), cache_dir: str | Path | None = None, seed: int | None = None):
        import torch

        from clonebench.config.compose import scoring_settings
        from clonebench.evaluate.execution.device import resolve_device
        from clonebench.evaluate.scoring import make_scorer, scorer_provenance

        names = list(METRICS) if metrics == "all" else [metrics] if isinstance(metrics, str) else list(metrics)
        names = list(dict.fromkeys(ALIASES.get(m, m) for m in names))
        unknown = [m for m in names if m not in METRIC_GROUPS]
        if unknown or not names:
            raise ValueError(f"unknown metrics {unknown or '[]'}; available: {', '.join(METRICS)}")
        self.metrics = names
        extra = [f"evaluation.metrics=[{','.join(names)}]", *([f"evaluation.seed={int(seed)}"] if seed is not None else [])]
        settings, _, _ = scoring_settings(config_name, [*overrides, *extra], device)
        self.settings = settings
        if settings.evaluation.cpu_threads:
            torch.set_num_threads(settings.evaluation.cpu_threads)
        self.device, _ = resolve_device(settings.evaluation.device)
        self._hash_cache = HashCache(None)
        self._cache = MetricCache(None, Path(cache_dir)) if cache_dir is not None else None
        self._scorers, self.provenance = {}, {}
        self._folder: tempfile.TemporaryDirectory | None = None  # array inputs, written as WAV files
        try:
            for group in groups_for(tuple(names)):
                scorer = make_scorer(group, settings, self.device, self._hash_cache)
                self._scorers[group] = scorer
                scorer.load()
                self.provenance[group] = scorer_provenance(scorer, settings.evaluation.batch_size)
        except BaseException:
            self.close()
            raise

    def _path(self, request: Mapping, role: str) -> Path | None:
        value = request.get(role)
        if value is None:
            return None
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="clonebench-api-")
        return audio_path(value, role, request.get("rate"), Path(self._folder.name))

    def _item(self, group: str, request: Mapping, number: int) -> ScoreItem:
        generated = self._path(request, "generated")
        if generated is None:
            raise ValueError(f"request {number}: generated= (the audio to score) is missing")
        need = COMPARED[group]
        compared = (self._path(request, "target") or self._path(request, "reference")) if need == "target" \
            else self._path(request, "reference") if need == "reference" else None
        if need in ("reference", "target") and compared is None:
            raise ValueError(f"{group} ({', '.join(m for m in self.metrics if METRIC_GROUPS[m] == group)}) needs "
                             f"{'target= or reference=' if need == 'target' else 'reference='}")
        text, language = request.get("text") or "", request.get("language") or ""
        if need == "text" and not (text and language):
            raise ValueError("wer needs text= and language= (e.g. language='en')")
        generated_sha, compared_sha = sha256_file(generated), sha256_file(compared) if compared else ""
        prompt = self._path(request, "prompt") if group == "failures" else None
        prompt_sha = sha256_file(prompt) if prompt else ""
        identity = {"generated": generated_sha, "compared": compared_sha, "text": text, "language": language}
        if prompt is not None or request.get("prompt_text"):
            identity["prompt"] = [prompt_sha, request.get("prompt_text") or "", request.get("prompt_language") or ""]
        pair = request.get("pair") or {}
        sample_id = str(request.get("sample_id") or (sample_id_of(
            pair.get("dataset_name"), pair.get("split"), pair.get("pair_id"), pair.get("speaker_id"),
            pair.get("manifest_variant")) if pair else digest(identity)[:32]))
        return ScoreItem(sample_id=sample_id, pair_id=str(pair.get("pair_id") or generated.stem),
                         speaker_id=str(pair.get("speaker_id") or ""),
                         generated_path=generated, generated_sha256=generated_sha, target_path=compared,
                         target_sha256=compared_sha, target_text=text, language=language, prompt_path=prompt,
                         prompt_sha256=prompt_sha, prompt_text=request.get("prompt_text") or "",
                         prompt_language=request.get("prompt_language") or "")

    def score_many(self, requests, *, details: bool = False):
        """``{metric: value}`` per request (``generated``, ``reference``, ``target``, ``text``, ``language``, and
        ``sample_id=`` or ``pair=`` for a run's numbers); a metric the scorer could not give is None, with the
        reason under ``"errors"``. A mapping of names to requests gives a mapping of the names to results."""
        if isinstance(requests, Mapping):
            if "generated" in requests:
                raise RequestError("score_many takes a list of requests (or a mapping of names to requests); "
                                   "score(generated, ...) scores one file")
            names = list(requests)
            return dict(zip(names, self.score_many([requests[n] for n in names], details=details)))
        if isinstance(requests, (str, bytes)) or not isinstance(requests, Iterable):
            raise RequestError(f"score_many takes a list of requests, not a {type(requests).__name__}")
        requests = list(requests)
        for number, request in enumerate(requests):
            if not isinstance(request, Mapping):
                raise RequestError(f"request {number} is a {type(request).__name__}, not a mapping such as "
                                   "{'generated': 'a.wav', 'reference': 'b.wav', 'text': '...', 'language': 'en'}")
        return self._score(requests, details)

    def _score(self, requests: list[Mapping], details: bool) -> list[dict]:
        import torch

        from clonebench.evaluate.scoring import score_items

        if not self._scorers:
            raise RuntimeError("this Evaluator is closed")
        out = [{"errors": []} for _ in requests]
        every = [{"target_text": r.get("text") or "", "language": r.get("language") or ""} for r in requests]
        for group, scorer in self._scorers.items():
            items = [self._item(group, r, k) for k, r in enumerate(requests)]
            _refuse_reused_ids(items)
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
              prompt_text=None, prompt_language=None, rate=None, sample_id=None, pair=None,
              details: bool = False) -> dict:
        """``{metric: value}`` for one clip; a ValueError when a scorer cannot score it (too short, empty, silent,
        invalid)."""
        result = self._score([{"generated": generated, "reference": reference, "target": target, "text": text,
                               "language": language, "prompt": prompt, "prompt_text": prompt_text,
                               "prompt_language": prompt_language, "rate": rate, "sample_id": sample_id,
                               "pair": pair}], details=details)[0]
        errors = result.pop("errors")
        if errors:
            shown = generated if isinstance(generated, (str, PathLike)) else f"{type(generated).__name__} samples"
            raise ValueError(f"{shown}: " + "; ".join(errors))
        return result

    def close(self) -> None:
        scorers, self._scorers = list(self._scorers.values()), {}
        for scorer in scorers:
            scorer.release()
        self._hash_cache.close()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

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
