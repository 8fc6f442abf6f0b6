"""The store protocol: the only boundary behind which SQL lives, and every method a service may call.

A store holds nodes (with every version), edges (as validity intervals), embeddings keyed by
(text hash, model), a text index, tombstones, small keyed records, an audit log and an
append-only change log. Derived structures elsewhere (vector matrices, adjacency caches) are
rebuilt from it and invalidated by ``change_counter()``.

The protocol is made of roles, each its own protocol: the required ones every store has (``Lifecycle``,
``NodeStore``, ``EdgeStore``, ``TextIndex``, ``VectorRows``, ``RecordLog``, ``Erasable``, ``Copyable``; ``Store``
is all of them), so a function needing one role types its store by it; and the optional ones only some stores
have. What only some backends can do is declared in ``capabilities`` (see ``Capability``) and detected there
(the conformance suite, tests/conformance/, does the same): the methods of an optional capability are declared
in their own protocol (``VectorSearch``, ``OPTIONAL_METHODS``) and only stores that declare the capability have
them. A sharded store (``Sharded``: tenants on several servers) is a store of its own class, told by its role.

Both backends (``SQLiteStore``, ``PostgresStore``) subclass one SQL base (``sql_base.SQLStore``), composed of a
part per role (``sql_part.Part``); the conformance suite runs each of them against this protocol.
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from enum import Enum
from typing import Any, Callable, Iterable, Protocol, Sequence, runtime_checkable

import numpy as np

from ..model import Change, Edge, Node

Adjacency = list[tuple[str, str, str, float, int]]  # (src, dst, type, weight, position)
EdgeColumns = list[tuple[str, str, str, float, int, str | None, str | None]]
"""(src, dst, type, weight, position, valid_from, valid_until) of active edges."""
Frontier = list[tuple[str, str, str, float, str, str | None, str | None]]
"""(src, dst, type, weight, namespace, valid_from, valid_until) of active edges, in (src, position, dst, type) order."""
TimedEdges = list[tuple[str, str, str, str | None, str | None]]
"""(src, dst, type, valid_from, valid_until) of active edges that carry a validity bound."""
NodeBrief = tuple[str, str, dict[str, Any]]
"""(kind, content, props)."""
COPY_TABLES = ("nodes", "node_versions", "edges", "vectors", "tombstones", "records", "audit", "changes")
"""What a whole-store copy carries (``export_rows``/``import_rows``), in the order it is copied."""


class Capability(str, Enum):
    """What only some stores can do; a store lists its own in ``capabilities``."""

    PERSISTENT = "persistent"
    """Closing and opening the same URL again finds everything that was committed."""
    SHARED = "shared"
    """Several connections and processes may open the URL at once and see each other's commits."""
    VECTOR_SEARCH = "vector_search"
    """The store ranks vectors itself (``VectorSearch``: an ANN index in the server, exact when a filter is
    selective): services ask it for dense candidates instead of loading every vector into the process."""
    VECTOR_DELTA = "vector_delta"
    """New vectors land outside the ANN index (a delta that searches score exactly) and ``fold(chunk, progress)``
    moves them into it (``pending_vectors()`` counts them): PostgreSQL, ``store/pg_delta.py``."""
    READ_AHEAD = "read_ahead"
    """A read may start on a second connection while the caller goes on (``ReadAhead``: PostgreSQL,
    ``store/pg_parallel.py``); memory search starts its independent reads so (memory/server_gather.py)."""
    SERVER_QUERIES = "server_queries"
    """The store is a server shared by processes and machines, and may hold more than one process should mirror:
    services ask it for what a query needs (candidates, a walk's frontier with ``edges_touching``) instead of
    building whole in-process indexes of its vectors or adjacency. Stores without it are mirrored in process."""


