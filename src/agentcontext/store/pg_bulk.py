"""The PostgreSQL bulk write path: rows go in by ``COPY`` into temporary staging tables and land with set-based
statements, in the caller's transaction (versions, change log and the text index, a generated column, with them), so
no row costs a round trip and a batch is all or nothing.

Vectors are sent in binary (float32, pgvector's own form) and stored as halfvec (migration 5); a conversation turn's
context vector (a node's ``props.pair_hash`` that no node's text has) as int8 at once (``pg_q8``: its int8 form sent
beside its values, the one INSERT keeping it), known without a lookup a row: a write (``put_vectors``: batch_store
writes its nodes first) packs the pair hashes the nodes of the same transaction named (``VectorLoader.name_pairs``); a
copy (``import_rows``: migrate, a tenant move, the 1M build) is exact, so it packs only rows whose values are an int8
row's already (quantized again they come back bit for bit: a packed store copied comes out packed, and ``migrate``'s
digests hold). Any other context row (its node in an earlier transaction; a copied whole one) stays whole until a pack
(``pg_q8.compact``). (Session 17 looked each staged row up through the props' GIN index instead: 2.5 ms a row at
1,000,000 memories, reverted.) Their HNSW index
is the costly part of a load: one row inserted into it costs about ten times its share of a bulk build
(``REBUILD_RATIO``), so a load that is large beside what its model holds drops the index and builds it again after the
rows, with more memory and a parallel worker for the build (``pg_vectors.BUILD_MEMORY``, ``BUILD_WORKERS``), just before
the transaction commits: one build for however many batches a transaction loads. An import into an empty table
(``Store.import_rows``: a store copied whole, a first load) does the same for the table's other indexes
(``drop_indexes``): the three GIN indexes of nodes cost more a row inserted than the row itself; built after the rows,
each is one sort, and the table is analyzed before the next statement plans against it."""
from __future__ import annotations

import weakref
from typing import Any, Sequence

import numpy as np

from ..errors import ValidationError
from .migrations.postgres import NODE_FIELDS, T
from . import pg_changes, pg_hash, pg_props, pg_q8, pg_recorded, pg_text_counts
from .pg_vectors import (HALF_MAX, MAX_INDEXED_DIM, STORED, ann_index_name, create_ann_index,
                         raise_build_settings)
from .rows import NODE_COLS, held_embed_text

# The switch-over between inserting into the HNSW index and building it again after the rows. Measured on this
# 2-core machine (load average ~8, /tmp figures in the pgbulk report; 384-d LoCoMo-like vectors, m 16,
# ef_construction 64): a bulk build of 40,000 rows cost 0.85 ms a row (vector) / 1.02 ms (halfvec), inserting
# 5,000 more into the built index 7.3 / 10.2 ms a row: 8.6x / 10x. With E rows held and n new ones, building again
# costs about (E + n) * b, inserting n * i: the build wins while E < n * (i / b - 1), about 8 n. We switch at
# E < REBUILD_RATIO * n, half that, because a build's cost a row grows once the graph outgrows
# maintenance_work_mem and because the dropped index leaves the table locked (readers of vectors wait) until
# commit: a large load into an empty or small store rebuilds; 10,000 memories into a 1,000,000-memory store insert.
REBUILD_RATIO = 4
REBUILD_MIN = 1000  # fewer new rows are always inserted into the index (a build of 1,000 took ~1 s, inserting ~7 s)

# the node fields with the hashes as bytes (migration 13, pg_hash): the stages of a schema that holds them so
NODE_FIELDS_BYTES = NODE_FIELDS.replace(f"content_hash {T}", "content_hash BYTEA").replace(f"embed_hash {T}",
                                                                                          "embed_hash BYTEA")
