"""Adversary registry: protocol name -> 'module:ClassName', imported only when used."""

from __future__ import annotations

import importlib

from clonebench.core.errors import ConfigError

ADVERSARIES: dict[str, str] = {
    "fish_s2_http": "clonebench.adversary.fish_s2_http:FishS2HTTP",
    "s2cpp_http": "clonebench.adversary.s2cpp_http:S2CppHTTP",
    "openai_speech": "clonebench.adversary.openai_speech:OpenAISpeech",
    "cosyvoice_http": "clonebench.adversary.cosyvoice_http:CosyVoiceHTTP",
    "zonos2_http": "clonebench.adversary.zonos2_http:Zonos2HTTP",
    "gpt_sovits_http": "clonebench.adversary.gpt_sovits_http:GPTSoVITSHTTP",
    "sglang_omni_speech": "clonebench.adversary.sglang_omni_speech:SGLangOmniSpeech",
    "triton_kserve": "clonebench.adversary.triton_kserve:TritonKServe",
}


def adversary_class(protocol: str):
    try:
        target = ADVERSARIES[protocol]
    except KeyError:
        raise ConfigError(
            f"adversary.protocol={protocol!r} is not registered; known: {sorted(ADVERSARIES)}"
        ) from None
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)
