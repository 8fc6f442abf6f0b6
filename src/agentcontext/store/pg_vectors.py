"""Dense search in PostgreSQL: one pgvector HNSW index per (model, dimension), and the SQL that uses it.

Vectors live in one table keyed by (text hash, model) with an untyped ``halfvec`` column (float16, 2 bytes a
dimension: migration 5), so each model's rows get a partial expression index ``USING hnsw ((vector::halfvec(dim))
halfvec_ip_ops) WHERE model = '<model>' AND dim = <dim> AND searched`` (only the vectors nodes' texts have,
migration 4), made by the migration for the models a store already holds and by ``put_vectors`` for a new one (or,
for a large load, after its rows: ``pg_bulk``). A query names the same expression and predicate (the model as a
literal, so the planner can match the partial index) and joins the nodes that use each vector, filtered; the session
runs HNSW iterative scans (``hnsw.iterative_scan = relaxed_order``), so a filter that rejects most rows still fills
``k``, and results come back re-sorted. Scores are the stored values (cast to ``vector``) against the float32 query.
Why halfvec (issue 23 s2, measured at 200,000 LoCoMo-like memories, ``benchmarks/postgres_halfvec.py``): a float32
row of 384 dims (~1,690 bytes) fits 4 to a page, a halfvec one 8, so the table costs half; the HNSW index 1,170
bytes a memory against 2,048; recall@10 against exact float32 search stays where it was (exact search over the
float16 values: 0.9995; the halfvec HNSW walk 0.995 against the float32 one's 0.9965, ef_search 1000), scores move
by at most 6e-5. A value beyond float16's range (``HALF_MAX``) is refused (ValidationError naming its vector).
When the filter leaves few nodes (``EXACT_ROWS``) the index is skipped and every one of them is scored exactly.
Vectors written since the last fold are not in the index (``pending``, migration 8, ``pg_delta``): ``nearest_sql``
scores them exactly beside the walk, and the caller keeps the best ``k`` of both.
"""
from __future__ import annotations

import hashlib
from typing import Any

from .pg_hash import into, out

MAX_INDEXED_DIM = 4000  # pgvector's HNSW limit for halfvec; larger vectors are searched exactly
STORED = "halfvec"  # the column's type: what the HNSW expression casts to, and a query vector with it
HALF_MAX = 65504.0  # the largest magnitude float16 holds
EXACT_ROWS = 2000  # at most this many filtered nodes: score them all (~5 us each) instead of walking the index
# HNSW candidate list per scan (pgvector's default is 40, its largest 1000), extended by iterative scans; recall@10
# against exact search (benchmarks/postgres_dense.py, 200 questions): at 1,000,000 memories with the graph below
# 0.979 at 600, 0.9875 at 800, 0.9915 at 1000 (100 questions: 0.931 at 200, 0.970 at 400); the walk at 800 costs
# 0.7-0.85x of one at 1000, and of the m 16 / ef_construction 64 graph's walk at 1000 (recall 0.9665)
EF_SEARCH = 800
# the graph (migration 11): at 1,000,000 memories m 16 / ef_construction 64 (pgvector's defaults) found 0.968 of the
# exact top 10 at ef_search 1000, m 24 / ef_construction 128 0.9915-0.995, for 1,219 bytes a memory instead of
# 1,170 and about 2.5x the index build's time (559 s quiet at 1M; docs/POSTGRES_SCALE.md)
HNSW_M, HNSW_EF_CONSTRUCTION = 24, 128
# Raised (never lowered) for a build: the graph of 2,000,000 rows of 384 dims takes a few GB; a graph
# larger than maintenance_work_mem is built far slower (pgvector warns). One parallel worker beside the leader on
# the 2-core machine measured.
BUILD_MEMORY = "2GB"
BUILD_WORKERS = 1
SESSION = [f"SET hnsw.ef_search = {EF_SEARCH}", "SET hnsw.iterative_scan = relaxed_order"]


def ann_index_name(model: str, dim: int) -> str:
    return "vectors_ann_" + hashlib.sha256(f"{model}\x1f{dim}".encode()).hexdigest()[:16]


def ann_predicate(db: Any, model: str, dim: int, alias: str = "") -> str:
    """``model = '<model>' AND dim = <dim> AND searched`` with the model as a quoted literal (what the partial index
    names). ``searched``: a live node's text has this vector (migration 4; ``pg_bulk``): the context vectors of
    conversation turns, looked up by hash alone, stay out of the index (half its rows, and of a load's index work)."""
    col = f"{alias}." if alias else ""
    return f"{col}model = {text_literal(model)} AND {col}dim = {int(dim)} AND {col}searched"