STAGES = {
    "stage_vectors": f"hash {T}, model {T}, dim INTEGER, vector vector",
    "stage_vectors_q8": f"hash {T}, model {T}, dim INTEGER, vector vector, q8 BYTEA, q8_scale REAL",
    "stage_nodes": f"id {T} NOT NULL, {NODE_FIELDS}, tag_text {T}",
    "stage_versions": f"id {T} NOT NULL, {NODE_FIELDS}",
    "stage_nodes_b": f"id {T} NOT NULL, {NODE_FIELDS_BYTES}, tag_text {T}",
    "stage_versions_b": f"id {T} NOT NULL, {NODE_FIELDS_BYTES}",
    # migration 16: the ranking's props as columns (pg_props.MOVED)
    "stage_nodes_c": f"id {T} NOT NULL, {NODE_FIELDS_BYTES}, tag_text {T}, conversation_id {T}, created_at {T}, "
                     f"pair_hash BYTEA, prev {T}, user_id {T}",
    # migration 18: a node's recorded time a timestamp, its text kept where none gives it back (pg_recorded)
    "stage_nodes_d": f"id {T} NOT NULL, {NODE_FIELDS_BYTES.replace(f'recorded_at {T}', 'recorded_at timestamptz')}, "
                     f"tag_text {T}, conversation_id {T}, created_at {T}, pair_hash BYTEA, prev {T}, user_id {T}, "
                     f"recorded_text {T}",
}
HASH_COLS = ("content_hash", "embed_hash")  # a node's hashes: bytes on a schema of migration 13


def held_cols(pc: bool, rt: bool) -> str:
    """The columns a node row of ``nodes`` holds after its others: the props the ranking reads (``pc``, migration 16:
    ``pg_props.MOVED``), the recorded time's text where no timestamp gives it back (``rt``, 18: ``pg_recorded``)."""
    return "".join(f", {c}" for c in (*(pg_props.MOVED if pc else ()), *(("recorded_text",) if rt else ())))


def hashes_held(rows: Sequence[Sequence[Any]], names: Sequence[str], nb: bool,
                pc: bool = False, rt: bool = False) -> Sequence[Sequence[Any]]:
    """Copied node rows (columns ``names``) as ``nodes`` holds them (``nb``, migration 13): their text hashes as bytes,
    their props without an updated_at equal to their created_at (``pg_props``); ``pc`` (migration 16): the props the
    ranking reads cut from the text, each row followed by their columns (``pg_props.MOVED``); ``rt`` (18): the
    recorded time split (``pg_recorded.split_rows``), its kept text last (``held_cols``)."""
    if not nb:
        return rows
    if rt:
        return pg_recorded.split_rows(hashes_held(rows, names, nb, pc), names)
    at, props = [names.index(c) for c in HASH_COLS], names.index("props")
    out = []
    for r in rows:
        r = list(r)
        for i in at:
            r[i] = pg_hash.node_param(r[i], True)
        if pc:  # (one parse of the text: pg_props.held_split_text)
            r[props], moved = pg_props.held_split_text(r[props])
            r.extend(moved)
        else:
            r[props] = pg_props.held_text(r[props])
        out.append(r)
    return out


# Connections whose transactions may end prepared (a shard's: pg_shard_commit), which PostgreSQL refuses after any use
# of a temporary table: they stage in unlogged tables of the schema instead (one writer at a time holds the schema's
# writer lock), emptied before the commit (``clear_stages``); the stages each used, by connection.
SHARED_STAGES: "weakref.WeakKeyDictionary[Any, set[str]]" = weakref.WeakKeyDictionary()


def stage(db: Any, name: str, cols: str, rows: Sequence[Sequence[Any]], types: list[str] | None = None) -> None:
    """Fill the session's temporary table ``name`` with ``rows`` by COPY (binary when ``types`` are given). It
    lives as long as the connection and is emptied at every commit; rows staged earlier in this transaction go.
    (A connection in ``SHARED_STAGES``: an unlogged table of the schema, emptied by ``clear_stages``.)"""
    used = SHARED_STAGES.get(db)
    if used is None:
        db.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name} ({STAGES[name]}) ON COMMIT DELETE ROWS")
    else:
        db.execute(f"CREATE UNLOGGED TABLE IF NOT EXISTS {name} ({STAGES[name]})")
        used.add(name)
    db.execute(f"DELETE FROM {name}")
    binary = " (FORMAT BINARY)" if types else ""
    with db.cursor() as cur, cur.copy(f"COPY {name} ({cols}) FROM STDIN{binary}") as copy:
        if types:
            copy.set_types(types)
        for row in rows:
            copy.write_row(row)


