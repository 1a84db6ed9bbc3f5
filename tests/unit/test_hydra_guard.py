"""Which command-line values the Hydra guard registers as secrets (clonebench/config/hydra_guard.py): URL passwords, the
values of secret-named keys, an API key given where a variable's name belongs; never plain values such as ``true``
(registering them would redact every ``true`` of every YAML file). The whole guard runs in
tests/integration/test_hydra_echo_redaction.py, as run_vc.py installs it."""

from __future__ import annotations

from clonebench.config.hydra_guard import RedactingStream, register_argv_secrets
from clonebench.core.redact import redact


def test_secrets_on_the_command_line_are_registered_and_plain_values_are_not():
    register_argv_secrets([
        "adversary.endpoint_urls=[http://a.example/v1/tts,http://al:Gq7-list-pw@b.example/v1/tts]",
        "+adversary.api_key=sk-guard-91fd2", "+hydra.job.env_set.CB_KEY=Zr8kEnvValue", "+db.password=Pz4-pass",
        "adversary.api_key_env=sk-guard-given-as-name", "adversary.api_key_env=CB_GUARD_KEY",
        "+a.key=true", "+b.token=0.75", "+c.secret=null", "+d.auth=${oc.env:X}", "adversary.max_new_tokens=Wx9plain"])
    text = ("Gq7-list-pw sk-guard-91fd2 Zr8kEnvValue Pz4-pass sk-guard-given-as-name | CB_GUARD_KEY true 0.75 null "
            "Wx9plain")
    assert redact(text) == "[redacted] [redacted] [redacted] [redacted] [redacted] | CB_GUARD_KEY true 0.75 null Wx9plain"


def test_the_redacting_stream_redacts_each_write_and_keeps_carriage_returns():
    import io

    buffer = io.StringIO()
    stream = RedactingStream(buffer)
    stream.write("\rscore 3/8 http://u:Vb5-stream-pw@h/x\n")
    assert buffer.getvalue() == "\rscore 3/8 http://h/x\n" and stream.getvalue() == buffer.getvalue()