@runtime_checkable
class Lifecycle(Protocol):
    """Transactions, the schema and the store's health."""

    def transaction(self) -> AbstractContextManager[None]:
        """Everything inside lands whole or not at all; nested calls join the outer one (no savepoints), and
        every write inside is stamped with one moment, so ``as_of`` sees all of it or none."""

    def close(self) -> None: ...

    def check_integrity(self) -> str:
        """'ok' or the backend's description of what is damaged."""

    def schema_version(self) -> int:
        """The number of the last migration applied to this store (``info()`` lists them all)."""

    def info(self) -> dict[str, Any]:
        """URL, backend, schema version and migrations, counts of every kind of row, and sizes in bytes."""


@runtime_checkable
class NodeStore(Protocol):
    """Nodes and their versions."""

    def put_nodes(self, nodes: Sequence[Node], actor: str = "", at: str | None = None) -> list[int]:
        """Insert or update; an unchanged node keeps its version. Returns each node's version."""

    def get_node(self, id: str, as_of: str | None = None, include_retracted: bool = False) -> Node | None: ...

    def get_nodes(self, ids: Iterable[str], as_of: str | None = None,
                  include_retracted: bool = False) -> dict[str, Node]:
        """Nodes by id: the live ones (as they stood at ``as_of``); ``include_retracted`` adds the retracted ones as
        their row holds them (what an erasure must reach)."""

    def find_nodes(
        self,
        namespace: str | Sequence[str] | None = None,
        kind: str | Sequence[str] | None = None,
        key_prefix: str | None = None,
        keys: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        valid_at: str | None = None,
        as_of: str | None = None,
        order: str = "key",
        offset: int = 0,
        limit: int | None = None,
        with_content: bool = True,
    ) -> list[Node]:
        """Active nodes matching every given filter; ``tags`` is all-of; ``order`` is
        ``key``, ``recorded``, ``recorded_desc``, ``id`` or ``none``."""

    def node_index(self, namespace: str | Sequence[str], as_of: str | None = None) -> list[tuple]:
        """Light rows (id, key, kind, title, summary, version, content_hash, tokens) of active nodes, by key:
        the bulk read for in-memory views (no content, nothing to decode)."""

    def node_ids(self, namespace: str | Sequence[str] | None = None, include_retracted: bool = False) -> list[str]:
        """Ids of the nodes in ``namespace`` (active only unless ``include_retracted``), in insertion order."""

    def node_briefs(self, ids: Sequence[str]) -> dict[str, NodeBrief]:
        """(kind, content, props) of active nodes by id: the lean read traversal results need."""

    def get_contents(self, ids: Sequence[str], as_of: str | None = None) -> dict[str, str]:
        """Only the content of each node, as it stood at ``as_of``."""

    def count_nodes(self, namespace: str | Sequence[str] | None = None, kind: str | None = None) -> int: ...

    def count_by_kind(self, namespace: str | Sequence[str] | None = None) -> dict[str, int]: ...

    def node_versions(self, id: str) -> list[Node]: ...

    def node_version(self, id: str, version: int) -> Node | None: ...

    def retract_nodes(self, ids: Sequence[str], actor: str = "", at: str | None = None,
                      edges: str = "both") -> int:
        """Withdraw nodes (history stays; ``as_of`` still sees them) and their edges: ``both`` directions, or
        only ``outbound`` ones (a deleted doc must not silently vanish from its dependents' declarations)."""

    def namespaces(self) -> list[str]:
        """Namespaces that hold at least one active node."""

    def nodes_naming(self, prop: str, values: Sequence[str], namespace: str | Sequence[str] | None = None,
                     kind: str | Sequence[str] | None = None) -> list[Node]:
        """Active nodes (without content) whose ``props[prop]`` is one of ``values`` (text), in insertion order: the
        reverse of a link kept in props (the turns that follow a memory name it in ``prev``)."""