def clear_stages(db: Any) -> None:
    """Empty the unlogged stages this connection's transaction used, before it commits (no other writer sees them):
    TRUNCATE, so their files keep no staged text (an erased one included) as dead rows."""
    used = SHARED_STAGES.get(db)
    if used:
        db.execute(f"TRUNCATE {', '.join(sorted(used))}")
        used.clear()


def check_vectors(items: Sequence[tuple[str, Any]]) -> None:
    """ValidationError naming the first vector the store cannot hold (NaN or infinity: pgvector refuses them; a value
    beyond float16's range: the column is halfvec), before anything of the batch is written. Shapes are checked by
    the caller."""
    arrays = [np.asarray(v, dtype=np.float32) for _, v in items]
    if not arrays:
        return
    matrix = _stacked(arrays)
    if matrix is not None:
        rows = np.flatnonzero(~np.isfinite(matrix).all(axis=1))
    else:  # mixed shapes: the caller names the bad one; here each row alone
        rows = [i for i, a in enumerate(arrays) if a.size and not np.isfinite(a).all()]
    if len(rows):
        h = items[int(rows[0])][0]
        raise ValidationError(f"vector for {h} holds NaN or infinity, which the store cannot hold; nothing of this "
                              "batch was written: fix that vector (or leave it out, and the text is embedded)", hash=h)
    _check_range(items, arrays, matrix)


def check_range(items: Sequence[tuple[str, Any]]) -> None:
    """ValidationError naming the first (finite) vector holding a value beyond +-HALF_MAX, which halfvec cannot hold;
    nothing of the batch is written."""
    arrays = [np.asarray(v, dtype=np.float32) for _, v in items]
    _check_range(items, arrays, _stacked(arrays))


def _stacked(arrays: list[np.ndarray]) -> np.ndarray | None:
    """The arrays as one matrix (one numpy pass over a batch instead of a call a row), or None for mixed shapes."""
    try:
        return np.stack(arrays) if arrays else None
    except ValueError:
        return None


def _check_range(items: Sequence[tuple[str, Any]], arrays: list[np.ndarray], matrix: np.ndarray | None) -> None:
    if matrix is not None and matrix.ndim == 2 and matrix.shape[1]:
        beyond = np.flatnonzero(np.abs(matrix).max(axis=1) > HALF_MAX)
    else:
        beyond = [i for i, a in enumerate(arrays) if np.abs(a).max(initial=0.0) > HALF_MAX]
    if len(beyond):
        h = items[int(beyond[0])][0]
        raise ValidationError(f"vector for {h} holds a value beyond +-65504, which the store cannot hold (it keeps "
                              "vectors as float16, halfvec); nothing of this batch was written: scale that vector "
                              "(embeddings are usually unit length)", hash=h)


def packed_rows(rows: Sequence[tuple], named: set[str], copied: bool) -> list[tuple]:
    """Vector rows (hash, model, dim, float32 values) each with the int8 form and scale it is written in when no node's
    text has it (``pg_q8.quantize``: one numpy pass a shape), or none (NULL): for a row a node of this transaction
    named as its pair vector (``named``), or, in a copy (``copied``), for a row whose values are an int8 row's already
    (rebuilt from its bytes by the export: quantized again, they come back bit for bit, so the copy loses nothing)."""
    out: list[tuple] = [(*r, None, None) for r in rows]
    shapes: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        if copied or r[0] in named:
            shapes.setdefault(int(np.shape(r[3])[0]) if np.ndim(r[3]) == 1 else -1, []).append(i)
    for size, at in shapes.items():
        if size <= 0:
            continue
        if copied:  # only values float16 holds exactly can be an int8 row's (a float32 source's are not: dropped on
            # their first value, without quantizing a whole copy of float vectors, a 1M build's)
            first = np.fromiter((rows[i][3][0] for i in at), dtype=np.float32, count=len(at))
            at = [i for i, ok in zip(at, first == first.astype(np.float16).astype(np.float32)) if ok]
            if not at:
                continue
        values = np.stack([np.asarray(rows[i][3], dtype=np.float32) for i in at])
        if copied:  # then only rows whose first values are whole steps of their scale (a halfvec row's are not)
            keep = pg_q8.stepped(values)
            at, values = [i for i, ok in zip(at, keep) if ok], values[keep]
            if not at:
                continue
        packed, scale = pg_q8.quantize(values)
        exact = pg_q8.exact(values, packed, scale) if copied else np.ones(len(at), dtype=bool)
        for i, b, sc, ok in zip(at, packed, scale, exact):
            if ok:
                out[i] = (*rows[i], b, float(sc))
    return out


