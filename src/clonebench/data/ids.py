"""Ids that become file names: the rule every manifest row's ids must meet, checked before any request.

A speaker id names a folder of generated audio, and any id may name a file (with an extension and the
temporary suffix of an atomic write added). A file name is at most 255 bytes (NAME_MAX) and cannot hold a
path separator or NUL, so an id that breaks these rules would be refused by the file system only after its
WAV was paid for; it is refused at validation instead, naming the field.
"""

from __future__ import annotations

# Ids may become file and folder names (speaker folders, and names with extensions and temporary suffixes
# added by atomic writes): a name is at most 255 bytes, so an id is limited to 200 bytes of UTF-8.
ID_FIELDS = ("dataset_name", "split", "pair_id", "speaker_id", "manifest_variant")
MAX_ID_BYTES = 200


def id_problem(name: str, value: str) -> str | None:
    if any(c in value for c in "/\\\x00") or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value):
        return (f"field '{name}' {value[:40]!r} contains a path separator, NUL or control character, so it cannot be "
                "part of a file name; use letters, digits, '-', '_' or '.'")
    if value.strip(".") == "":
        return f"field '{name}' {value!r} is only dots, which is not usable as a file name"
    size = len(value.encode("utf-8"))
    if size > MAX_ID_BYTES:
        return (f"field '{name}' is {size} bytes in UTF-8 ({len(value)} characters), over the {MAX_ID_BYTES}-byte "
                "limit for ids (they become file names, limited to 255 bytes); shorten it")
    return None