@runtime_checkable
class EdgeStore(Protocol):
    """Edges, as validity intervals."""

    def put_edges(self, edges: Sequence[Edge], actor: str = "", at: str | None = None) -> int:
        """Insert or update (same src, type, dst = same edge; a change closes the old interval and opens a new
        one). Returns how many were new."""

    def retract_edges(self, ids: Sequence[str], actor: str = "", at: str | None = None) -> int: ...

    def edges(
        self,
        src: str | Sequence[str] | None = None,
        dst: str | Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        namespace: str | Sequence[str] | None = None,
        as_of: str | None = None,
        valid_at: str | None = None,
        min_weight: float | None = None,
        offset: int = 0,
        limit: int | None = None,
        include_retracted: bool = False,
    ) -> list[Edge]:
        """Edges in (src, position, dst, type) order; ``include_retracted`` adds every retracted interval too."""

    def count_edges(self, namespace: str | Sequence[str] | None = None, type: str | None = None) -> int: ...

    def count_edges_by_type(self, namespace: str | Sequence[str] | None = None) -> dict[str, int]: ...

    def adjacency(
        self,
        namespace: str | Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        as_of: str | None = None,
        valid_at: str | None = None,
    ) -> Adjacency:
        """Every active edge as a tuple, in (src, position) order: the bulk read for engines."""

    def edge_columns(self, namespace: str | Sequence[str] | None = None) -> EdgeColumns:
        """Every active edge with its validity, in no particular order: one scan, no sort, for engines that
        order rows themselves."""

    def edges_touching(self, ids: Sequence[str], side: str = "src", types: Sequence[str] | None = None,
                       min_weight: float | None = None) -> Frontier:
        """Active edges leaving (``side="src"``) or entering (``"dst"``) the given nodes: the lean read for a
        traversal frontier."""

    def timed_edges(self, namespace: str | Sequence[str] | None = None) -> TimedEdges: ...

    def edge_history(self, namespace: str | Sequence[str] | None = None) -> list[Edge]:
        """Every edge interval, retracted ones included, in the order the store recorded them."""