class VectorLoader:
    """Vectors of one transaction: staged, then inserted (or upserted) in one statement each; decides per (model,
    dim) whether to keep the HNSW index or drop it and build it after the rows (``finish``)."""

    def __init__(self, db: Any, delta: bool = True, q8: bool = False, hb: bool = False, nb: bool = False) -> None:
        self.db = db
        self.nb = nb  # the nodes' hashes as bytes too (migration 13): a staged hash found by nodes_embed as bytes
        self.hb = hb  # vectors keyed by the hash's bytes (migration 10, pg_hash); the stage holds text hashes
        self.delta = delta  # the schema has the delta (migration 8); False: a store pinned to an older schema
        self.q8 = q8  # context vectors may be held as int8 (migration 9, pg_q8): a row put again holds a vector
        self.new: dict[tuple[str, int], int] = {}  # rows this transaction added, by (model, dim)
        self.build: set[tuple[str, int]] = set()  # indexes to build in ``finish``
        self.pending = 0  # rows this transaction staged into the delta (``pg_delta``)
        self.named: set[str] = set()  # pair hashes the nodes this transaction wrote name (``name_pairs``)
        self.key_built = False  # the key was dropped for this load and built after its rows (``drop_indexes``)

    def name_pairs(self, hashes: Sequence[str]) -> None:
        """The pair hashes (``props.pair_hash``) of nodes this transaction wrote: their vectors, put later in it, are
        context rows, written as int8 (unless a node's text has them)."""
        if self.q8:  # (a schema without int8 rows: nothing to note)
            self.named.update(h for h in hashes if h)

    def _stage(self, rows: Sequence[tuple], copied: bool) -> str:
        """``rows`` staged (binary COPY), with their int8 forms where a context row is written so
        (``packed_rows``); the stage's name."""
        if not self.q8:
            stage(self.db, "stage_vectors", "hash, model, dim, vector", rows, ["text", "text", "int4", "vector"])
            return "stage_vectors"
        stage(self.db, "stage_vectors_q8", "hash, model, dim, vector, q8, q8_scale",
              packed_rows(rows, self.named, copied), ["text", "text", "int4", "vector", "bytea", "float4"])
        return "stage_vectors_q8"

    def load(self, rows: Sequence[tuple], upsert: bool, copied: bool = False) -> None:
        """``rows``: (hash, model, dim, float32 vector). A row a node's text has lands ``searched`` (in the HNSW
        index) when its model's index is built after the rows or cannot be made (too many dimensions), else
        ``pending``: in the delta, outside the index (``pg_delta``), so no write pays for an HNSW insert."""
        if not rows:
            return
        db = self.db
        name = self._stage(rows, copied)
        staged: dict[tuple[str, int], int] = {}
        for r in rows:
            staged[(r[1], int(r[2]))] = staged.get((r[1], int(r[2])), 0) + 1
        for key in sorted(staged):
            self._plan(*key, staged[key], name)
        direct = sorted(f"{m}\x1f{d}" for m, d in staged if (m, d) in self.build or not 0 < d <= MAX_INDEXED_DIM)
        self.pending += sum(n for (m, d), n in staged.items() if f"{m}\x1f{d}" not in direct)
        # wanted: a node's text has it (put_nodes marks the vectors put before their nodes: mark_searched); a
        # lateral LIMIT 1 keeps it a lookup a row: as EXISTS (LIMIT 1 or not) PostgreSQL 18 hashes every embed hash
        # of nodes for each batch (a whole index scan, growing with the store; 0.77 s against 0.65 s for 20,000
        # probes at 200,000 nodes)
        if not self.delta:  # an older schema (tests pin one): every row searched as it comes, as before the delta
            direct = sorted(f"{m}\x1f{d}" for m, d in staged)
            self.pending = 0
        flags = "wanted AND direct, wanted AND NOT direct" if self.delta else "wanted"
        held_key = pg_hash.into("s.hash", self.hb)  # the stage's text hash as vectors holds it
        # a context row (staged with its int8 form: ``packed_rows``) that no node's text has is written as int8 at
        # once: a load comes out as compact as a pack and a rewrite leave it. A vector no node of the transaction
        # names (an embedding cache filled before the nodes) is written whole, so a node's own vector is never
        # rebuilt from int8 bytes
        paired = ", s.q8 IS NOT NULL AND l.wanted IS NULL AS paired, s.q8, s.q8_scale" if self.q8 else ""
        held = (", CASE WHEN paired THEN NULL ELSE vector END, CASE WHEN paired THEN q8 END, CASE WHEN paired THEN "
                "q8_scale END" if self.q8 else ", vector")
        cols = ", vector, q8, q8_scale" if self.q8 else ", vector"
        insert = (f"INSERT INTO vectors(hash, model, dim{cols}, searched{', pending' if self.delta else ''}) SELECT "
                  f"hash, model, dim{held}, {flags} FROM (SELECT {held_key} AS hash, s.model, s.dim, "
                  f"s.vector::{STORED} AS vector, l.wanted IS NOT NULL AS wanted, (s.model || E'\\x1f' || s.dim) = "
                  f"ANY(%s) AS direct{paired} FROM {name} s LEFT JOIN LATERAL (SELECT true AS wanted FROM nodes n "
                  f"WHERE n.embed_hash = {pg_hash.into('s.hash', self.nb)} LIMIT 1) l ON true) s "
                  "ORDER BY hash, model")
        same = "vectors.dim = excluded.dim AND vectors.vector = excluded.vector"
        if upsert and self.delta:  # a vector put again unchanged is left alone; a changed one leaves the index
            guard = ""
            if self.q8:  # an int8 row put again is compared by its bytes and scale (a whole row with a whole row)
                same = ("vectors.dim = excluded.dim AND CASE WHEN excluded.q8 IS NULL THEN vectors.vector = "
                        "excluded.vector ELSE vectors.q8 IS NOT DISTINCT FROM excluded.q8 AND vectors.q8_scale IS NOT "
                        "DISTINCT FROM excluded.q8_scale END")
                guard = " AND (excluded.q8 IS NULL OR NOT (vectors.searched OR vectors.pending))"  # (never so)
            kept = f"((vectors.searched AND {same}) OR excluded.searched)"
            # a row taking whole values holds no int8 form; one taking an int8 form (a changed context vector a node
            # of the transaction names, or a whole context row held as int8 now) no halfvec. A q8 row put whole
            # again: ``same`` is NULL, updated only when a node has its text now (excluded searched or pending)
            cleared = ", q8 = excluded.q8, q8_scale = excluded.q8_scale" if self.q8 else ""
            insert += (f" ON CONFLICT (hash, model) DO UPDATE SET dim = excluded.dim, vector = excluded.vector"
                       f"{cleared}, searched = {kept}, pending = NOT {kept} AND (vectors.pending OR "
                       f"vectors.searched OR excluded.pending) WHERE (NOT ({same}) OR (excluded.searched AND NOT "
                       "vectors.searched) OR (excluded.pending AND NOT vectors.searched AND NOT vectors.pending))"
                       f"{guard}")
        elif upsert:
            insert += (" ON CONFLICT (hash, model) DO UPDATE SET dim = excluded.dim, vector = excluded.vector, "
                       f"searched = vectors.searched OR excluded.searched WHERE NOT ({same}) OR (excluded.searched "
                       "AND NOT vectors.searched)")
        # the rows new to the store (xmax 0: inserted, not updated), by model: what the next batch's plan counts
        counted = db.execute(f"WITH put AS ({insert} RETURNING model, dim, xmax = 0 AS fresh) SELECT model, dim, "
                             "count(*) FILTER (WHERE fresh) FROM put GROUP BY model, dim", (direct,)).fetchall()
        for model, dim, fresh in counted:
            self.new[(model, dim)] = self.new.get((model, dim), 0) + fresh

    def _plan(self, model: str, dim: int, staged: int, name: str = "stage_vectors") -> None:
        """Keep the HNSW index of (model, dim) (the rows go into the delta) or drop it and build it after the rows
        (``finish``), by ``REBUILD_RATIO``: ``staged`` rows are about to be put, ``self.new`` were this
        transaction's so far."""
        key = (model, dim)
        if not 0 < dim <= MAX_INDEXED_DIM or key in self.build:
            return
        db = self.db
        loaded = self.new.get(key, 0)
        found = db.execute("SELECT c.reltuples FROM pg_class c WHERE c.relname = %s AND c.relnamespace = "
                           "current_schema()::regnamespace", (ann_index_name(model, dim),)).fetchone()
        exists = found is not None
        if loaded + staged >= REBUILD_MIN and not (exists and found[0] >= REBUILD_RATIO * (loaded + staged) + loaded):
            # (the index's row estimate, from its build or the last VACUUM/ANALYZE, spares the counts when the rows
            # it held were already far more than the load, new or not: a load into a large store)
            fresh = staged  # only rows not held yet cost an index insert
            if staged >= REBUILD_MIN:
                fresh = db.execute(f"SELECT count(*) FROM {name} s WHERE s.model = %s AND s.dim = %s AND NOT "
                                   f"EXISTS (SELECT 1 FROM vectors v WHERE v.hash = {pg_hash.into('s.hash', self.hb)} "
                                   "AND v.model = s.model)",
                                   key).fetchone()[0]
            if loaded + fresh >= REBUILD_MIN:
                cap = REBUILD_RATIO * (loaded + fresh)  # rows held before this transaction, counted up to the cap
                held = db.execute("SELECT count(*) FROM (SELECT 1 FROM vectors WHERE model = %s AND dim = %s LIMIT "
                                  "%s) c", (model, dim, cap + loaded)).fetchone()[0] - loaded
                if held < cap:
                    if exists:
                        db.execute(f"DROP INDEX {ann_index_name(model, dim)}")
                    self.build.add(key)
                    return
        if not exists:  # a new model's small load: its index first (empty), then its rows (into the delta)
            create_ann_index(db, model, dim)

    def finish(self) -> None:
        """Build the indexes dropped (or never made) for large loads, with more memory and a parallel worker for
        the build alone (``SET LOCAL``)."""
        if self.build:
            raise_build_settings(self.db)
            for model, dim in sorted(self.build):  # the delta's rows of the model go into the build too
                if self.delta:
                    self.db.execute("UPDATE vectors SET searched = true, pending = false WHERE pending AND model = "
                                    "%s AND dim = %s", (model, dim))
                create_ann_index(self.db, model, dim)
            # the key, grown row by row in hash order across batches (pages split half full: ~100 bytes a row at
            # 1,000,000 memories), built again as one sorted pass (~68): a load this large rewrote most of it anyway
            # (an import into an empty table built it after its rows already: ``drop_indexes``)
            key = None if self.key_built else self.db.execute(
                "SELECT conindid::regclass::text FROM pg_constraint WHERE conrelid = 'vectors'::regclass AND "
                "contype = 'p'").fetchone()
            if key:
                self.db.execute(f"REINDEX INDEX {key[0]}")
        self.build = set()


