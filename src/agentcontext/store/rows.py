"""What both SQL backends share: turning rows into records and collecting WHERE clauses."""
from __future__ import annotations

import functools
import json
import re
from typing import Any, Sequence

from ..errors import ConflictError, ValidationError
from ..model import Edge, Node, content_hash, json_text, reserved_namespace
from .pg_hash import text as hash_text  # a node's hash as read: bytes on PostgreSQL's schema 13, else text
from .pg_props import whole as whole_props  # a node's props as read: PostgreSQL's schema 13 may leave updated_at out

_PROP = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# ``json.dumps(props, sort_keys=True, default=str)`` without building an encoder per call (the same text)
props_to_json = json_text(sort_keys=True)


NODE_COLS = (
    "id, kind, namespace, key, title, summary, content, props, tags, valid_from, valid_until, "
    "recorded_at, retracted_at, version, content_hash, created_by, embed_hash, tokens"
)
LIGHT_COLS = NODE_COLS.replace(" content,", " '' AS content,")
EDGE_COLS = "src, type, dst, namespace, weight, props, valid_from, valid_until, recorded_at, retracted_at, position"
NODE_ORDERS = {
    "key": " ORDER BY n.key, n.id",
    "recorded": " ORDER BY n.recorded_at, n.id",
    "recorded_desc": " ORDER BY n.recorded_at DESC, n.id DESC",
    "id": " ORDER BY n.id",
    "none": "",
}


def held_embed_text(title: str, content: str, embed_text: str | None) -> str | None:
    """What PostgreSQL keeps of a node's text to embed (migration 6): NULL when it is the content or the content
    after the title (``title: content``, the text a memory embeds: its speaker, then what was said), else the text;
    ``whole_embed_text`` reads it back (SQLite keeps NULL for the content alone: its migration 5)."""
    if embed_text and (embed_text == content or (title and embed_text == f"{title}: {content}")):
        return None
    return embed_text


def whole_embed_text(title: str, content: str, embed_text: str | None, embed_hash: str | None) -> str | None:
    """A node's text to embed from what a store held of it (``held_embed_text``): a NULL one with an ``embed_hash``
    is the content after the title when that is what the hash names, else the content."""
    if embed_text is not None or embed_hash is None:
        return embed_text
    titled = f"{title}: {content}" if title else None
    return titled if titled is not None and content_hash(titled) == embed_hash else content


