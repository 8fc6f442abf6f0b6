"""Plain records shared by every layer: nodes, edges and their versions."""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable


MEMORY_KIND = "memory"  # the node kind of an AgentMemory memory (retrieval tells sources apart by it)
# Ids of the form ``<family><name>/<rest>`` belong to the namespace ``<family><name>`` (docs ``lib:x/sel``, graph
# nodes ``graph:g/id``); ids starting ``policy:`` or ``checkpoint:`` are the policies' and checkpoints'.
NAMESPACE_FAMILIES = ("lib:", "pkg:", "graph:", "memory:")
RESERVED_ID_PREFIXES = (*NAMESPACE_FAMILIES, "policy:", "checkpoint:")
# What context_for gathers sources from (reasoning/service.py), the largest page of a pack's doc list
# (knowledge/catalog.py) and the token size over which lint calls a doc oversize (knowledge/lint.py): here so the
# CLI's help can name them without loading those services.
CONTEXT_KINDS = ("memories", "docs", "decisions", "graph")
MAX_DOCS_PAGE = 500
OVERSIZE_TOKENS = 4000


def utcnow() -> str:
    """The current time as a sortable ISO-8601 UTC string with microseconds."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def to_utc_iso(value: str | datetime | None) -> str | None:
    """Normalise a timestamp (aware, naive-as-UTC, or ISO text) to the store's sortable form."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        dt = datetime.fromtimestamp(float(value), timezone.utc)
    elif isinstance(value, datetime):
        dt = value
    else:
        text = str(value).strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError as exc:
            from .errors import ValidationError

            raise ValidationError(
                f"not an ISO-8601 timestamp: {value!r}; use e.g. 2026-01-31T12:00:00+00:00", value=str(value)
            ) from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def json_text(sort_keys: bool = False, separators: tuple[str, str] = (", ", ": ")) -> Callable[[Any], str]:
    """``json.dumps(x, sort_keys=sort_keys, default=str, separators=separators)`` for a dict or list ``x`` (the same
    text), calling the C encoder directly: ``JSONEncoder.encode`` wraps it in two Python calls and a check per call,
    a fifth of the cost of encoding a memory's props. Falls back to ``JSONEncoder.encode`` without the C encoder."""
    from json import encoder as json_encoder

    item_sep, key_sep = separators
    make = json_encoder.c_make_encoder
    if make is None:
        return json.JSONEncoder(sort_keys=sort_keys, default=str, separators=separators).encode
    escape = json_encoder.encode_basestring_ascii
    # One encoder a thread, made once (making one cost a quarter of encoding a memory's props): its marker dict, which
    # makes a circular value fail as json.dumps fails, holds only the containers being encoded, so it is empty
    # between calls, and is emptied after a call that failed midway.
    mine = threading.local()

    def encode(value: Any) -> str:
        try:
            run, markers = mine.run, mine.markers
        except AttributeError:
            markers = mine.markers = {}
            run = mine.run = make(markers, str, escape, None, key_sep, item_sep, sort_keys, False, True)
        try:
            return "".join(run(value, 0))
        except BaseException:
            markers.clear()
            raise

    return encode


# ``json.dumps(x, default=str, separators=(",", ":"))`` without building an encoder per call (the same text)
_HEAD_JSON = json_text(separators=(",", ":"))


def content_hash(*parts: Any) -> str:
    """A stable sha256 over text parts (JSON for non-strings)."""
    if len(parts) == 1 and type(parts[0]) is str:  # one text (an embed hash): the same bytes, fewer calls
        return hashlib.sha256(parts[0].encode("utf-8") + b"\x1f").hexdigest()
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, str):
            text = part
        elif part is None:
            text = "null"  # what json.dumps(None) gives, without the call
        else:
            text = json.dumps(part, sort_keys=True, default=str)
        h.update(text.encode("utf-8"))
        h.update(b"\x1f")
    return h.hexdigest()


def reserved_namespace(node_id: str) -> str | None:
    """The namespace an id is reserved for (``lib:hr/policy`` -> ``lib:hr``), or None for an ordinary id."""
    head, sep, _ = node_id.partition("/")
    return head if sep and head.startswith(NAMESPACE_FAMILIES) else None


def edge_id(src: str, type: str, dst: str) -> str:
    """Edge ids derive from (src, type, dst), so adding the same edge twice is a no-op."""
    return "e_" + content_hash(src, type, dst)[:32]


@dataclass
class Node:
    id: str
    kind: str
    namespace: str
    key: str = ""
    title: str = ""
    summary: str = ""
    content: str = ""
    props: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    valid_from: str | None = None
    valid_until: str | None = None
    recorded_at: str | None = None
    retracted_at: str | None = None
    version: int = 0
    content_hash: str = ""
    created_by: str = ""
    embed_text: str | None = None  # text to embed; None = not embedded
    tokens: int | None = None  # cached token count of the rendered doc, if the service sets it
    embed_hash: str | None = None  # hash of embed_text, set by the store

    def compute_hash(self, props_json: str | None = None) -> str:
        """sha256 of everything a version is about. ``props_json`` (``json.dumps(props, sort_keys=True,
        default=str)``) may be passed by a caller that serialised the props already."""
        if props_json is None:
            props_json = json.dumps(self.props, sort_keys=True, default=str)
        head = _HEAD_JSON([self.kind, self.key, self.title, self.summary, self.content, sorted(self.tags),
                           self.valid_from, self.valid_until])
        return hashlib.sha256(f"{head}\x1f{props_json}".encode("utf-8", "surrogatepass")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "kind": self.kind, "namespace": self.namespace, "key": self.key,
            "title": self.title, "summary": self.summary, "content": self.content,
            "props": self.props, "tags": list(self.tags), "valid_from": self.valid_from,
            "valid_until": self.valid_until, "recorded_at": self.recorded_at,
            "retracted_at": self.retracted_at, "version": self.version,
            "content_hash": self.content_hash, "created_by": self.created_by,
        }


@dataclass
class Edge:
    src: str
    type: str
    dst: str
    namespace: str = ""
    weight: float = 1.0
    props: dict[str, Any] = field(default_factory=dict)
    valid_from: str | None = None
    valid_until: str | None = None
    recorded_at: str | None = None
    retracted_at: str | None = None
    position: int = 0  # declared order among the source's edges (deterministic tie-breaks)

    @property
    def id(self) -> str:
        return edge_id(self.src, self.type, self.dst)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "src": self.src, "type": self.type, "dst": self.dst,
            "namespace": self.namespace, "weight": self.weight, "props": self.props,
            "valid_from": self.valid_from, "valid_until": self.valid_until,
            "recorded_at": self.recorded_at, "retracted_at": self.retracted_at,
            "position": self.position,
        }


@dataclass
class Change:
    """One row of the append-only change log."""

    seq: int
    at: str
    actor: str
    op: str  # put_node, retract_node, purge_node, put_edge, retract_edge, put_record, ...
    target: str
    namespace: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