def mark_searched(db: Any, hashes: Sequence[str], building: Sequence[tuple[str, int]] = (),
                  delta: bool = True, q8: bool = False, hb: bool = False) -> None:
    """Vectors of these embed hashes (nodes just written) join the delta (``pending``; a fold puts them in the HNSW
    index), if they were put before any node had their text (a context vector's text that became a node's, or
    vectors copied before the nodes); those of a model whose index this transaction builds (``building``) are
    marked ``searched`` at once (the build takes them). A context vector held as int8 (``q8``: migration 9) gets
    its values back from its bytes (``pg_q8``: within 1.2e-3 of each value). ``hb``: vectors keyed by the hash's
    bytes (migration 10, ``pg_hash``)."""
    keys = pg_hash.params(hashes, hb)
    if hashes and not delta:  # an older schema (tests pin one): into the index at once, as before the delta
        db.execute("UPDATE vectors SET searched = true WHERE hash = ANY(%s) AND NOT searched", (keys,))
    elif hashes:
        direct = [f"{m}\x1f{d}" for m, d in building]
        held = f", vector = {pg_q8.value_sql()}, q8 = NULL, q8_scale = NULL" if q8 else ""
        db.execute("UPDATE vectors SET searched = (model || E'\\x1f' || dim) = ANY(%s), pending = NOT ((model || "
                   f"E'\\x1f' || dim) = ANY(%s)){held} WHERE hash = ANY(%s) AND NOT searched AND NOT pending",
                   (direct, direct, keys))


