"""Context vectors held as int8 (issue 23 s2, migration 9): a conversation turn's context vector (the embedding of
its pair with the turn before, ``props.pair_hash``) is read by hash and only scored against a query's vector, never
walked in an HNSW index; so a ``vectors`` row in neither index state (not ``searched``, not ``pending``) holds
its values as one signed byte a dimension (``q8``, a ``"char"[]``) times a scale (``q8_scale``, its largest magnitude
over 127) instead of a ``halfvec``: 408 bytes of values a row instead of 772, 15 rows a page instead of 9.

Measured (200,000 LoCoMo-like memories, 20,000 context vectors against 200 questions): inner products move by
3.0e-4 on average (at most 2.6e-3), the top 10 by the context score alone are 0.9925 the same; the fused ranking
weighs that score a third of the dense signal (``server_search._rank``). A 4-bit form moved them 5.4e-3 (top 10
0.876), a binary one 5.4e-2 (0.493): both left out.

A row holds ``vector`` or ``q8``, never both and never neither (constraint ``vectors_held``); the rows a node's text
has (searched or pending) always hold ``vector``. ``similarities`` reads a q8 row's bytes and scores it in the
client (``scores``: the server's array casts cost ~0.03 ms a row, ~40 ms a query); every other reader reads
``value_sql`` (the values as a ``halfvec``, rebuilt in the server with pgvector's casts: ~0.05 ms a row). A q8 row
whose text becomes a node's (``pg_bulk.mark_searched``) gets its values back from the bytes (``value_sql``); a put of
the same hash with a node behind it writes the full values again. ``compact`` (run by ``pg_delta.fold``) turns
the context rows written since into q8 rows; their old row versions are space the table reuses."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

COLUMNS = "q8, q8_scale"
# the largest magnitude of a halfvec (a function: an ALTER ... USING cannot hold a subquery); made by migration 9
MAX_ABS = ("CREATE OR REPLACE FUNCTION q8_max_abs(v halfvec) RETURNS real LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE "
           "AS $$ SELECT max(abs(e)) FROM unnest(v::vector::real[]) e $$")
# the scale and the bytes of a halfvec column ``col`` (server side, C casts but the max)
SCALE = "(q8_max_abs({col}) / 127)::real"
BYTES = ("(({col}::vector * array_fill((1 / greatest({scale}, 1e-30))::real, ARRAY[vector_dims({col}::vector)])"
         "::vector)::real[]::int[]::\"char\"[])")
NEITHER = "NOT {a}searched AND NOT {a}pending"
# the context rows that still hold a halfvec (written since the last fold): listed by a partial btree (migration 9)
UNPACKED = "vector IS NOT NULL AND NOT searched AND NOT pending"
UNPACKED_INDEX = f"CREATE INDEX IF NOT EXISTS vectors_unpacked ON vectors (model, dim) WHERE {UNPACKED}"
UNPACKED_MODELS = f"SELECT DISTINCT model, dim FROM vectors WHERE {UNPACKED} ORDER BY 1, 2"


def scale_sql(col: str = "vector") -> str:
    return SCALE.format(col=col)


def bytes_sql(col: str = "vector") -> str:
    return BYTES.format(col=col, scale=scale_sql(col))


def value_sql(alias: str = "") -> str:
    """A row's values as a ``halfvec`` whichever form it holds (``alias``: ``v.`` or empty)."""
    a = alias
    return (f"coalesce({a}vector, ({a}q8::int[]::real[]::vector * array_fill({a}q8_scale, ARRAY[{a}dim])::vector)"
            "::halfvec)")


def has_q8(db: Any) -> bool:
    """Whether the schema holds context vectors as int8 (migration 9); a store pinned to an older one does not."""
    return db.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
                      "table_name = 'vectors' AND column_name = 'q8'").fetchone() is not None


def unpack(raw: bytes) -> np.ndarray:
    """A ``"char"[]`` in the binary array format (``array_send``: a 20-byte header for one dimension, then a
    4-byte length and the byte of each element) as int8 values."""
    body = np.frombuffer(raw, dtype=np.uint8, offset=20)
    return body.reshape(-1, 5)[:, 4].view(np.int8)


def scores(query: np.ndarray, rows: Sequence[tuple[str, bytes, float]]) -> dict[str, float]:
    """Inner products of ``query`` with q8 rows (hash, ``array_send(q8)``, scale), as float32 sums of the values
    the server would rebuild."""
    if not rows:
        return {}
    q = np.asarray(query, dtype=np.float32)
    values = np.stack([unpack(raw) for _, raw, _ in rows]).astype(np.float32)
    scale = np.array([s for _, _, s in rows], dtype=np.float32)
    dots = (values @ q) * scale
    return {h: float(d) for (h, _, _), d in zip(rows, dots)}


def compact(db: Any, model: str, dim: int, limit: int) -> int:
    """Turn up to ``limit`` context rows of one model that still hold a ``halfvec`` into q8 rows; their count."""
    return db.execute(
        f"UPDATE vectors SET q8 = {bytes_sql()}, q8_scale = {scale_sql()}, vector = NULL WHERE (hash, model) IN "
        f"(SELECT hash, model FROM vectors WHERE {UNPACKED} AND model = %s AND "
        "dim = %s LIMIT %s)", (model, int(dim), int(limit))).rowcount
