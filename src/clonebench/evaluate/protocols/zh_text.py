"""Chinese text for WER/CER as rvcbench 2.2.1 prepares it, with its converter and segmenter pinned.

Upstream (``rvcbench/evaluation/scorers/text.py``): a text holds CJK when a character is in U+4E00..U+9FFF;
``_to_simplified_zh`` converts with whatever is installed: OpenCC ``t2s``, else hanziconv, else nothing (its
``rvcbench[eval]`` extra installs neither, so a default install leaves Traditional characters as they are).
``_normalize_zh_text``: convert to Simplified, map full-width punctuation to ASCII, delete every character
that is not a word character, whitespace or CJK, collapse whitespace, delete whitespace between two CJK
characters; then ``jieba.lcut`` segments it.

clonebench pins one converter and one segmenter and refuses to run without exactly them
(``check_requirements``: before any scoring, naming the package and the command that installs it):

- converter: the ``OpenCC`` wheel (``opencc`` on PyPI, C++ with its compiled dictionaries inside), config
  ``t2s``: the first branch of upstream's ``_to_simplified_zh`` (``OpenCC("t2s").convert``), equal to upstream on
  a machine where this same package is installed;
- segmenter: ``jieba`` with its bundled dictionary, accurate mode with HMM (``jieba.lcut``'s defaults).

Versions and the sha256 of every data file that decides the output (OpenCC's ``t2s.json`` and its ``.ocd2``
dictionaries, jieba's ``dict.txt`` and HMM tables) are in ``protocol()``, hence in the WER scorer's fingerprint.

Written here rather than imported from rvcbench: the peer is installed ``--no-deps`` as a test reference only,
and its converter choice is exactly what this module pins. The tests compare every function with upstream's.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path

from clonebench.core.errors import DependencyError

CONVERTER_PACKAGE, CONVERTER_VERSION, CONVERTER_CONFIG = "OpenCC", "1.4.2", "t2s"
SEGMENTER_PACKAGE, SEGMENTER_VERSION = "jieba", "0.42.1"
INSTALL = f"pip install '{CONVERTER_PACKAGE.lower()}=={CONVERTER_VERSION}' '{SEGMENTER_PACKAGE}=={SEGMENTER_VERSION}'"
JIEBA_DATA = ("dict.txt", "finalseg/prob_start.py", "finalseg/prob_trans.py", "finalseg/prob_emit.py")

# upstream's full-width punctuation map, applied in this order (text.py ``_ZH_PUNCT_MAP``)
PUNCTUATION_MAP = (
    ("，", ", "), ("。", "."), ("：", ":"), ("；", ";"), ("？", "?"), ("！", "!"), ("（", "("), ("）", ")"),
    ("【", "["), ("】", "]"), ("《", "<"), ("》", ">"), ("“", '"'), ("”", '"'), ("‘", "'"), ("’", "'"),
    ("、", ","), ("—", "-"), ("…", "..."), ("·", "."), ("「", '"'), ("」", '"'), ("『", '"'), ("』", '"'),
)
_NOT_KEPT = re.compile(r"[^\w\s\u4e00-\u9fff]")
_SPACE_BETWEEN_CJK = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")


def contains_cjk(text: str) -> bool:
    """Upstream's test: any character in U+4E00..U+9FFF (CJK Unified Ideographs, no extensions)."""
    return any("\u4e00" <= ch <= "\u9fff" for ch in str(text or ""))


def _installed_version(distribution: str) -> str | None:
    import importlib.metadata as metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def check_requirements() -> None:
    """Raise DependencyError unless the pinned converter and segmenter are the ones importable."""
    problems = []
    found = _installed_version(CONVERTER_PACKAGE)
    try:
        import opencc

        module_version = getattr(opencc, "__version__", None)  # opencc-python-reimplemented has none
    except ImportError:
        module_version = None
    if found != CONVERTER_VERSION or module_version != CONVERTER_VERSION:
        problems.append(f"{CONVERTER_PACKAGE}=={CONVERTER_VERSION} (installed: {found or 'none'}, the importable "
                        f"`opencc` module says {module_version or 'nothing'}; opencc-python-reimplemented and "
                        "hanziconv convert differently and are refused)")
    found = _installed_version(SEGMENTER_PACKAGE)
    if found != SEGMENTER_VERSION:
        problems.append(f"{SEGMENTER_PACKAGE}=={SEGMENTER_VERSION} (installed: {found or 'none'})")
    if problems:
        raise DependencyError("Chinese WER/CER (rvcbench's rule: Traditional->Simplified, jieba words) needs the "
                              f"pinned {' and '.join(problems)}. Fix: {INSTALL} (or bash scripts/setup.sh)")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@lru_cache(maxsize=1)
def _converter():
    check_requirements()
    from opencc import OpenCC

    return OpenCC(CONVERTER_CONFIG)


@lru_cache(maxsize=1)
def _segmenter():
    """jieba's tokenizer on its bundled dictionary, its prefix dictionary built in memory from ``dict.txt``.

    ``jieba.initialize()`` would load (or write) a marshal cache in the system temp folder: a file outside the run
    that any process can replace, deciding the segmentation. ``gen_pfdict`` on ``dict.txt`` is what it caches."""
    check_requirements()
    import jieba

    tokenizer = jieba.Tokenizer()
    tokenizer.FREQ, tokenizer.total = tokenizer.gen_pfdict(tokenizer.get_dict_file())
    tokenizer.initialized = True
    return tokenizer


def to_simplified(text: str) -> str:
    """Upstream's ``_to_simplified_zh`` on its OpenCC branch: ``OpenCC("t2s").convert(text)``."""
    return _converter().convert(str(text or ""))


def normalise(text: str) -> str:
    """Upstream's ``_normalize_zh_text``."""
    s = to_simplified(str(text or ""))
    for full_width, ascii_text in PUNCTUATION_MAP:
        s = s.replace(full_width, ascii_text)
    s = _NOT_KEPT.sub("", s)
    s = " ".join(s.split())
    s = _SPACE_BETWEEN_CJK.sub("", s)
    return s.strip()


def words(normalised: str) -> list[str]:
    """``" ".join(jieba.lcut(normalised)).split()``: the tokens jiwer scores (whitespace tokens dropped)."""
    return " ".join(_segmenter().lcut(normalised)).split()


@lru_cache(maxsize=1)
def protocol() -> dict:
    """Versions and data-file hashes of the pinned converter and segmenter (part of the WER fingerprint)."""
    check_requirements()
    import jieba
    import opencc

    config = Path(_converter().config)
    files = {config.name: _sha256(config)}
    for name in sorted(set(re.findall(r'"file"\s*:\s*"([^"]+)"', config.read_text(encoding="utf-8")))):
        files[name] = _sha256(config.parent / name)
    jieba_root = Path(jieba.__file__).parent
    return {
        "cjk": "U+4E00..U+9FFF",
        "converter": {"package": CONVERTER_PACKAGE, "version": opencc.__version__, "config": CONVERTER_CONFIG,
                      "files_sha256": files, "upstream_branch": "OpenCC('t2s') (the first of text._to_simplified_zh)"},
        "segmenter": {"package": SEGMENTER_PACKAGE, "version": jieba.__version__,
                      "mode": "lcut: accurate, HMM on, prefix dictionary built from dict.txt in memory",
                      "files_sha256": {name: _sha256(jieba_root / name) for name in JIEBA_DATA}},
        "punctuation_map_sha256": hashlib.sha256(json.dumps(PUNCTUATION_MAP).encode()).hexdigest(),
    }