def live_cols(pc: bool, rt: bool = False) -> str:
    """The columns of a ``live_row``."""
    return f"{NODE_COLS}, embed_text, tag_text{held_cols(pc, rt)}"


def update_nodes(db: Any, rows: Sequence[tuple], nb: bool = False, pc: bool = False, rt: bool = False) -> None:
    """Live rows that change (``live_cols``): their current versions move to node_versions (the superseded ones; their
    props whole, their recorded time as text), then the live rows take the staged values; two statements. ``nb``: the
    rows' hashes are bytes (migration 13); ``pc``: the ranking's props are columns (migration 16); ``rt``: the
    recorded time a timestamp (migration 18)."""
    staged = "stage_nodes_d" if rt else "stage_nodes_c" if pc else "stage_nodes_b" if nb else "stage_nodes"
    cols = live_cols(pc, rt)
    stage(db, staged, cols, rows)
    read = {"props": pg_props.read_sql("n") if pc else "n.props",
            "recorded_at": pg_recorded.read_sql("n") if rt else "n.recorded_at"}
    old = ", ".join(read.get(c, f"n.{c}") for c in NODE_COLS.split(", "))
    db.execute(f"INSERT INTO node_versions({NODE_COLS}, embed_text) SELECT {old}, NULL FROM nodes n "
               f"JOIN {staged} s ON s.id = n.id AND s.namespace = n.namespace")
    sets = ", ".join(f"{c} = s.{c}" for c in cols.split(", ")[1:])
    db.execute(f"UPDATE nodes n SET {sets} FROM {staged} s WHERE n.id = s.id AND n.namespace = s.namespace")


