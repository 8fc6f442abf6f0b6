"""Context vectors held as int8 (issue 23 s2, migration 9): a conversation turn's context vector (the embedding of
its pair with the turn before, ``props.pair_hash``) is read by hash and only scored against a query's vector, never
walked in an HNSW index; so a ``vectors`` row in neither index state (not ``searched``, not ``pending``) holds
its values as one signed byte a dimension (``q8``, ``bytea``) times a scale (``q8_scale``, its largest magnitude over
127) instead of a ``halfvec``: 388 bytes of values a row instead of 772, 15 rows a page instead of 9.

Measured (200,000 LoCoMo-like memories, 20,000 context vectors against 200 questions): inner products move by
3.0e-4 on average (at most 2.6e-3), the top 10 by the context score alone are 0.9925 the same; the fused ranking
weighs that score a third of the dense signal (``server_search._rank``). A 4-bit form moved them 5.4e-3 (top 10
0.876), a binary one 5.4e-2 (0.493): both left out.

A row holds ``vector`` or ``q8``, never both and never neither (constraint ``vectors_held``); the rows a node's text
has (searched or pending) always hold ``vector``. ``similarities`` reads a q8 row's bytes (binary protocol: a
memcpy in the server) and scores it in the client (``scores``). Measured on the way, at load 12: scoring them in the
server through array casts (a ``"char"[]`` column cast to ``vector``) cost ~0.08 ms a row, ~140 ms for the 1,800
context rows of a query, and sending a ``"char"[]`` (one send call an element) ~110 ms; so ``bytea``, quantized in
the client (``quantize``; the migration and ``compact`` too). Every other reader (rare: ``get_vectors``, export)
reads
``value_sql`` (the values as a ``halfvec``, rebuilt in the server with pgvector's casts: ~0.05 ms a row). A q8 row
whose text becomes a node's (``pg_bulk.mark_searched``) gets its values back from the bytes (``value_sql``); a put of
the same hash with a node behind it writes the full values again. A load writes a context row as int8 at once when a
node of the same transaction names it (``pg_bulk.VectorLoader``: batch_store), and a copy a row whose values are an
int8 row's already (``exact``); other context rows whole, packed later: migration 15 packs what a load left whole,
once, and ``compact`` (run by ``pg_delta.fold``) the rows written whole since; their old row versions are space the
table reuses."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

COLUMNS = "q8, q8_scale"
PACK_ROWS = 20000  # rows read, quantized and written back a statement (a migration's pack: ~30 MB of values)
NEITHER = "NOT {a}searched AND NOT {a}pending"
# the context rows that still hold a halfvec (written since the last pack): listed by a partial btree (migration 9)
UNPACKED = "vector IS NOT NULL AND NOT searched AND NOT pending"
UNPACKED_INDEX = f"CREATE INDEX IF NOT EXISTS vectors_unpacked ON vectors (model, dim) WHERE {UNPACKED}"
UNPACKED_MODELS = f"SELECT DISTINCT model, dim FROM vectors WHERE {UNPACKED} ORDER BY 1, 2"
STAGE = ("CREATE TEMP TABLE IF NOT EXISTS {name} (hash {hash}, model TEXT, q8 BYTEA, q8_scale REAL) ON COMMIT "
         "DELETE ROWS")


def value_sql(alias: str = "") -> str:
    """A row's values as a ``halfvec`` whichever form it holds (``alias``: ``v.`` or empty); an int8 row's rebuilt
    a byte at a time (~0.1 ms a row: for the rare readers, not for search)."""
    a = alias
    return (f"coalesce({a}vector, ARRAY(SELECT ((get_byte({a}q8, i) # 128) - 128) * {a}q8_scale FROM "
            f"generate_series(0, length({a}q8) - 1) i ORDER BY i)::real[]::halfvec)")


def has_q8(db: Any) -> bool:
    """Whether the schema holds context vectors as int8 (migration 9); a store pinned to an older one does not."""
    return db.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
                      "table_name = 'vectors' AND column_name = 'q8'").fetchone() is not None


def quantize(values: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """Rows of float values as (int8 bytes a row, float32 scale a row): each value over its row's largest
    magnitude / 127, rounded to the nearest step. The values are taken as float16 first (what a halfvec holds): so a
    row quantized from float32 values gets the same bytes and scale as after a halfvec's pack, and quantizing the
    values rebuilt from a row (an export, ``value_sql``) gives that row's bytes and scale again (a copy's digest)."""
    m = np.asarray(values, dtype=np.float32).astype(np.float16).astype(np.float32)
    scale = (np.abs(m).max(axis=1) / 127).astype(np.float32)
    safe = np.where(scale > 0, scale, np.float32(1))
    q = np.clip(np.rint(m / safe[:, None]), -127, 127).astype(np.int8)
    return [row.tobytes() for row in q], scale


def exact(values: np.ndarray, packed: Sequence[bytes], scale: np.ndarray) -> np.ndarray:
    """Per row: whether ``values`` are what the server rebuilds from their int8 form (``quantize``: ``packed``,
    ``scale``), bit for bit as float16 (``value_sql``: each byte times the scale in float4, then halfvec): so values
    an export rebuilt from an int8 row, which a copy may hold as int8 again without losing a bit."""
    rebuilt = (unpack(packed).astype(np.float32) * np.asarray(scale, dtype=np.float32)[:, None]).astype(np.float16)
    held = np.asarray(values, dtype=np.float32).astype(np.float16)
    return (rebuilt.view(np.uint16) == held.view(np.uint16)).all(axis=1)


def stepped(values: np.ndarray, head: int = 8) -> np.ndarray:
    """Per row: whether its first ``head`` values are within float16's rounding of whole steps of its scale (its
    largest magnitude / 127), as an int8 row's values are; a cheap test before ``exact`` (a halfvec row passes it
    with a chance of about 0.14 ** 8)."""
    m = np.asarray(values, dtype=np.float32)
    scale = np.abs(m).max(axis=1) / 127
    steps = m[:, :head] / np.where(scale > 0, scale, 1)[:, None]
    return (np.abs(steps - np.rint(steps)) <= 0.07).all(axis=1)


def unpack(raws: Sequence[bytes]) -> np.ndarray:
    """int8 values of one length (``q8`` as read) as one matrix."""
    return np.frombuffer(b"".join(raws), dtype=np.int8).reshape(len(raws), -1)


def scores(query: np.ndarray, rows: Sequence[tuple[str, bytes, float]]) -> dict[str, float]:
    """Inner products of ``query`` with q8 rows (hash, bytes, scale): the int8 values times the scale, summed in
    float32 (the server rebuilds the same values, rounded to float16)."""
    if not rows:
        return {}
    q = np.asarray(query, dtype=np.float32)
    values = unpack([raw for _, raw, _ in rows]).astype(np.float32)
    scale = np.array([s for _, _, s in rows], dtype=np.float32)
    dots = (values @ q) * scale
    return {h: float(d) for (h, _, _), d in zip(rows, dots)}


def halfvec_rows(db: Any, sql: str, params: Sequence[Any]) -> list[tuple]:
    """Rows whose last column is a halfvec of one dimension, read in the binary protocol (pgvector's form: uint16
    dimension, uint16 unused, big-endian float16s), the vectors as float32 rows. (Decoded here, not by pg_sql or the
    store: the migration that imports this module is imported by them.)"""
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class Raw(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> bytes:
            return bytes(data)

    cur = db.cursor(binary=True)
    cur.adapters.register_loader(db.adapters.types["halfvec"].oid, Raw)
    rows = cur.execute(sql, params).fetchall()
    if not rows:
        return []
    joined = b"".join(memoryview(r[-1])[4:] for r in rows)
    values = np.frombuffer(joined, dtype=">f2").reshape(len(rows), -1).astype(np.float32)
    return [(*r[:-1], v) for r, v in zip(rows, values)]


def pack_rows(db: Any, where: str, params: Sequence[Any]) -> int:
    """Hold the rows of ``vectors`` that ``where`` picks (context rows holding a halfvec) as int8: their values
    read, quantized here, staged by COPY and written in one UPDATE; how many."""
    rows = halfvec_rows(db, f"SELECT hash, model, vector FROM vectors WHERE {where} FOR UPDATE", params)
    if not rows:
        return 0
    packed, scale = quantize(np.stack([r[2] for r in rows]))
    # the stage's hash as vectors holds it: text, or bytes from migration 10 on (pg_hash)
    name, kind = ("stage_q8", "text") if isinstance(rows[0][0], str) else ("stage_q8b", "bytea")
    db.execute(STAGE.format(name=name, hash=kind))
    db.execute(f"DELETE FROM {name}")
    with db.cursor() as cur, cur.copy(f"COPY {name} (hash, model, q8, q8_scale) FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types([kind, "text", "bytea", "float4"])
        for (h, model, _), b, sc in zip(rows, packed, scale):
            cp.write_row((h, model, b, float(sc)))
    moved = db.execute(f"UPDATE vectors v SET q8 = s.q8, q8_scale = s.q8_scale, vector = NULL FROM {name} s WHERE "
                       "v.hash = s.hash AND v.model = s.model").rowcount
    db.execute(f"DELETE FROM {name}")  # no staged value outlives the statement (erasure's byte scan)
    return moved


def compact(db: Any, model: str, dim: int, limit: int) -> int:
    """Turn up to ``limit`` context rows of one model that still hold a ``halfvec`` into q8 rows; their count."""
    return pack_rows(db, f"(hash, model) IN (SELECT hash, model FROM vectors WHERE {UNPACKED} AND model = %s AND "
                         "dim = %s LIMIT %s)", (model, int(dim), int(limit)))