def text_literal(text: str) -> str:
    """A SQL string literal (standard_conforming_strings, PostgreSQL's default since 9.1: only quotes double)."""
    if "\x00" in text:
        raise ValueError("PostgreSQL text cannot hold NUL characters")
    return "'" + text.replace("'", "''") + "'"


def create_ann_index(db: Any, model: str, dim: int) -> bool:
    """Create the HNSW index of one (model, dimension) unless it exists or the dimension is too large for one."""
    if not 0 < int(dim) <= MAX_INDEXED_DIM:
        return False
    db.execute(f"CREATE INDEX IF NOT EXISTS {ann_index_name(model, dim)} ON vectors USING hnsw "
               f"((vector::{STORED}({int(dim)})) {STORED}_ip_ops) WITH (m = {HNSW_M}, ef_construction = "
               f"{HNSW_EF_CONSTRUCTION}) WHERE {ann_predicate(db, model, dim)}")
    return True


def ann_graph(db: Any, model: str, dim: int) -> tuple[int, int] | None:
    """(m, ef_construction) of the HNSW index of (model, dim) as built (pgvector's defaults, 16 and 64, where its
    options name none); None when there is no such index."""
    row = db.execute("SELECT c.reloptions FROM pg_class c WHERE c.relname = %s AND c.relnamespace = "
                     "current_schema()::regnamespace AND c.relkind = 'i'", (ann_index_name(model, dim),)).fetchone()
    if row is None:
        return None
    options = dict(o.split("=", 1) for o in row[0] or [])
    return int(options.get("m", 16)), int(options.get("ef_construction", 64))


def rebuild_ann_indexes(db: Any) -> list[tuple[str, int]]:
    """Build again every HNSW index of the current schema whose graph is not ``HNSW_M`` / ``HNSW_EF_CONSTRUCTION``
    (the rows it holds are unchanged: the delta's stay in the delta); the (model, dim) rebuilt. The caller's
    transaction holds the build settings (``raise_build_settings``)."""
    rebuilt = []
    for model, dim in db.execute("SELECT DISTINCT model, dim FROM vectors ORDER BY model, dim").fetchall():
        graph = ann_graph(db, model, dim)
        if graph is not None and graph != (HNSW_M, HNSW_EF_CONSTRUCTION):
            db.execute(f"DROP INDEX {ann_index_name(model, dim)}")
            create_ann_index(db, model, dim)
            rebuilt.append((model, int(dim)))
    return rebuilt


def raise_build_settings(db: Any) -> None:
    """``maintenance_work_mem`` and ``max_parallel_maintenance_workers`` raised (never lowered) to ``BUILD_MEMORY``
    and ``BUILD_WORKERS`` until the transaction ends (``SET LOCAL``): index builds sort and hold their graph in it."""
    db.execute("SELECT set_config('maintenance_work_mem', greatest(pg_size_bytes(current_setting("
               "'maintenance_work_mem')), pg_size_bytes(%s)) / 1024 || 'kB', true), "
               "set_config('max_parallel_maintenance_workers', greatest(current_setting("
               "'max_parallel_maintenance_workers')::int, %s)::text, true)", (BUILD_MEMORY, BUILD_WORKERS))


def has_ann_index(db: Any, model: str, dim: int) -> bool:
    return db.execute("SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = %s",
                      (ann_index_name(model, dim),)).fetchone() is not None


def held_predicate(model: str, dim: int, alias: str = "") -> str:
    """A vector a node's text has, indexed or in the delta (``searched OR pending``; ``pg_delta``)."""
    col = f"{alias}." if alias else ""
    return f"{col}model = {text_literal(model)} AND {col}dim = {int(dim)} AND ({col}searched OR {col}pending)"


def delta_predicate(model: str, dim: int, alias: str = "") -> str:
    """The delta's rows of one model (the partial index ``vectors_pending`` lists them)."""
    col = f"{alias}." if alias else ""
    return f"{col}model = {text_literal(model)} AND {col}dim = {int(dim)} AND {col}pending"


