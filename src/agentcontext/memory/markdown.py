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

from .. import files, safe_yaml
from ..errors import ValidationError
from ..model import Node, to_utc_iso

REQUIRED = ("id", "created_at", "updated_at")
RESERVED = ("id", "created_at", "updated_at", "conversation_id", "user_id")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


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
    head = safe_yaml.dump(front)
    body = node.content if node.content.endswith("\n") else node.content + "\n"
    return f"---\n{head}---\n\n{body}"


def atomic_write(path: Path, text: str) -> None:
    if files.is_link(path):
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
    if files.is_link(folder):
        raise ValidationError(f"refusing to export into {folder}: it is a link", path=str(folder))
    names: dict[str, str] = {}
    for node in nodes:
        name = file_name(node.id)
        if name in names:
            raise ValidationError(f"memory ids {names[name]!r} and {node.id!r} map to the same file name {name}",
                                  file=name)
        names[name] = node.id
    for node in nodes:
        if files.is_link(folder / file_name(node.id)):
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
    front = safe_yaml.load(match.group(1), where, "YAML frontmatter", line_offset=1)
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
    metadata = {k: _plain(v) for k, v in front.items() if k not in RESERVED}
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


def _plain(value: Any) -> Any:
    """Frontmatter values as JSON holds them: timestamps (at any depth) become ISO text."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def read_items(path: Path) -> list[dict[str, Any]]:
    """Every memory in a folder of ``*.md`` files (or one file), all validated before returning.

    Links are refused at every step below the folder named (the folder itself, and each file, opened
    without following links); directories, FIFOs and devices named ``*.md``, non-UTF-8 text and bad
    frontmatter are ``ValidationError`` naming the file. Nothing is written here."""
    if files.is_link(path):
        raise ValidationError(f"refusing to import from {path}: it is a link", path=str(path), file=str(path))
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise ValidationError(f"nothing to import at {path}: no such file or folder", path=str(path)) from None
    texts: list[tuple[Path, str]] = []
    if stat.S_ISDIR(mode):
        dir_fd = files.open_folder(path)
        try:
            for name in files.names(path, dir_fd, ".md"):
                texts.append((path / name, files.read_text(path / name, dir_fd, "Markdown file")))
        finally:
            if dir_fd is not None:
                os.close(dir_fd)
    else:
        texts.append((path, files.read_text(path, None, "Markdown file")))
    items: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for file, text in texts:
        item = parse(text, str(file))
        if item["id"] in seen:
            raise ValidationError(f"memory id {item['id']!r} is in both {seen[item['id']]} and {file}",
                                  id=item["id"], files=[seen[item["id"]], str(file)])
        seen[item["id"]] = str(file)
        items.append(item)
    return items
