"""Hydra and OmegaConf echo the command line: redact what they print and write, at one point, before they parse it.

Hydra prints an override verbatim in many places that clonebench's own redaction never sees: an unknown key
("Could not override 'adversary.endpont_url'. To append to your config use +adversary.endpont_url=<value>"), a
grammar error ("Error parsing override '<override>'"), a missing config group option, an interpolation or type
error ("Error executing job with overrides: [...]"), argparse's "unrecognized arguments", ``--cfg job|hydra|all``,
``--info``, ``--help``, the multirun job listing ("Launching N jobs locally", "#0 : <overrides>"), and the files
``.hydra/{config,hydra,overrides}.yaml`` and a sweep's ``multirun.yaml``. hydra-core 1.3.8 writes all of it with
``sys.stdout``/``sys.stderr`` (``run_and_report``, ``traceback``, ``print``, ``argparse``, logging handlers built
on ``ext://sys.stdout``), ``hydra.core.utils._save_config`` and ``OmegaConf.save``. ``guard_process()`` therefore:

1. registers every secret on the command line before Hydra sees it: URL passwords (raw, decoded and in their
   ``Basic`` form, so that a message quoting only part of an override is still redacted) and the value of any
   override whose key names a secret (``...key``, ``token``, ``password``, ``secret``, ``auth``...; for
   ``api_key_env``, whose value should be a variable's *name*, only a value that is not one);
2. replaces ``sys.stdout``/``sys.stderr`` with streams that pass every write through ``core.redact``;
3. makes every log record redacted when it is created (whatever handler Hydra configures later);
4. makes Hydra's ``_save_config`` and ``OmegaConf.save`` write redacted YAML.

Idempotent; run_vc.py calls it at import and again at the start of each job (a multirun launcher may run jobs in
other processes, where ``clonebench.runs.pipeline.redact_hydra_record`` then rewrites the files already written).
"""

from __future__ import annotations

import logging
import re
import sys

from clonebench.core.redact import redact, register_secret, register_url_credentials

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
_SECRET_KEY = re.compile(r"(^|[._-])(api[_-]?key|key|token|password|passwd|pwd|secret|auth|authorization|"
                         r"credentials?|bearer)$", re.IGNORECASE)
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# values that are never secrets (registering "true" would redact every "true" of every YAML file)
_PLAIN = re.compile(r"^(true|false|yes|no|on|off|null|none|~|[-+]?[0-9._e]+|\$\{.*\})$", re.IGNORECASE)


def register_argv_secrets(argv: list[str]) -> None:
    """Register the secrets of a Hydra command line (see the module docstring)."""
    for arg in argv:
        for url in _URL.findall(arg):  # whole, and cut at list separators (an override may hold a list of URLs)
            for candidate in {url, *re.split(r"[,\[\]]", url)}:
                register_url_credentials(candidate)
        key, equals, value = arg.partition("=")
        if not equals:
            continue
        key = key.lstrip("+~").strip()
        value = value.strip().strip("'\"")
        if _PLAIN.match(value):
            continue
        if key.rsplit(".", 1)[-1].lower() == "api_key_env":
            if not _ENV_NAME.match(value):  # not a variable's name: perhaps the key itself
                register_secret(value)
        elif _SECRET_KEY.search(key.rsplit(".", 1)[-1]):
            register_secret(value)


class RedactingStream:
    """A text stream that redacts every write (no escaping: progress bars keep their carriage returns)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redact(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def _redacting_record_factory(factory):
    def make(*args, **kwargs):
        record = factory(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a malformed format string: keep what there is
            message = f"{record.msg} {record.args}"
        record.msg, record.args = redact(message), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return record
    make.clonebench_redacting = True
    return make


def _patch_hydra_writers() -> None:
    import hydra.core.utils as hydra_utils
    from omegaconf import OmegaConf

    if not getattr(hydra_utils._save_config, "clonebench_redacting", False):
        def save_config(cfg, filename, output_dir):
            output_dir.mkdir(parents=True, exist_ok=True)
            with open(str(output_dir / filename), "w", encoding="utf-8") as file:
                file.write(redact(OmegaConf.to_yaml(cfg)))
        save_config.clonebench_redacting = True
        hydra_utils._save_config = save_config
    if not getattr(OmegaConf.save, "clonebench_redacting", False):
        original = OmegaConf.save

        def save(config, f, resolve: bool = False) -> None:
            text = redact(OmegaConf.to_yaml(config, resolve=resolve))
            if hasattr(f, "write"):
                f.write(text)
            else:
                with open(f, "w", encoding="utf-8") as handle:
                    handle.write(text)
        save.clonebench_redacting = True
        save.original = original
        OmegaConf.save = staticmethod(save)


def guard_process(argv: list[str] | None = None) -> None:
    """Install the redaction of everything Hydra and OmegaConf print and write for this process (idempotent)."""
    register_argv_secrets(list(sys.argv[1:] if argv is None else argv))
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout = RedactingStream(sys.stdout)
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = RedactingStream(sys.stderr)
    factory = logging.getLogRecordFactory()
    if not getattr(factory, "clonebench_redacting", False):
        logging.setLogRecordFactory(_redacting_record_factory(factory))
    _patch_hydra_writers()


# At import too: a multirun launcher (joblib's loky workers, submitit) unpickles run_vc.py's task function in a fresh
# process, which imports this module (the task function calls guard_process) before Hydra's run_job writes the job's
# .hydra/ files there. Only the file writers are patched here; streams and log records wait for guard_process().
_patch_hydra_writers()
