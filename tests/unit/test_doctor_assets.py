"""``doctor --eval`` checks what the scorer registry holds under every shipped config, not a hand list: every metric
group (silero-vad's failure detector included) and every locked faster-whisper model. The real loads run in
tests/integration/test_report_commands.py::test_doctor."""

from __future__ import annotations

from clonebench.cli.doctor_assets import scorer_setups, shipped_configs
from clonebench.evaluate.protocols.locks import FASTER_WHISPER
from clonebench.evaluate.protocols.registry import METRIC_GROUPS


def test_every_registry_group_under_every_shipped_config_is_checked_offline():
    setups = scorer_setups()
    assert {group for group, *_ in setups} == set(METRIC_GROUPS.values())
    assert {"vc", "demo"} <= set(shipped_configs())
    assert {c for *_, used in setups for c in used} == set(shipped_configs())
    (failures,) = [s for s in setups if s[0] == "failures"]
    assert failures[3] == shipped_configs()  # fail: the demo's, and any config's that asks for it
    faster = {options["model"] for group, _, options, _ in setups
              if group == "whisper" and options and options["backend"] == "faster_whisper"}
    assert set(FASTER_WHISPER) <= faster
    assert all(options is None or not options.get("allow_hub") for _, _, options, _ in setups)  # nothing downloaded
