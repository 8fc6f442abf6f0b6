"""How a memory is laid out as a store node, and back to the dict shape seed 003 returns.

A memory is a node of kind ``memory`` in the namespace ``memory:<name>``: ``content`` is the text,
``title`` the speaker (if the metadata names one), ``key`` sorts by creation time (``time_key``), tags carry
``conversation:<id>``, ``user:<id>`` and ``type:<type>`` so filters are exact and indexed, and
``props`` hold the caller's metadata plus creation/update times with their original offsets.
"""
from __future__ import annotations

import functools
import itertools
import os
import time
from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import ValidationError
from ..model import MEMORY_KIND, RESERVED_ID_PREFIXES, Node, to_utc_iso

KIND = MEMORY_KIND
# Records a memory store holds that are not recalled: an agent framework's thread state (LangGraph's checkpoints and
# pending writes). They are about entities as memories are (``metadata.entities``), so an erasure removes them too.
STATE_KIND = "memory_state"
CONV = "conversation:"
USER = "user:"
TYPE = "type:"


def _sequence() -> "itertools.count[int]":
    return itertools.count(int.from_bytes(os.urandom(4), "big"))


_SEQ = _sequence()
os.register_at_fork(after_in_child=lambda: globals().update(_SEQ=_sequence()))  # a forked child starts its own


def new_id() -> str:
    """Time-ordered (milliseconds, then a per-process sequence from a random start, like UUIDv7's counter): new ids
    land at the end of the id indexes instead of at random places, which keeps bulk stores fast as the store grows,
    and one process never makes the same id twice (four random bytes did: a batch of 10,000 made within a few
    milliseconds met a repeat about once in a thousand runs, and batch_store refused it)."""
    return f"mem_{time.time_ns() // 1_000_000:012x}{next(_SEQ) & 0xFFFFFFFF:08x}"


def check_memory_id(memory_id: Any) -> str:
    """A caller-chosen memory id: 1-300 printable characters that do not claim another kind of record's ids
    (``lib:hr/policy`` is a doc's, ``graph:g/x`` a graph node's, ``policy:x`` a policy's)."""
    if not isinstance(memory_id, str) or not 0 < len(memory_id) <= 300 or not memory_id.isprintable() \
            or memory_id != memory_id.strip():
        raise ValidationError(f"memory id {str(memory_id)[:80]!r} must be 1-300 printable characters without "
                              "leading or trailing spaces", id=str(memory_id)[:300])
    if memory_id.startswith(RESERVED_ID_PREFIXES):
        raise ValidationError(f"memory id {memory_id!r} has the form of another kind of record's id (ids starting "
                              f"{', '.join(RESERVED_ID_PREFIXES)} are not memories'); choose another id", id=memory_id)
    return memory_id


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_OFFSET = 1 << 60  # keeps pre-1970 times positive


def time_key(created: str | None, seq: int = 0) -> str:
    """A sort key for creation time: one hex token (no digits groups that would match words in
    the text index, as an ISO date would), microseconds then the position within a batch."""
    return f"t{_micros(created):016x}{seq:06x}"


@functools.lru_cache(maxsize=4096)  # a batch shares one timestamp: parse it once
def _micros(created: str | None) -> int:
    iso = to_utc_iso(created) if created else None
    dt = datetime.fromisoformat(iso) if iso else _EPOCH
    return (dt - _EPOCH) // timedelta(microseconds=1) + _OFFSET


@functools.lru_cache(maxsize=4096)
def human_date(created: str | None) -> str:
    """'2023-05-08T13:56:00' -> '8 May 2023' (in the timestamp's own offset), indexed for text search
    so questions that name a date, month or year meet the memories of that day."""
    if not created:
        return ""
    dt = datetime.fromisoformat(created[:-1] + "+00:00" if created.endswith("Z") else created)
    return f"{dt.day} {dt.strftime('%B')} {dt.year}"


def memory_text(title: str, content: str, places: bool = False) -> str:
    """The text that is embedded: the speaker, then what was said; with ``places``, the glosses of the places it
    names after it (memory/places.py: "Tampa: a city in Florida, a US state, ...")."""
    text = f"{title}: {content}" if title else content
    gloss = place_gloss(title, content) if places else ""
    return f"{text} {gloss}" if gloss else text


def pair_text(before: Any, own: str, places: bool = False) -> str:
    """The text a turn's context vector embeds (its ``pair_hash``): the turn before's embedded text (``before``: its
    node), a newline, the turn's own embedded text."""
    return memory_text(before.title, before.content, places) + "\n" + own


