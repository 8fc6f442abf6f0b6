"""Helpers for the tests of index files (engine/snapshot.py): the kinds of damage a file must survive."""
from __future__ import annotations

import json
import struct
from pathlib import Path

from agentcontext.engine.snapshot import PAGE

DAMAGES = ["truncated", "magic", "header byte", "header length", "small section", "empty", "not an index"]


def damage(path: Path, how: str, small_section: str) -> None:
    """Damage the index file at ``path`` one way of ``DAMAGES``; ``small_section`` names a checksummed section."""
    data = bytearray(path.read_bytes())
    header = json.loads(data[8: 8 + struct.unpack("<Q", data[:8])[0]])  # safetensors: its length, then the header
    if how == "truncated":
        data = data[: len(data) - 100]
    elif how == "magic":
        data[:8] = b"ACIDX\x00\x09\x00"
    elif how == "header byte":
        data[30] ^= 0x01
    elif how == "header length":
        data[:8] = struct.pack("<Q", PAGE)
    elif how == "small section":
        data[PAGE + header[small_section]["data_offsets"][0] + 3] ^= 0x40
    elif how == "empty":
        data = bytearray()
    elif how == "not an index":
        data = bytearray(b"SQLite format 3\x00" + bytes(PAGE * 2))
    else:
        raise ValueError(how)
    path.write_bytes(bytes(data))