def nearest_sql(db: Any, model: str, dim: int, node_where: str, k: int, count_where: str | None = None,
                delta: bool = True, hb: bool = False) -> str:
    """(id, rid, inner product) of the ``k`` nearest filtered nodes, in one statement: when at most ``EXACT_ROWS``
    nodes pass the filter, every one of them is scored (its vector found by primary key; ``OFFSET 0`` keeps that a
    lookup, not a join over every vector), else the HNSW index is walked (iterative scan) and rows are filtered
    as they come, and beside it the delta (``pg_delta``: vectors not in the index yet) is scored exactly, best
    first, its nodes filtered until ``k`` pass (``WITH TIES``: rows as good as the k-th stay, so the caller's
    order by (score, rid) cuts them as one list would); the caller keeps the best ``k`` of both. ``node_where``
    holds conditions on ``n`` starting with `` WHERE ``. Whether the nodes are few is
    judged by reading up to ``EXACT_ROWS + 1`` of them (their rows), or, given ``count_where`` (the part of the
    filter an index of ``nodes`` answers alone: namespace, kind, title), by counting that many entries of the index
    (no row is read; at 1,000,000 memories the rows cost 2-19 ms a query): the nodes it counts hold every filtered
    one, so a count within ``EXACT_ROWS`` means few; the rest of the filter (not retracted) is left to the walk. The
    count is in the order of the (namespace, kind, title) index, so the planner walks that index (at most
    ``EXACT_ROWS + 1`` entries, whichever of namespace, kind and titles the filter names) whatever it thinks of the
    namespace's size: unordered, for a namespace that fills the table it read the table itself (a sequential scan
    stopped after ``EXACT_ROWS + 1`` rows: ~540 pages at 1,000,000 memories, through a ring buffer, so from the OS
    cache at every query, 3-9 ms on the dense pool's path, where the index takes ~0.5).
    Parameters: ``count_where``'s (when given), ``node_where``'s, the query vector three times, ``node_where``'s
    again, the query vector twice, ``node_where``'s a third time (without ``delta``, a store pinned to a schema
    before the delta, the last three are left out with the delta's branch). ``hb``: vectors keyed by the hash's
    bytes (migration 10): a node's text hash read through ``actx_hash``, a vector's through ``actx_hex``
    (``pg_hash``), so each side is still found by its index."""
    typed, pred = f"v.vector::{STORED}({int(dim)})", ann_predicate(db, model, dim, "v")
    exact = f"v.vector::vector({int(dim)})"  # scores: the stored values against the query
    conditions = node_where.replace(" WHERE ", " AND ", 1)
    if count_where is None:
        head = (f"WITH f AS MATERIALIZED (SELECT n.id, n.rid, n.embed_hash FROM nodes n{node_where} "
                f"LIMIT {EXACT_ROWS + 1}), few AS (SELECT count(*) <= {EXACT_ROWS} AS yes FROM f) ")
    else:  # f is read only when few (it is inlined below the one-time filter)
        head = (f"WITH few AS MATERIALIZED (SELECT count(*) <= {EXACT_ROWS} AS yes FROM (SELECT 1 FROM nodes n"
                f"{count_where} ORDER BY n.namespace, n.kind, n.title LIMIT {EXACT_ROWS + 1}) c), "
                f"f AS (SELECT n.id, n.rid, n.embed_hash FROM nodes n{node_where}) ")
    walked = (
        head + f"(SELECT f.id, f.rid, -({exact} <#> %s::vector({int(dim)})) AS score FROM f CROSS JOIN LATERAL (SELECT "
            f"vector FROM vectors v WHERE v.hash = {into('f.embed_hash', hb)} AND "
            f"{held_predicate(model, dim, 'v') if delta else pred} OFFSET 0) v "
            f"WHERE (SELECT yes FROM few) ORDER BY {exact} <#> %s::vector({int(dim)}), f.rid LIMIT {int(k)}) "
            f"UNION ALL (SELECT n.id, n.rid, -({exact} <#> %s::vector({int(dim)})) AS score FROM vectors v "
            f"JOIN nodes n ON n.embed_hash = {out('v.hash', hb)} WHERE {pred}{conditions} AND NOT (SELECT yes FROM "
            f"few) ORDER BY {typed} <#> %s::{STORED}({int(dim)}) LIMIT {int(k)})")
    if not delta:
        return walked
    return (walked + " UNION ALL (SELECT n.id, n.rid, d.score FROM (SELECT v.hash, "
            f"-({exact} <#> %s::vector({int(dim)})) AS score FROM vectors v WHERE "
            f"{delta_predicate(model, dim, 'v')} AND NOT (SELECT yes FROM few) ORDER BY 2 DESC OFFSET 0) d "
            "CROSS JOIN LATERAL (SELECT n.id, n.rid FROM nodes n WHERE "
            f"n.embed_hash = {out('d.hash', hb)}{conditions}) n ORDER BY d.score DESC FETCH FIRST {int(k)} ROWS WITH "
            "TIES)")