def as_list(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def check_prop(name: str) -> str:
    """A property name a query may name (letters, digits and underscores)."""
    if not isinstance(name, str) or not _PROP.fullmatch(name):
        raise ValidationError(f"property name {name!r} must be letters, digits and underscores", prop=str(name))
    return name


def as_tags(value: Any) -> list[str]:
    """Tags as stored: JSON text (SQLite) or an array (PostgreSQL), as a list."""
    if not value:
        return []
    return json.loads(value) if isinstance(value, str) else list(value)


def row_to_node(row: Sequence[Any]) -> Node:
    """A node from the 18 NODE_COLS columns; tags arrive as JSON text (SQLite) or an array (Postgres)."""
    return Node(
        id=row[0], kind=row[1], namespace=row[2], key=row[3], title=row[4], summary=row[5],
        content=row[6], props=whole_props(row[7]),
        tags=as_tags(row[8]),
        valid_from=row[9], valid_until=row[10], recorded_at=row[11], retracted_at=row[12],
        version=row[13], content_hash=hash_text(row[14]), created_by=row[15] or "", embed_hash=hash_text(row[16]),
        tokens=row[17],
    )


def row_to_edge(row: Sequence[Any]) -> Edge:
    return Edge(
        src=row[0], type=row[1], dst=row[2], namespace=row[3], weight=row[4],
        props=json.loads(row[5]) if row[5] else {}, valid_from=row[6], valid_until=row[7],
        recorded_at=row[8], retracted_at=row[9], position=row[10],
    )


class Where:
    """Collects SQL conditions (written with ``?`` placeholders) and their parameters; a backend's subclass says
    how ``column IN values`` is spelled and which placeholder its driver wants."""

    PLACEHOLDER = "?"

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.params: list[Any] = []
        self.hint = ""  # what the dialect writes after the nodes table's alias (SQLite: NOT INDEXED)

    def eq_any(self, column: str, values: list[str] | None) -> None:
        """``column`` equals one of ``values`` (no condition when ``values`` is None)."""
        raise NotImplementedError(f"{type(self).__name__} must say how to match a column against a list")

    def add(self, sql: str, *params: Any) -> None:
        self.parts.append(sql if self.PLACEHOLDER == "?" else sql.replace("?", self.PLACEHOLDER))
        self.params.extend(params)

    def sql(self) -> str:
        return (" WHERE " + " AND ".join(self.parts)) if self.parts else ""


EXISTING_COLS = ("id, rid, version, content_hash, retracted_at, embed_hash, recorded_at, created_by, namespace, "
                 "kind")
# The kinds of record a service owns (memories, decisions, policies, their exceptions and approvals, checkpoints):
# outside the packs (whose docs take any kind their manifest gives), a node of one never changes kind and no
# node becomes one, so a graph write cannot turn an entity into a decision nor a decision into something else.
RECORD_KINDS = frozenset({"memory", "decision", "policy", "policy_exception", "approval", "checkpoint"})
PACK_FAMILIES = ("lib:", "pkg:")


TEXT_FIELDS = ("id", "kind", "namespace", "key", "title", "summary", "content")


def check_text_fields(node: Node) -> None:
    """A node's text fields are strings: one that is not is our ValidationError naming the node and the field
    (before, the driver's NOT NULL or type error reached the caller, naming neither)."""
    for name in TEXT_FIELDS:
        value = getattr(node, name)  # the fields by name: one check, one message for each
        if not isinstance(value, str):
            raise ValidationError(f"node {node.id!r}: {name} must be a string, got {type(value).__name__}; pass "
                                  f"'' for an empty {name}", id=str(node.id), field=name)


def plan_versions(nodes: Sequence[Node], existing: dict[str, tuple], at: str,
                  actor: str) -> tuple[list[int], list[tuple[Node, tuple | None, str]]]:
    """Hash each node against its live row (``EXISTING_COLS``): an unchanged one keeps its version, the rest
    are stamped with the next version, ``at`` and their author. Returns every node's version and the
    changed ones as (node, live row or None, props JSON).

    A node never changes namespace (a memory cannot become a doc's first version, a graph cannot rewrite
    another graph's node): an id whose row, live or retracted, is in another namespace is a ConflictError, and
    an id reserved for a namespace (``lib:hr/...``) is refused anywhere else. Nor does a node change between a
    service's record kind (``RECORD_KINDS``) and another kind (a ConflictError)."""
    versions: list[int] = []
    changed: list[tuple[Node, tuple | None, str]] = []
    get = existing.get
    for node in nodes:
        nid = node.id
        if not (type(nid) is str and type(node.kind) is str and type(node.namespace) is str  # noqa: E721
                and type(node.key) is str and type(node.title) is str and type(node.summary) is str  # noqa: E721
                and type(node.content) is str):  # noqa: E721 (the exact type first: one test for the usual node)
            check_text_fields(node)
        reserved = reserved_namespace(nid) if "/" in nid else None
        if reserved is not None and reserved != node.namespace:
            raise ValidationError(f"id {nid!r} is reserved for {reserved}; a record of {node.namespace} cannot "
                                  "take it", id=nid, namespace=node.namespace, reserved_for=reserved)
        old = get(nid)
        if old is not None:
            if old[8] != node.namespace:
                raise ConflictError(f"id {nid!r} already names a record of another namespace; a record of "
                                    f"{node.namespace} cannot take it: choose another id", id=nid,
                                    namespace=node.namespace)
            if (old[9] != node.kind and not node.namespace.startswith(PACK_FAMILIES)
                    and (old[9] in RECORD_KINDS or node.kind in RECORD_KINDS)):
                raise ConflictError(f"id {nid!r} already names a record of kind {old[9]!r}; it cannot become a "
                                    f"{node.kind!r}: choose another id", id=nid, kind=node.kind)
        props_json = props_to_json(node.props)
        node.content_hash = node.compute_hash(props_json)
        node.embed_hash = content_hash(node.embed_text) if node.embed_text else None
        if (old and hash_text(old[3]) == node.content_hash and old[4] is None
                and hash_text(old[5]) == node.embed_hash):
            node.version, node.recorded_at = old[2], old[6]
        else:
            node.version = (old[2] + 1) if old else 1
            node.recorded_at = at
            node.retracted_at = None
            node.created_by = node.created_by or (old[7] if old else actor) or actor
            changed.append((node, old, props_json))
        versions.append(node.version)
    return versions, changed


def plan_edges(keyed: dict[str, Edge], current: dict[str, tuple], at: str) -> tuple[list[tuple], list[str], int]:
    """Compare edges with their live rows (eid, weight, props, valid_from, valid_until, position, namespace): an
    unchanged one is left alone (``recorded_at`` None), a changed one retires its live interval and opens a new
    one. Returns the rows to insert (``eid`` + EDGE_COLS), the eids to retire and how many edges are new."""
    inserts, retire, new = [], [], 0
    for eid, e in keyed.items():
        props = json.dumps(e.props, sort_keys=True, default=str)
        old = current.get(eid)
        if old and (old[1], old[2], old[3], old[4], old[5], old[6]) == (
                e.weight, props, e.valid_from, e.valid_until, e.position, e.namespace):
            e.recorded_at = None
            continue
        if old:
            retire.append(eid)
        else:
            new += 1
        e.recorded_at = at
        inserts.append((eid, e.src, e.type, e.dst, e.namespace, e.weight, props, e.valid_from, e.valid_until, at,
                        None, e.position))
    return inserts, retire, new


def put_detail(node: Node) -> str:
    """The change-log detail of a ``node.put``."""
    return _put_detail(node.version, node.kind)


@functools.lru_cache(maxsize=1024)  # a batch of new memories shares one: version 1 of kind memory
def _put_detail(version: int, kind: str) -> str:
    return f'{{"version": {version}, "kind": {json.dumps(kind)}}}'

