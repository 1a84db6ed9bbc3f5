"""Settings of the pairs a run reads: the ``dataset`` config group (a manifest or a Hugging Face dataset)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError


@dataclass(frozen=True)
class DatasetSettings:
    name: str
    use_hf_dataset: bool
    manifest_filename: Path | None
    root_path: Path | None
    manifest_variant: str | None
    speaker_id: str | None
    hf_path: str | None
    hf_config: str | None
    hf_split: str
    hf_audio_columns: tuple[str, str]


def read_dataset(reader: ConfigReader, suite: bool = False) -> DatasetSettings:
    columns = reader.list("dataset.hf_audio_columns", ["prompt_audio", "target_audio"])
    if len(columns) != 2 or not all(isinstance(c, str) for c in columns):
        raise ConfigError(f"{reader.source}: dataset.hf_audio_columns must name two columns [prompt, target]")
    settings = DatasetSettings(
        name=reader.str("dataset.name"),
        use_hf_dataset=reader.bool("dataset.use_hf_dataset"),
        manifest_filename=reader.path("dataset.manifest_filename", None),
        root_path=reader.path("dataset.root_path", None),
        manifest_variant=reader.str("dataset.manifest_variant", "speaker", allow_none=True),
        speaker_id=reader.str("dataset.speaker_id", None, allow_none=True),
        hf_path=reader.str("dataset.hf_path", None, allow_none=True),
        hf_config=reader.str("dataset.hf_config", None, allow_none=True),
        hf_split=reader.str("dataset.hf_split", "test"),
        hf_audio_columns=(columns[0], columns[1]),
    )
    if suite:  # a suite names its own pairs: only dataset.root_path is used (the local copy of its HF dataset)
        if settings.root_path is None:
            raise ConfigError(f"{reader.source}: a suite run reads its audio from a local copy of its Hugging Face "
                              "dataset: set dataset.root_path=DIR (DIR/<hf_config_name>/..., as in the dataset "
                              "repository at the suite's revision)")
        if settings.manifest_filename is not None or settings.use_hf_dataset:
            raise ConfigError(f"{reader.source}: a suite names its own pairs; remove dataset.manifest_filename and "
                              "set dataset.use_hf_dataset=false (configs/suite/* do)")
    elif not settings.use_hf_dataset and settings.manifest_filename is None:
        raise ConfigError(f"{reader.source}: dataset.use_hf_dataset=false needs +dataset.manifest_filename=PATH "
                          "(a JSON or CSV pair manifest)")
    return settings