def place_gloss(title: str, content: str) -> str:
    """The glosses of the places ``content`` names (never the speaker's own name)."""
    from .places import annotate  # the gazetteer loads on first use only

    return annotate(content, skip=[title] if title else [])


def iso_with_offset(value: Any, field: str) -> str:
    """A timestamp as ISO text, keeping the caller's offset (naive values stay naive)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str):
        to_utc_iso(value)  # validates
        return value
    raise ValidationError(f"{field} must be an ISO-8601 timestamp or datetime, got {type(value).__name__}",
                          field=field)


def check_entities(metadata: dict[str, Any]) -> None:
    """``metadata["entities"]``, when given, is a list of entity ids: a string is refused (it would be read as one id
    by linking but drawn letter by letter by every reader that expects the documented list)."""
    if "entities" not in metadata:
        return
    ents = metadata["entities"]
    if not isinstance(ents, (list, tuple)) or not all(isinstance(e, (str, int)) and str(e).strip() for e in ents):
        raise ValidationError(
            f"metadata 'entities' must be a list of entity ids, got {ents!r:.80}: pass "
            "{'entities': ['customer-4471']} (CLI: --entity customer-4471, repeatable)", field="metadata.entities")


_FLAT = frozenset({str, int, float, bool, type(None)})
MAX_NESTING = 64  # levels of lists and mappings a memory's metadata may hold (JSON and the store recurse on it)


def check_nesting(value: Any, what: str = "metadata", limit: int = MAX_NESTING) -> None:
    """Raise ``ValidationError`` when ``value`` nests lists/mappings deeper than ``limit`` (walked without
    recursion, so a 100,000-deep value is refused as plainly as a 65-deep one)."""
    if value is None:
        return
    if type(value) is dict:  # the usual metadata: one level of plain values
        for v in value.values():
            if type(v) not in _FLAT:
                break
        else:
            return
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > limit:
                raise ValidationError(f"{what} is nested more than {limit} levels deep; flatten it (store deep "
                                      "structures as a JSON string)", limit=limit)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def build_node(namespace: str, content: str, metadata: dict[str, Any] | None, conversation_id: str | None,
               user_id: str | None, memory_id: str | None = None, created_at: str | None = None,
               updated_at: str | None = None, seq: int = 0, prev: str | None = None,
               pair_hash: str | None = None, places: bool = False) -> Node:
    if not isinstance(content, str) or not content.strip():
        raise ValidationError("a memory needs non-empty text content", content=repr(content)[:80])
    check_nesting(metadata)
    metadata = dict(metadata or {})
    check_entities(metadata)
    created = created_at or now_iso()
    mtype = metadata.get("type") or metadata.get("kind")
    speaker = metadata.get("speaker")
    tags = []
    if conversation_id is not None:
        tags.append(CONV + str(conversation_id))
    if user_id is not None:
        tags.append(USER + str(user_id))
    if mtype:
        tags.append(TYPE + str(mtype))
    mid = check_memory_id(memory_id) if memory_id else new_id()
    props: dict[str, Any] = {
        "metadata": metadata, "conversation_id": conversation_id, "user_id": user_id,
        "created_at": created, "updated_at": updated_at or created,
    }
    if prev:
        props["prev"] = prev
    if pair_hash:
        props["pair_hash"] = pair_hash
    title = str(speaker) if isinstance(speaker, str) else ""
    summary = human_date(created)
    if places:  # the glosses are indexed for text search beside the date, and embedded after the text
        gloss = place_gloss(title, content)
        summary = f"{summary} {gloss}" if gloss else summary
    return Node(
        id=mid, kind=KIND, namespace=namespace, key=time_key(created, seq), title=title, summary=summary,
        content=content, props=props, tags=tags, embed_text=memory_text(title, content, places),
    )


def to_memory(node: Node, score: float | None = None) -> dict[str, Any]:
    """The dict seed 003 returns for one memory."""
    props = node.props or {}
    metadata = dict(props.get("metadata") or {})
    out: dict[str, Any] = {
        "id": node.id, "memory_id": node.id, "content": node.content, "metadata": metadata,
        "conversation_id": props.get("conversation_id"), "user_id": props.get("user_id"),
        "timestamp": props.get("created_at"), "created_at": props.get("created_at"),
        "updated_at": props.get("updated_at"), "version": node.version,
    }
    if score is not None:
        out["score"] = score
    return out


def conversation_of(node: Node) -> str | None:
    return (node.props or {}).get("conversation_id")