def import_versions(db: Any, rows: Sequence[tuple], nb: bool = False) -> None:
    """Copied version rows (``transfer.TABLES`` columns, text hashes), but those a live row holds (its current
    version). ``nb``: the schema holds the nodes' hashes as bytes (migration 13)."""
    if not rows:
        return
    cols = f"{NODE_COLS}, embed_text"
    name = "stage_versions_b" if nb else "stage_versions"
    stage(db, name, cols, hashes_held(rows, cols.split(", "), nb))
    # a lateral lookup a staged row through the nodes' key: as NOT EXISTS the planner hashed the whole
    # nodes table for each batch (0.6-0.9 s a batch of 10,000 at 200,000 nodes, growing with the store; 0.2 s so)
    staged = ", ".join(f"s.{c}" for c in cols.split(", "))
    db.execute(f"INSERT INTO node_versions({cols}) SELECT {staged} FROM {name} s LEFT JOIN LATERAL (SELECT "
               "true AS live FROM nodes n WHERE n.id = s.id AND n.namespace = s.namespace AND n.version = s.version "
               "LIMIT 1) l ON true WHERE l.live IS NULL")


# the tables whose primary key an import into them when empty drops and builds after the rows: the vectors' key,
# maintained row by row across batches in hash order, split its pages half full, and was REINDEXed after a large load
# (the same ~68 bytes a row, built once); no statement of the copy looks a vector up by it (``VectorLoader._plan``
# counts the staged rows against the table only before its first build decision, when the table is empty)
KEYS_AFTER = ("vectors",)
KEY_AFTER = "ADD CONSTRAINT"  # how the definition of a key built after the rows reads
COUNTS_AFTER = "-- counts"  # a mark among an import's dropped definitions: BM25's counts made after the rows


