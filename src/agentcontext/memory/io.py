"""Export and import of memories as JSON text, a dict, or Markdown files (see ``markdown.py``).

Plain functions over nodes and parsed items: ``AgentMemory.export`` and ``AgentMemory.import_data``
read the store, call these, and write what ``plan_import`` says.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..model import Node, to_utc_iso
from .links import entity_ids
from .records import KIND, MAX_NESTING, build_node, check_nesting, now_iso, to_memory

FORMATS = ("json", "dict", "markdown")
SCHEMA = "agentcontext.memory.v1"


def export_nodes(namespace: str, nodes: list[Node], format: str, destination: Any) -> Any:
    """The memories ``nodes`` of ``namespace`` as JSON text, a dict, Markdown text (one) or files (destination=)."""
    from . import markdown

    if format not in FORMATS:
        raise ValidationError(f"unknown export format {format!r}; use json, dict or markdown", format=format)
    if format == "markdown":
        if destination is not None:
            return markdown.write_folder(nodes, Path(destination))
        if len(nodes) != 1:
            raise ValidationError(f"the selection holds {len(nodes)} memories; Markdown text is returned for exactly "
                                  "one, so narrow it (type=, conversation_id=) or pass destination= for a folder",
                                  count=len(nodes))
        return markdown.render(nodes[0])
    data = {"schema": SCHEMA, "namespace": namespace, "memories": [to_memory(n) for n in nodes]}
    for item in data["memories"]:
        item.pop("memory_id", None)
        item.pop("timestamp", None)
    if format == "dict":
        return data
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    if destination is not None:
        markdown.atomic_write(Path(destination), text)
    return text


def _parse_items(data: Any, format: str) -> list[dict[str, Any]]:
    if format == "json":
        if isinstance(data, Path) or (isinstance(data, str) and not data.lstrip().startswith(("{", "["))):
            data = Path(data).read_text(encoding="utf-8")
        try:
            data = json.loads(data) if isinstance(data, (str, bytes)) else data
        except json.JSONDecodeError as exc:
            raise ValidationError(f"import data is not valid JSON: {exc}") from exc
        except RecursionError:
            raise ValidationError(f"import data is nested too deeply to read (a memory's metadata may nest at "
                                  f"most {MAX_NESTING} levels)", limit=MAX_NESTING) from None
    if isinstance(data, dict):
        data = data.get("memories")
    if not isinstance(data, list):
        raise ValidationError("import data must be a list of memories or a dict with a 'memories' list")
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, raw in enumerate(data):
        if isinstance(raw, str):
            raw = {"content": raw}
        if not isinstance(raw, dict) or not isinstance(raw.get("content"), str) or not raw["content"].strip():
            raise ValidationError(f"memory {i}: needs a non-empty 'content' string", index=i)
        if raw.get("metadata") is not None and not isinstance(raw["metadata"], dict):
            raise ValidationError(f"memory {i}: 'metadata' must be a mapping", index=i)
        check_nesting(raw.get("metadata"), f"memory {i}: 'metadata'")
        for stamp in ("created_at", "updated_at"):
            if raw.get(stamp) is not None:
                to_utc_iso(raw[stamp])
        mid = raw.get("id")
        if mid is not None:
            if mid in seen:
                raise ValidationError(f"memory id {mid!r} appears twice in the import", id=mid)
            seen.add(mid)
        items.append(raw)
    return items


def parse_import(data: Any, format: str) -> list[dict[str, Any]]:
    """The memories in ``data`` (JSON text or file, a dict or list, or a Markdown folder), all validated."""
    from . import markdown

    if format not in FORMATS:
        raise ValidationError(f"unknown import format {format!r}; use json, dict or markdown", format=format)
    if format == "markdown":
        return markdown.read_items(Path(data) if not isinstance(data, Path) else data)
    return _parse_items(data, format)


class ImportResult(int):
    """How many memories an import changed (an int, as seed 003 returns) and ``skipped``: the items left out
    because an erasure removed their id or an entity they name (``{"id", "reason"}`` each)."""

    skipped: list[dict[str, Any]]

    def __new__(cls, count: int, skipped: list[dict[str, Any]] | None = None) -> "ImportResult":
        obj = super().__new__(cls, count)
        obj.skipped = list(skipped or [])
        return obj


def without_erased(items: list[dict[str, Any]], store: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The items an erasure did not remove, and the skipped ones: no import brings an erased id or entity back."""
    ids = [str(i["id"]) for i in items if i.get("id")]
    names = [e for i in items for e in entity_ids(i.get("metadata"))]
    gone = store.erased([*ids, *names]) if ids or names else set()
    if not gone:
        return items, []
    keep, skipped = [], []
    for item in items:
        mid = str(item.get("id") or "")
        named = [e for e in entity_ids(item.get("metadata")) if e in gone]
        if mid in gone:
            skipped.append({"id": mid, "reason": "erased"})
        elif named:
            skipped.append({"id": mid or None, "reason": f"names the erased entity {named[0]}"})
        else:
            keep.append(item)
    return keep, skipped


Change = tuple[Node, str, dict[str, Any], str]  # (stored node, new content, new metadata, updated_at)


@dataclass
class ImportPlan:
    """What an import writes: new memories to store, changes to existing ones, and the texts both embed."""

    new: list[dict[str, Any]] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)


def plan_import(items: list[dict[str, Any]], existing: dict[str, Node], namespace: str,
                places: bool = False) -> ImportPlan:
    """What importing ``items`` does, given the ``existing`` nodes of their ids. Every item is checked exactly as
    the write will check it, so a bad one is refused before anything is written; an id owned by anything but this
    memory store is refused; unchanged memories are left out, so a re-import is a no-op."""
    for mid, node in existing.items():
        if node.kind != KIND or node.namespace != namespace:
            raise ValidationError(f"id {mid!r} belongs to a {node.kind} in {node.namespace}, not to this memory store",
                                  id=mid)
    plan = ImportPlan()
    for item in items:
        node = existing.get(item.get("id") or "")
        props = (node.props or {}) if node is not None else {}
        meta = item.get("metadata") or {}
        text = build_node(namespace, item["content"], meta, item.get("conversation_id"),
                          item.get("user_id"), places=places).embed_text or ""
        if node is None:
            plan.texts.append(text)
            plan.new.append({k: item.get(k) for k in ("id", "content", "metadata", "conversation_id", "user_id",
                                                       "created_at", "updated_at")})
            continue
        if node.content == item["content"] and (props.get("metadata") or {}) == meta:
            continue
        file_updated = item.get("updated_at")
        updated = str(file_updated) if file_updated is not None and str(file_updated) != str(
            props.get("updated_at")) else now_iso()
        plan.texts.append(text)
        plan.changed.append((node, item["content"], dict(meta), updated))
    return plan
