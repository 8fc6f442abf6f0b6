"""Write a pack back out as a ``nenjo.knowledge.v1`` folder (``manifest.yaml`` + ``docs/...md``) that installs to the
same content: selectors, titles, summaries, kinds, tags, typed edges in declared order and the exact bodies.

The folder is built beside the target and renamed into place, so a failure leaves no half-written pack; an
existing target must be an empty folder (an export never overwrites files), and links are refused.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from .. import access, copies, safe_yaml
from ..errors import ValidationError
from ..workspace import Workspace
from .manifest import KNOWLEDGE_SCHEMA, SLUG_RE, check_pack_name, slugify
from .packs import get_pack


def _source_path(stored: Any, selector: str, taken: set[str]) -> str:
    """The doc's own source path when it is a safe relative ``.md`` path not used yet, else one derived from
    the selector (``design.agents`` -> ``docs/design/agents.md``)."""
    if isinstance(stored, str) and stored.endswith(".md"):
        path = PurePosixPath(stored)
        if not path.is_absolute() and ".." not in path.parts and "\\" not in stored and stored not in taken:
            return stored
    base = "docs/" + selector.replace(".", "/")
    candidate, n = f"{base}.md", 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}.md"
    return candidate


def _manifest(ws: Workspace, pack: str, record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    nodes = ws.store.find_nodes(namespace=pack, order="key")
    outbound: dict[str, list[Any]] = {}
    for edge in ws.store.edges(namespace=pack):
        outbound.setdefault(edge.src, []).append(edge)
    docs, files, taken = [], {}, set()
    for node in nodes:
        path = _source_path((node.props or {}).get("source_path"), node.key, taken)
        taken.add(path)
        files[path] = node.content
        entry: dict[str, Any] = {"selector": node.key, "source_path": path, "title": node.title,
                                 "summary": node.summary, "kind": node.kind, "tags": list(node.tags)}
        related = []
        for edge in sorted(outbound.get(node.id, []), key=lambda e: (e.position, e.type, e.dst)):
            item = {"type": edge.type, "target": edge.dst.split("/", 1)[1]}
            if (edge.props or {}).get("description"):
                item["description"] = edge.props["description"]
            related.append(item)
        if related:
            entry["related"] = related
        docs.append(entry)
    slug = record.get("slug") if SLUG_RE.match(str(record.get("slug", ""))) else slugify(pack.split(":", 1)[1])
    body = {"name": record.get("name") or slug, "pack_id": record.get("pack_id") or slug, "selector": pack,
            "docs": docs}
    return {"schema": KNOWLEDGE_SCHEMA, "slug": slug, "manifest": body}, files


def export_pack(ws: Workspace, pack: str, folder: str | os.PathLike, principal: str | None = None
                ) -> dict[str, Any]:
    """Write ``pack`` (current versions) to ``folder``; returns the pack, the folder, the doc count and the files."""
    check_pack_name(pack)
    access.require(ws, principal, pack, "read", "export", pack)  # the whole pack: an export is a copy of it
    record = get_pack(ws, pack, principal)
    target = Path(folder)
    if target.is_symlink():
        raise ValidationError(f"refusing to export into {target}: it is a link", path=str(target))
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValidationError(f"{target} exists and is not an empty folder; export into a new folder",
                              path=str(target))
    manifest, files = _manifest(ws, pack, record)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        (tmp / "manifest.yaml").write_text(
            f"# {pack} exported by agentcontext; install with `agentcontext pack add {target.name}`\n"
            + safe_yaml.dump(manifest, width=100), encoding="utf-8")
        for rel, content in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.encode("utf-8"))  # exact bytes: no newline translation
        if target.exists():
            target.rmdir()
        os.replace(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ValidationError(f"cannot write the pack to {target}: {exc}", path=str(target)) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    who = access.effective_principal(ws, principal)
    ws.store.append_audit(who, "pack.export", pack, "ok", {"path": str(target.resolve()), "docs": len(files)})
    copies.record(ws.store, "pack.export", target, [pack], [n.id for n in ws.store.find_nodes(
        namespace=pack, with_content=False, order="none")], who)
    return {"pack": pack, "path": str(target), "docs": len(files),
            "files": ["manifest.yaml", *sorted(files)]}
