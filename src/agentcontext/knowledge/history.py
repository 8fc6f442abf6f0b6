"""Versions of knowledge docs: who changed what when, an old version, and a unified diff between two.

Every put of a changed doc appends a version (the store keeps them all); deleting a doc appends a
final version marked ``deleted``. Reading history needs read access to the doc, like reading it.
"""
from __future__ import annotations

import difflib
from typing import Any

from .. import access
from ..errors import NotFoundError, ValidationError
from ..model import Node
from ..workspace import Workspace
from .manifest import check_pack_name, check_selector
from .packs import doc_id, get_pack, missing_doc


def _entry(node: Node, deleted_by: str | None = None) -> dict[str, Any]:
    deleted = node.retracted_at is not None
    return {"version": node.version, "at": node.recorded_at, "by": (deleted_by or node.created_by) if deleted
            else node.created_by, "content_hash": node.content_hash, "title": node.title, "deleted": deleted}


def _deleter(ws: Workspace, target: str, at: str | None) -> str | None:
    """Who deleted ``target`` at ``at`` (the audit log knows; the node row keeps its last author)."""
    if at is None:
        return None
    for row in reversed(ws.store.audit(since=at)):
        if row["target"] == target and row["action"] in ("doc.delete", "pack.install") and row["outcome"] == "ok":
            return row["principal"]
    return None


def _versions(ws: Workspace, pack: str, selector: str, principal: str | None, action: str) -> list[Node]:
    check_pack_name(pack)
    check_selector(selector, "selector")
    access.require_doc(ws, principal, pack, selector, "read", action)  # before the lookup: reveals nothing
    get_pack(ws, pack, principal)
    versions = ws.store.node_versions(doc_id(pack, selector))
    if not versions:
        raise missing_doc(ws, pack, selector, principal,
                          hint="it never existed there; search_knowledge finds selectors")
    return versions


def history(ws: Workspace, pack: str, selector: str, principal: str | None = None) -> list[dict[str, Any]]:
    """Every version of a doc, oldest first: version, at, by, content_hash, title, deleted."""
    target = doc_id(pack, selector)
    return [_entry(n, _deleter(ws, target, n.recorded_at) if n.retracted_at else None)
            for n in _versions(ws, pack, selector, principal, "history")]


def _as_text(node: Node) -> list[str]:
    head = [f"title: {node.title}", f"summary: {node.summary}", f"kind: {node.kind}",
            f"tags: {', '.join(node.tags)}", ""]
    return [line + "\n" for line in head] + node.content.splitlines(keepends=True)


def diff(ws: Workspace, pack: str, selector: str, v1: int, v2: int, principal: str | None = None) -> dict[str, Any]:
    """A unified diff of one doc between versions ``v1`` and ``v2`` (metadata header and body)."""
    for name, value in (("v1", v1), ("v2", v2)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValidationError(f"{name} must be a version number (1 or more), got {value!r}")
    by_version = {n.version: n for n in _versions(ws, pack, selector, principal, "diff")}
    for value in (v1, v2):
        if value not in by_version:
            raise NotFoundError(f"{pack} {selector} has no version {value}; it has {sorted(by_version)}",
                                pack=pack, selector=selector, version=value, versions=sorted(by_version))
    a, b = by_version[v1], by_version[v2]
    lines = list(difflib.unified_diff(_as_text(a), _as_text(b), fromfile=f"{pack}/{selector}@v{v1}",
                                      tofile=f"{pack}/{selector}@v{v2}"))
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return {"pack": pack, "selector": selector, "v1": v1, "v2": v2, "changed": bool(lines), "diff": text,
            "from": _entry(a), "to": _entry(b)}