@runtime_checkable
class TextIndex(Protocol):
    """The text index over nodes."""

    def text_search(
        self,
        query: str,
        namespace: str | Sequence[str] | None = None,
        kind: str | Sequence[str] | None = None,
        limit: int = 50,
        common: float | None = None,
        ids: Sequence[str] | None = None,
        within: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """(node id, relevance) best first; relevance is positive (higher is better). Query terms found in more than
        ``common`` (a share) of the indexed rows are left out, the rarest term always staying (default: half).
        ``ids`` scores only those nodes (a candidate list's text scores, on the same scale). The statistics that
        rank (rows, their length, rows holding each term) are those of the ``namespace`` searched (all of them
        when None), never of rows outside it, so what other namespaces hold moves no score; ``within``: only these
        nodes are searched and their statistics alone rank (what a principal reads of a pack, doc by doc)."""

    def phrase_search(self, phrase: str, namespace: str | Sequence[str] | None = None,
                      kind: str | Sequence[str] | None = None, limit: int | None = None) -> list[str]:
        """Ids of active nodes whose indexed text holds the words of ``phrase`` in a row (as the text index
        splits and stems them), in insertion order: candidates for a closer look, e.g. mentions of a name."""


@runtime_checkable
class VectorRows(Protocol):
    """Embeddings keyed by (text hash, model)."""

    def put_vectors(self, vectors: dict[str, np.ndarray], model: str) -> int: ...

    def get_vectors(self, hashes: Sequence[str], model: str) -> dict[str, np.ndarray]: ...

    def delete_vectors(self, hashes: Sequence[str]) -> int:
        """Remove the vectors with these text hashes (every model); returns how many rows went."""

    def missing_vectors(self, model: str, namespace: str | Sequence[str] | None = None) -> list[tuple[str, str]]:
        """(embed hash, text) of active nodes whose text has no vector for ``model``."""

    def load_vectors(
        self, model: str, namespace: str | Sequence[str] | None = None, kind: str | Sequence[str] | None = None
    ) -> tuple[list[str], np.ndarray]:
        """Ids of active nodes with a vector, and the float32 matrix (one row each), in insertion order."""

    def count_vectors(self, model: str, namespace: str | Sequence[str] | None = None,
                      kind: str | Sequence[str] | None = None) -> int:
        """How many active nodes have a vector for ``model`` (what ``load_vectors`` would return, counted)."""


@runtime_checkable
class RecordLog(Protocol):
    """Small keyed records, the audit log and the append-only change log."""

    def put_record(self, kind: str, key: str, value: dict[str, Any], actor: str = "") -> None: ...

    def put_records(self, kind: str, values: dict[str, dict[str, Any]], actor: str = "") -> None:
        """``put_record`` of each key and value, in one transaction and one statement a table (a change row each)."""

    def get_record(self, kind: str, key: str) -> dict[str, Any] | None: ...

    def list_records(self, kind: str, prefix: str | None = None) -> list[tuple[str, dict[str, Any]]]: ...

    def delete_record(self, kind: str, key: str, actor: str = "") -> bool: ...

    def append_audit(self, principal: str, action: str, target: str, outcome: str,
                     detail: dict | None = None) -> None: ...

    def audit(self, principal: str | None = None, since: str | None = None, limit: int | None = None) -> list[dict]:
        """Audit entries oldest first; ``limit`` keeps the latest ones."""

    def change_counter(self) -> int: ...

    def changes_since(self, seq: int, limit: int | None = None) -> list[Change]: ...


@runtime_checkable
class Erasable(Protocol):
    """What an erasure uses: purges and their tombstones, the scans that find a subject's records, history and
    audit redaction, and the store's files."""

    def purge_nodes(self, ids: Sequence[str], reason: str = "", actor: str = "",
                    at: str | None = None, erasure: str | None = None) -> dict[str, int]:
        """Remove content, versions, text-index rows, edges and orphaned embeddings; leave a tombstone (marked
        with ``erasure``, the entity an erasure was asked for, when it is one). Returns how many nodes, versions,
        edges and vectors went."""

    def tombstone(self, id: str) -> dict[str, Any] | None: ...

    def tombstones(self, namespace: str | Sequence[str] | None = None,
                   ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Tombstones (id, namespace, kind, purged_at, reason, actor, erasure) in the order they were made."""

    def put_tombstones(self, rows: Sequence[dict[str, Any]]) -> int:
        """Restore tombstones (from a saved graph); existing ones with the same id are replaced (an erasure's
        mark stays)."""

    def find_by_props(self, path: Sequence[str], value: str, namespace: str | Sequence[str] | None = None,
                      kind: str | Sequence[str] | None = None, include_retracted: bool = False) -> list[str]:
        """Ids of active nodes (retracted ones too with ``include_retracted``) whose ``props`` hold ``value`` at the
        key ``path`` (equal to it, or an element of the list there), in insertion order: a scan the backend does
        without decoding every row in Python."""

    def erased(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` (node ids, or entity ids erasures were asked for) an erasure removed: what imports
        must not bring back."""

    def nodes_holding(self, needles: Sequence[str]) -> list[str]:
        """Ids of nodes, live or retracted, any version of which holds one of ``needles`` (its words in order,
        anything between them; case folded) in its key, title, summary, content or props text, in the order the
        store recorded the first version holding one: candidates for a closer look at what the text index does not
        see (retracted records, superseded versions, metadata values). A scan of every version."""

    def purge_history(self, ids: Sequence[str], actor: str = "") -> dict[str, int]:
        """Delete every version of these nodes but the live one, and embeddings no remaining version uses.
        Returns how many versions and vectors went."""

    def redact_audit(self, targets: Sequence[str], note: dict[str, Any]) -> int:
        """Replace the detail of audit entries about ``targets`` with ``note`` (who, what, when and the target
        stay; erasure receipts are never changed). Returns how many entries changed."""

    def forget_statistics(self, tables: Sequence[str] | None = None) -> dict[str, Any]:
        """After a strict scrub: the query planner's samples of column values taken before it (PostgreSQL's
        ``pg_statistic``, filled by ANALYZE) out of the store's files as far as the role may. Returns what was done
        (``statistics``), ``may_remain`` and ``held`` (a reader older than the step kept the old samples). SQLite
        keeps no sample of a value (no ANALYZE is run): nothing to do."""

    def erase_records(self, kind: str, keys: Sequence[str], actor: str = "") -> int:
        """Delete these records and take their keys out of the change log's rows about them (what was done when by
        whom stays): for a record whose key may name an erased subject. Returns how many rows changed (then
        scrub the change log too: ``scrub.LOG_TABLES``)."""

    def scrub(self, tables: Sequence[str] | None = None, strict: bool = True) -> dict[str, Any]:
        """After deletes: make the deleted rows' bytes unreadable from the store's files as far as the backend
        can (SQLite: a TRUNCATE checkpoint; PostgreSQL: VACUUM FULL of ``tables`` when ``strict``). Returns what
        was done, ``status`` (``clean``, ``deferred`` or ``incomplete``) and ``may_remain``: what may still
        hold the bytes outside the library's reach."""


@runtime_checkable
class Copyable(Protocol):
    """Whole-store copies (``migrate``): every ``COPY_TABLES`` table page by page, and back."""

    def export_rows(self, table: str, after: Sequence[Any] | None = None,
                    limit: int = 5000) -> tuple[list[dict[str, Any]], list[Any] | None]:
        """One page of a ``COPY_TABLES`` table as stored (every column but what the backend derives itself; tags a
        list, a vector a float32 array), in copy order after the cursor ``after``: (rows, the next page's cursor,
        None after the last page)."""

    def import_rows(self, table: str, batches: Iterable[Sequence[dict[str, Any]]]) -> int:
        """Insert exported rows exactly as they are (versions, times, sequence numbers; no change-log entries of
        its own), in one transaction; the backend indexes what it derives. Returns how many rows went in."""


@runtime_checkable
class Store(Lifecycle, NodeStore, EdgeStore, TextIndex, VectorRows, RecordLog, Erasable, Copyable, Protocol):
    """The whole protocol every store implements: the required roles above (a function needing only one types its
    store by that role), and the attributes every store has."""

    url: str
    """Where the store lives, without any password (shown by the CLI and in receipts)."""
    backend: str
    """``sqlite`` or ``postgresql``."""
    capabilities: frozenset[Capability]
    VECTOR_DTYPE: type
    """The precision vectors are held in (``numpy.float32``; PostgreSQL ``float16``, halfvec): ``get_vectors`` gives
    float32 arrays holding the put values rounded to it, and scores are computed from those."""


@runtime_checkable
class VectorSearch(Protocol):
    """The methods of ``Capability.VECTOR_SEARCH``: dense search in the store."""

    def nearest(self, vector: np.ndarray, model: str, k: int, namespace: str | Sequence[str] | None = None,
                kind: str | Sequence[str] | None = None, tags: Sequence[str] | None = None,
                valid_at: str | None = None, props: dict[str, Any] | None = None,
                titles: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """The ``k`` active nodes whose own vector (of ``model``) has the largest inner product with ``vector``
        (cosine for unit vectors), best first, as (node id, inner product). Filters as ``find_nodes`` (``tags``
        all-of), ``props`` by JSON containment (every key holds that value; a list matches as a subset) and
        ``titles`` any-of. Approximate (an ANN index) when the filtered nodes are many, exact when they are few."""

    def nodes_linked(self, ids: Sequence[str], prop: str, namespace: str, kind: str,
                     fields: Sequence[str] | None = None,
                     content: bool = False) -> tuple[dict[str, Node], list[Node]]:
        """What a ranking in the store reads around its candidates, in one round trip: (the active nodes of
        ``namespace`` and ``kind`` among ``ids`` and those they name in ``props[prop]``, by id, with content;
        the active nodes naming any of those and the nodes naming those in turn, without content, in insertion
        order). So the followers (``nodes_naming``) of every node in the first part and of the first-level
        followers are all there. ``fields``: the props the caller reads (``prop`` always); each node's props then
        hold those of them that are set (a value that is neither a string nor null may bring every prop), so the
        client decodes no JSON it does not need, and each node carries only its id, kind, namespace, key, title,
        summary, content (as above) and embed_hash: its other fields are left empty (a ranking's read).
        ``content``: the followers come with their content too (a follower also of the first part may be that
        part's node itself)."""

    def holds_at_least(self, n: int, namespace: str, kind: str) -> bool:
        """Whether ``namespace`` holds at least ``n`` nodes of ``kind``, answered cheaply (through an index, reading
        at most ``n`` of its entries and no row): nodes retracted but not yet purged count too."""

    def similarities(self, vector: np.ndarray, model: str, hashes: Sequence[str]) -> dict[str, float]:
        """Inner products of ``vector`` with the stored vectors of these text hashes (of ``model`` and the same
        dimension), computed in the store: nothing but the scores crosses the wire."""

    def term_counts(self, query: str, namespace: str | Sequence[str] | None = None) -> tuple[int, dict[str, int]]:
        """(rows of the text index, rows holding each word of ``query`` (``text.query_terms``) as the text search
        of ``namespace`` counts them when it ranks: the parts of BM25's idf, from those namespaces' rows only), so a
        ranking in the store can weigh the query's words by their idf. Estimates on a large table; a word the text
        index keeps nothing of (a stopword) is left out."""


@runtime_checkable
class Sharded(Protocol):
    """Tenants (namespaces) on several servers, each call routed to the shard holding its tenant
    (``pg_shards.ShardedStore``; ``pg_shard_move.move_tenant`` moves one). Told by ``isinstance``: no capability."""

    def shard_for(self, tenant: str) -> str:
        """The shard that holds (or will hold) ``tenant``, assigning it when new."""

    def hold(self, tenants: Sequence[str]) -> dict[str, str]:
        """The tenants' shards, held until this write transaction ends (a move of one waits for it, and it for a
        move under way); must run inside ``transaction()``."""

    def on(self, name: str, fn: Callable[[Any], Any], write: bool = False) -> Any:
        """``fn(store of shard name)`` (``write``: it writes)."""

    def routed(self, namespace: Any, fn: Callable[[Any, Any], Any]) -> list[Any]:
        """``fn(store, its namespaces)`` on each shard holding some of ``namespace``."""

    def by_ids(self, ids: Sequence[str], fn: Callable[[Any, list[str]], Any], write: bool = False) -> list[Any]:
        """``fn(store, its ids)`` on each shard that may hold some of ``ids``."""

    def recover_prepared(self) -> dict[str, str]:
        """Resolve what killed committers left prepared on the shards that answer (two-phase commit,
        ``pg_shard_commit.py``); txid -> outcome."""


@runtime_checkable
class VectorDelta(Protocol):
    """The methods of ``Capability.VECTOR_DELTA``: vectors written outside the ANN index, folded into it later."""

    def fold(self, chunk: int = 500, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Move every vector of the delta into its model's ANN index, ``chunk`` rows a transaction (a fold cut
        short leaves each row folded or still in the delta, findable either way); ``progress(done, total)``.
        Returns {"folded", "chunks", "pending" (left), "seconds"}; a second fold moves nothing."""

    def pending_vectors(self) -> int:
        """Vectors in the delta: written and found by ``nearest`` (scored exactly), not in an ANN index yet."""

    def pack(self) -> dict[str, Any]:
        """Hold the vectors that are only scored (not searched) written since the last pack in their compact form
        (PostgreSQL: context vectors as int8, store/pg_q8.py). Returns {"packed", "seconds"}; apart from ``fold``
        because a coarser precision moves their scores slightly."""


class ReadAhead(Protocol):
    """The method of ``Capability.READ_AHEAD``."""

    def read_ahead(self, read: Callable[[Any], Any]) -> Any:
        """Start ``read(store)`` on a second connection of this store (outside a transaction; inside one, on this
        connection when the answer is asked) and return at once a pending read whose ``result()`` gives its answer
        or raises the read's error (a ``StoreError`` when the store closed first), and whose ``running()`` says
        whether it is still in flight on the other connection (so this one is free meanwhile)."""


OPTIONAL_METHODS: dict[Capability, type] = {Capability.VECTOR_SEARCH: VectorSearch,
                                            Capability.VECTOR_DELTA: VectorDelta,
                                            Capability.READ_AHEAD: ReadAhead}
"""The protocol holding each optional capability's methods (a store has them exactly when it declares it)."""
