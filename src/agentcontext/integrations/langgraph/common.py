"""What the LangGraph store and saver share: the workspace they open from a URL, the memory store they write
(``memory:<name>``) checked for their principal, and the node layout helpers (lookup tags, bytes kept in JSON).

Every item is a node of kind ``memory`` in ``memory:<name>`` (recall finds it), every checkpoint and pending write
one of kind ``memory_state`` there (thread state: not recalled, erased like a memory): reads need ``read``
on that namespace and writes ``write`` (a denial raises ``AccessDeniedError`` and is audited, as for the CLI, MCP
and Python); its ``metadata.entities`` name what it is about (an item's namespace labels, a checkpoint's thread
id and the configured subject keys of its config), so ``agentcontext erase <entity>`` removes it.
"""
from __future__ import annotations

import hashlib
import re
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from ... import access
from ...errors import ValidationError
from ...memory.purge import purge_memories
from ...memory.records import KIND, STATE_KIND, TYPE, now_iso, time_key
from ...model import Node
from ...workspace import Workspace
from ..opening import open_workspace

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValidationError(f"memory store name {name!r} must be 1-100 letters, digits, '_', '.' or '-'",
                              name=str(name)[:100])
    return name


@contextmanager
def opened(url: str) -> Iterator[Workspace]:
    """A workspace on any store URL we accept (``sqlite:///path``, a path, ``:memory:``, ``postgresql://...``, as
    LangGraph's ``from_conn_string`` takes them), closed on exit (``integrations.opening``)."""
    if not isinstance(url, str) or not url.strip():
        raise ValidationError("url must be a store URL: sqlite:///path/to/store.db, a path, ':memory:' or "
                              "postgresql://...", url=str(url))
    ws, _ = open_workspace() if url == ":memory:" else open_workspace(url=url if "://" in url else f"sqlite:///{url}")
    try:
        yield ws
    finally:
        ws.close()


def tag(prefix: str, *parts: Any) -> str:
    """An exact, indexed lookup tag for a tuple of strings (hashed: labels may hold any character)."""
    joined = "\x1f".join(str(p) for p in parts)
    return f"{prefix}:{hashlib.sha256(joined.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}"


def pack(blob: bytes) -> str:
    """Bytes as a JSON-safe string that keeps ASCII text readable (latin-1, with NUL and 0x01 escaped: PostgreSQL's
    jsonb refuses NUL)."""
    return blob.replace(b"\x01", b"\x01\x02").replace(b"\x00", b"\x01\x03").decode("latin-1")


def unpack(text: str) -> bytes:
    return text.encode("latin-1").replace(b"\x01\x03", b"\x00").replace(b"\x01\x02", b"\x01")


class MemoryRoom:
    """One memory store ``memory:<name>`` of a workspace as ``principal`` uses it: checks, audit, node writes."""

    def __init__(self, ws: Workspace, name: str = "default", principal: str | None = None) -> None:
        self.ws = ws
        self.name = check_name(name)
        self.namespace = f"memory:{self.name}"
        self.principal = access.effective_principal(ws, principal)

    @property
    def store(self) -> Any:
        return self.ws.store

    def check(self, level: str, action: str, target: str = "") -> None:
        access.require(self.ws, self.principal, self.namespace, level, action, target or self.namespace)

    def audit(self, action: str, detail: dict[str, Any]) -> None:
        access.record(self.ws, self.principal, action, self.namespace, detail)

    def node(self, node_id: str, kind_tag: str, content: str, entities: Sequence[str], data: dict[str, Any],
             tags: Sequence[str], created: str | None = None, updated: str | None = None,
             state: bool = False) -> Node:
        """A memory (``state``: a thread-state record, kept out of recall) of this store."""
        created = created or now_iso()
        props = {"metadata": {"entities": list(dict.fromkeys(str(e) for e in entities if e)), "type": kind_tag},
                 "conversation_id": None, "user_id": None, "created_at": created, "updated_at": updated or created,
                 "langgraph": data}
        return Node(id=node_id, kind=STATE_KIND if state else KIND, namespace=self.namespace, key=time_key(created),
                    content=content, props=props, tags=[TYPE + kind_tag, *tags])

    def find(self, *tags: str, with_content: bool = True, state: bool = False) -> list[Node]:
        return self.store.find_nodes(namespace=self.namespace, kind=STATE_KIND if state else KIND, tags=list(tags),
                                     order="none", with_content=with_content)

    def purge(self, ids: Sequence[str], reason: str, scrub: bool = True) -> int:
        """Remove nodes with every version, edge and vector, then scrub the store (SQLite: a TRUNCATE checkpoint
        empties the WAL), so nothing of their text stays in the files."""
        if not ids:
            return 0
        gone = purge_memories(self.store, list(ids), reason=reason, actor=self.principal)["nodes"]
        if scrub:  # outside any transaction: the caller of scrub=False scrubs after its own
            self.store.scrub(strict=False)
        return gone
