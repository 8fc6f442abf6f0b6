"""Copies of the store's content that the library wrote outside it: every export and save, recorded in the store.

An erasure cannot reach a file it handed over, so it says where those files are: each export or save records
what was written (``what``), where (``path``, or None when the text went back to the caller), when, by whom,
which namespaces it read and the ids it held (up to ``MAX_IDS``; beyond that only the namespaces, and an
erasure counts every copy of a namespace it touched). ``holding`` answers which copies may hold given records.
The records hold ids and paths, never content.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any, Iterable, Sequence

from .model import utcnow

KIND = "external_copy"
MAX_IDS = 5000


def record(store: Any, what: str, path: str | os.PathLike | None, namespaces: Iterable[str],
           ids: Sequence[str] | None = None, actor: str = "") -> dict[str, Any]:
    """Note that ``what`` wrote a copy of ``ids`` (in ``namespaces``) to ``path``."""
    at = utcnow()
    ids = list(dict.fromkeys(ids or ()))
    value = {"what": what, "path": str(Path(path).resolve()) if path is not None else None, "at": at,
             "by": actor, "namespaces": sorted(set(namespaces)), "count": len(ids),
             "ids": ids if len(ids) <= MAX_IDS else None}
    store.put_record(KIND, f"{at}\x1f{uuid.uuid4().hex[:8]}", value, actor=actor)
    return value


def holding(store: Any, ids: Iterable[str], namespaces: Iterable[str]) -> list[dict[str, Any]]:
    """The recorded copies that may hold any of ``ids``: those listing one of them, and those of a namespace in
    ``namespaces`` that were too large to list their ids. Oldest first, without the id lists."""
    wanted, spaces = set(ids), set(namespaces)
    out = []
    for _, value in store.list_records(KIND):
        listed = value.get("ids")
        held = sorted(wanted.intersection(listed)) if listed is not None else None
        if held or (listed is None and spaces.intersection(value.get("namespaces") or ())):
            out.append({k: v for k, v in value.items() if k != "ids"} | {
                "holds": held if held is not None else "unknown (too many ids to record); may hold any of them"})
    return out
