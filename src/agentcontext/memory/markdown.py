"""Markdown round trips: one file per memory, YAML frontmatter + the text as the body (seed 003).

Export writes ``<id>.md`` files atomically (temp file + rename) and refuses to write through links;
stale files in the folder are never deleted. Import reads every ``*.md`` file, refuses links,
validates all of them (required fields, duplicate keys, duplicate ids, timestamps) before anything
changes, and leaves unchanged memories exactly as they were (no new version, no new ``updated_at``).
"""
from __future__ import annotations

import os
import re
import stat
import tempfile
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from ..errors import ValidationError
from ..model import Node, to_utc_iso

REQUIRED = ("id", "created_at", "updated_at")
RESERVED = ("id", "created_at", "updated_at", "conversation_id", "user_id")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")

try:  # the C loader when PyYAML was built with libyaml
    _BaseLoader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _BaseLoader = yaml.SafeLoader


class _StrictLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loading that rejects a key given twice in one mapping."""


def _mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
    keys = [loader.construct_object(k, deep=deep) for k, _ in node.value]
    dupes = sorted({str(k) for k in keys if keys.count(k) > 1})
    if dupes:
        raise ValidationError(f"duplicate frontmatter field(s): {', '.join(dupes)}", fields=dupes)
    return {k: loader.construct_object(v, deep=deep) for k, (_, v) in zip(keys, node.value)}


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _is_link(path: Path) -> bool:
    """A symlink, or on Windows a junction/reparse point."""
    if path.is_symlink():
        return True
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    attrs = getattr(st, "st_file_attributes", 0)
    return bool(attrs & getattr(stat, "FILE_ATTRIBUTE_REPARSE_POINT", 0))


def file_name(memory_id: str) -> str:
    safe = _SAFE_NAME.sub("_", memory_id).strip("._") or "memory"
    return f"{safe}.md"


def render(node: Node) -> str:
    props = node.props or {}
    meta = dict(props.get("metadata") or {})
    front: dict[str, Any] = {"id": node.id, "created_at": props.get("created_at"),
                             "updated_at": props.get("updated_at")}
    if "type" in meta:
        front["type"] = meta.pop("type")
    else:
        front["kind"] = meta.pop("kind", "memory")
    for field in ("conversation_id", "user_id"):
        if props.get(field) is not None:
            front[field] = props[field]
    for key in sorted(meta):
        if key in front or key in RESERVED or key in ("type", "kind"):
            continue
        front[key] = meta[key]
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, default_flow_style=False)
    body = node.content if node.content.endswith("\n") else node.content + "\n"
    return f"---\n{head}---\n\n{body}"


def atomic_write(path: Path, text: str) -> None:
    if _is_link(path):
        raise ValidationError(f"refusing to overwrite {path}: it is a link; remove it or export elsewhere",
                              path=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_folder(nodes: list[Node], folder: Path) -> list[str]:
    """Write one file per memory; returns the paths written (stale files stay)."""
    if _is_link(folder):
        raise ValidationError(f"refusing to export into {folder}: it is a link", path=str(folder))
    names: dict[str, str] = {}
    for node in nodes:
        name = file_name(node.id)
        if name in names:
            raise ValidationError(f"memory ids {names[name]!r} and {node.id!r} map to the same file name {name}",
                                  file=name)
        names[name] = node.id
    for node in nodes:
        if _is_link(folder / file_name(node.id)):
            raise ValidationError(f"refusing to overwrite {folder / file_name(node.id)}: it is a link",
                                  path=str(folder / file_name(node.id)))
    written = []
    for node in nodes:
        path = folder / file_name(node.id)
        atomic_write(path, render(node))
        written.append(str(path))
    return written


def _timestamp(value: Any, field: str, where: str) -> str:
    if isinstance(value, datetime):
        value = value.isoformat()
    elif isinstance(value, date):
        value = value.isoformat()
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{where}: {field} must be an ISO-8601 timestamp", file=where, field=field)
    try:
        to_utc_iso(value)
    except ValidationError as exc:
        raise ValidationError(f"{where}: {field} {value!r} is not an ISO-8601 timestamp", file=where,
                              field=field) from exc
    return value


def parse(text: str, where: str) -> dict[str, Any]:
    """One Markdown memory file -> an import item (id, content, metadata, timestamps)."""
    if not text.startswith("---"):
        raise ValidationError(f"{where}: missing YAML frontmatter (the file must start with ---)", file=where)
    match = re.match(r"^---[ \t]*\r?\n(.*?)^---[ \t]*\r?\n?(.*)\Z", text, re.S | re.M)
    if not match:
        raise ValidationError(f"{where}: the frontmatter is not closed by a --- line", file=where)
    try:
        front = yaml.load(match.group(1), Loader=_StrictLoader)
    except ValidationError as exc:
        raise ValidationError(f"{where}: {exc.message}", file=where, **exc.data) from exc
    except yaml.YAMLError as exc:
        raise ValidationError(f"{where}: malformed YAML frontmatter: {exc}", file=where) from exc
    if not isinstance(front, dict):
        raise ValidationError(f"{where}: the frontmatter must be a mapping of fields", file=where)
    missing = [f for f in REQUIRED if f not in front]
    if "type" not in front and "kind" not in front:
        missing.append("type or kind")
    if missing:
        raise ValidationError(f"{where}: missing required field(s): {', '.join(missing)}", file=where,
                              missing=missing)
    if not isinstance(front["id"], str) or not front["id"].strip():
        raise ValidationError(f"{where}: id must be a non-empty string", file=where)
    body = match.group(2)
    if body.startswith("\r\n"):
        body = body[2:]
    elif body.startswith("\n"):
        body = body[1:]
    content = body[:-1] if body.endswith("\n") else body
    if not content.strip():
        raise ValidationError(f"{where}: the memory text (the body after the frontmatter) is empty", file=where)
    metadata = {k: (v.isoformat() if isinstance(v, (datetime, date)) else v)
                for k, v in front.items() if k not in RESERVED}
    if metadata.get("kind") == "memory" and "type" not in front:
        metadata.pop("kind")
    for field in ("conversation_id", "user_id"):
        if front.get(field) is not None and not isinstance(front[field], (str, int)):
            raise ValidationError(f"{where}: {field} must be text", file=where, field=field)
    return {
        "id": front["id"], "content": content, "metadata": metadata,
        "created_at": _timestamp(front["created_at"], "created_at", where),
        "updated_at": _timestamp(front["updated_at"], "updated_at", where),
        "conversation_id": None if front.get("conversation_id") is None else str(front["conversation_id"]),
        "user_id": None if front.get("user_id") is None else str(front["user_id"]),
    }


def read_items(path: Path) -> list[dict[str, Any]]:
    """Every memory in a folder of ``*.md`` files (or one file), all validated before returning."""
    if _is_link(path):
        raise ValidationError(f"refusing to import from {path}: it is a link", path=str(path))
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".md" and not p.name.startswith("."))
    elif path.is_file():
        files = [path]
    else:
        raise ValidationError(f"nothing to import at {path}: no such file or folder", path=str(path))
    items: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for file in files:
        if _is_link(file):
            raise ValidationError(f"refusing to import {file}: it is a link", path=str(file))
        item = parse(file.read_text(encoding="utf-8"), str(file))
        if item["id"] in seen:
            raise ValidationError(f"memory id {item['id']!r} is in both {seen[item['id']]} and {file}",
                                  id=item["id"], files=[seen[item["id"]], str(file)])
        seen[item["id"]] = str(file)
        items.append(item)
    return items