def drop_indexes(db: Any, table: str) -> list[str]:
    """For an import into an empty ``table`` (``Store.import_rows``: a whole store copied, a large load): drop its
    indexes and return their definitions, so ``rebuild_indexes`` builds each once over every row instead of every row
    being inserted into each (the nodes' three GIN indexes, the text index's above all, cost more a row inserted than
    the row itself). Kept: the indexes of keys and unique constraints (the load's statements look rows up by them and
    uniqueness is checked as rows come; but the key of a ``KEYS_AFTER`` table, dropped and built after the rows by
    its definition ``ALTER TABLE ... ADD CONSTRAINT``) and the HNSW ones (``VectorLoader`` decides on those).
    Nothing is dropped when the table holds a row. The drop holds the table's lock until the commit, as a rebuilt
    HNSW index does: readers of that table wait for the load (of an empty table: no reader has anything to read in
    it yet)."""
    if db.execute(f"SELECT EXISTS (SELECT 1 FROM {table})").fetchone()[0]:
        return []
    found = db.execute("SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
                       "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
                       "WHERE i.indrelid = %s::regclass AND NOT i.indisunique AND a.amname <> 'hnsw' AND NOT EXISTS "
                       "(SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) ORDER BY 1",
                       (table,)).fetchall()
    keys = []
    if table in KEYS_AFTER:  # (a duplicate row of the copy is refused by the key's build, as by the insert before)
        keys = db.execute("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                          "%s::regclass AND contype = 'p'", (table,)).fetchall()
    for name, _ in keys:
        db.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
    for name, _ in found:
        db.execute(f"DROP INDEX {name}")
    return [f"ALTER TABLE {table} {KEY_AFTER} {name} {d}" for name, d in keys] + [d for _, d in found]


def rebuild_indexes(db: Any, table: str, definitions: Sequence[str]) -> None:
    """The indexes ``drop_indexes`` dropped, built over the loaded rows (with ``BUILD_MEMORY`` and ``BUILD_WORKERS``
    for this transaction), then the table analyzed: the planner last saw it empty (the statistics take effect at the
    commit)."""
    if not definitions:
        return
    raise_build_settings(db)
    for definition in definitions:
        db.execute(definition)
    db.execute(f"ANALYZE {table}")


def live_row(node: Any, props_json: str, nodes_bytes: bool, columns: bool = False, recorded: bool = False) -> tuple:
    """A node's live row as ``nodes`` holds it (``live_cols``): on a schema of migration 13 (``nodes_bytes``) its
    hashes as bytes and ``updated_at`` held once, of migration 16 (``columns``) the props the ranking reads as
    columns (pg_props), of 18 (``recorded``) its recorded time split (the timestamp's text or None, the text kept last:
    ``pg_recorded``)."""
    moved: tuple = ()
    if columns:  # (migration 16 holds the nodes' hashes as bytes too)
        props_json, moved = pg_props.held_split(node.props, props_json)
    elif nodes_bytes:
        props_json = pg_props.held(node.props, props_json)
    hashed = pg_hash.node_param
    at, kept = pg_changes.split(node.recorded_at) if recorded else (node.recorded_at, None)
    return (node.id, node.kind, node.namespace, node.key, node.title, node.summary, node.content, props_json,
            list(node.tags), node.valid_from, node.valid_until, at, None, node.version,
            hashed(node.content_hash, nodes_bytes), node.created_by, hashed(node.embed_hash, nodes_bytes),
            node.tokens, held_embed_text(node.title, node.content, node.embed_text), " ".join(node.tags), *moved,
            *((kept,) if recorded else ()))


def start_import(store: Any, table: str) -> list[str]:
    """An import into an empty table: its indexes dropped, built again once after the rows (``drop_indexes``; the
    vectors' key too: the loader then leaves it as built); into an empty ``nodes``, BM25's counts made once after
    the rows (``pg_text_counts.suspend``). Returns what ``finish_import`` makes again."""
    dropped = drop_indexes(store._db, table)
    if table == "vectors" and KEY_AFTER in "".join(dropped):
        store._loader.key_built = True
    if table == "nodes" and pg_text_counts.suspend(store._db):
        dropped.append(COUNTS_AFTER)
    return dropped


def finish_import(db: Any, table: str, dropped: list[str]) -> None:
    """After an import's rows: BM25's counts when they were suspended, then the dropped indexes."""
    if COUNTS_AFTER in dropped:
        dropped = [d for d in dropped if d != COUNTS_AFTER]
        pg_text_counts.resume(db)
    rebuild_indexes(db, table, dropped)
