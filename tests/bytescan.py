"""Search files for bytes an erasure must have removed: the secret itself and its tail as the text index stores it.

FTS5 stores a term after the ones before it in a leaf with their shared prefix left out, so the whole secret
may not appear as one run of bytes even when its term is there; its last ``TAIL`` characters always do
(secrets here are random hex, which no neighbouring term shares that far).
"""
from __future__ import annotations

import uuid
from pathlib import Path

TAIL = 12


def new_secret(prefix: str = "zq") -> str:
    """A word no tokenizer splits or stems into something else, unique to one test: random hex that ends in a
    digit (one that ends in a letter is stemmed ~6% of the time: '...12e' is kept as '...12' by the text index
    and the memory index's word counts, and the whole secret is then in neither)."""
    return prefix + uuid.uuid4().hex[:19] + str(uuid.uuid4().int % 10)


def needles(secret: str) -> list[bytes]:
    return [secret.encode(), secret[-TAIL:].encode()]


def hits(paths: list[Path], secret: str) -> dict[str, int]:
    """{file name: how many times any needle occurs} for the files that hold one."""
    found: dict[str, int] = {}
    for path in paths:
        if not path.is_file():
            continue
        data = path.read_bytes()
        count = sum(data.count(n) for n in needles(secret))
        if count:
            found[str(path)] = count
    return found


def store_files(db: Path) -> list[Path]:
    """The store file and its WAL and shared-memory files."""
    return [Path(f"{db}{suffix}") for suffix in ("", "-wal", "-shm")]


def folder_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]
