"""Pairs from a Hugging Face dataset (``dataset.use_hf_dataset=true``).

Rows carry the manifest columns plus two audio columns (``prompt_audio``, ``target_audio`` by
default) holding WAV files. Audio is read undecoded (``Audio(decode=False)``: the file's own bytes,
so hashes match the files a manifest would point at) and verified exactly like manifest audio.
``datasets`` honours its offline cache itself (``HF_DATASETS_OFFLINE=1`` / ``HF_HUB_OFFLINE=1``);
a local folder of parquet/json files or a ``save_to_disk`` folder also works as ``hf_path``.
"""

from __future__ import annotations

from pathlib import Path

from clonebench.core.errors import ConfigError
from clonebench.core.records import PairRow, Sample
from clonebench.core.untrusted import UntrustedFileError, read_bytes
from clonebench.data.manifest import (
    MAX_AUDIO_FILE_BYTES,
    Selection,
    samples_from_rows,
    verify_audio,
)


def _load(hf_path: str, hf_config: str | None, split: str):
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("dataset.use_hf_dataset=true needs the 'datasets' package: pip install -e '.[hf]'") from exc
    local = Path(hf_path)
    if local.is_dir() and any((local / name).exists() for name in ("state.json", "dataset_dict.json")):
        loaded = datasets.load_from_disk(str(local))
        return loaded[split] if isinstance(loaded, datasets.DatasetDict) else loaded
    return datasets.load_dataset(hf_path, hf_config, split=split)


def build_samples_hf(hf_path: str | None, hf_config: str | None, split: str, audio_columns: tuple[str, str],
                     selection: Selection, run_seed: int | None) -> list[Sample]:
    if not hf_path:
        raise ConfigError(
            "dataset.use_hf_dataset=true needs dataset.hf_path (a dataset id or a local dataset folder); "
            "or set dataset.use_hf_dataset=false +dataset.manifest_filename=PATH"
        )
    import datasets

    table = _load(hf_path, hf_config, split)
    missing = [c for c in audio_columns if c not in table.column_names]
    if missing:
        raise ConfigError(
            f"HF dataset {hf_path} split {split} has no column(s) {missing} (has {table.column_names}); "
            "set dataset.hf_audio_columns to the prompt and target audio columns"
        )
    for column in audio_columns:
        if isinstance(table.features[column], datasets.Audio):
            table = table.cast_column(column, datasets.Audio(decode=False))
    rows = table.to_list()
    label = f"HF dataset {hf_path} (split {split})"

    def audio(number: int, row: PairRow, field: str, where: str, problems: list):
        column = audio_columns[0] if field == "prompt_file_name" else audio_columns[1]
        value = rows[number][column]
        data = value.get("bytes") if isinstance(value, dict) else value
        if data is None and isinstance(value, dict) and value.get("path"):
            path = Path(str(value["path"]))
            try:  # a path a dataset row names: a regular file of bounded size, never a FIFO or device
                data = read_bytes(path, max_bytes=MAX_AUDIO_FILE_BYTES, what=f"{where}: column {column}")
            except UntrustedFileError as exc:
                problems.append(str(exc))
                return None
        if not isinstance(data, (bytes, bytearray)):
            problems.append(f"{where}: column {column} holds no audio bytes")
            return None
        expected = row.prompt_sha256 if field == "prompt_file_name" else row.target_sha256
        return verify_audio(bytes(data), expected, where, field, problems, keep_bytes=True)

    return samples_from_rows(label, rows, selection, run_seed, audio)
