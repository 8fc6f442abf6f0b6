"""How the SQLite store finds a vector by its hash (schema 8): vectors are keyed by their row (``vid``, appended),
and ``vector_keys`` maps 8 characters of a hash to the rows holding it, in two tiers. A new vector's key goes to
tier 1 (written after the rows, ``keyed``), small, so a batch dirties only its pages and not every page of an index
as large as the store (``vectors_hash8`` before: once it had fewer pages than a batch had rows, a batch dirtied
nearly all of them). ``settle`` moves tier 1 into tier 0 in key order when tier 1 has grown to a fraction of tier 0:
each page of tier 0 is then written once per merge rather than once per batch. A lookup seeks both tiers and
compares the full hash on the row."""
from __future__ import annotations

from typing import Any, Sequence

PREFIX = 8  # characters of a hash a key holds (32 bits of a hex digest): the row's full hash is compared too
FRESH_MIN = 32_768  # tier 1 is merged once it holds this many keys and ...
FRESH_SHARE = 8  # ... at least 1/FRESH_SHARE as many as tier 0

# A vectors row ``v`` of the hash of node ``n`` (the correlated form, for joins and NOT EXISTS)
NODE_VECTOR = ("v.vid IN (SELECT x.vid FROM vector_keys x WHERE x.tier IN (0, 1) AND "
               f"x.k = substr(n.embed_hash, 1, {PREFIX})) AND v.hash = n.embed_hash")


def hash_in(column: str, hashes: Sequence[str]) -> tuple[str, list[Any]]:
    """``vectors.hash IN hashes`` through the keys: the rows of the hashes' prefixes, then the full hash."""
    prefixes = sorted({h[:PREFIX] for h in hashes})
    alias = column[: -len("hash")]  # "v.hash" -> "v."
    clause = (f"{alias}vid IN (SELECT vid FROM vector_keys WHERE tier IN (0, 1) AND k IN "
              f"({','.join('?' * len(prefixes))})) AND {column} IN ({','.join('?' * len(hashes))})")
    return clause, [*prefixes, *hashes]


def top(db: Any) -> int:
    """The highest vid now: the rows appended after it are the ones ``keyed`` keys."""
    return db.execute("SELECT coalesce(max(vid), 0) FROM vectors").fetchone()[0]


def keyed(db: Any, after: int) -> None:
    """Inside the write transaction that appended them: the keys of the rows after vid ``after`` into the fresh tier,
    in key order (one statement; the rows are in the page cache), then merge the tiers if the fresh one has grown."""
    db.execute(f"INSERT INTO vector_keys(tier, k, vid) SELECT 1, substr(hash, 1, {PREFIX}), vid FROM vectors "
               "WHERE vid > ? ORDER BY 2, 3", (after,))
    settle(db)


def settle(db: Any) -> int:
    """Inside a write transaction: merge tier 1 into tier 0 when it has grown enough; the keys moved (0: none)."""
    fresh = db.execute("SELECT count(*) FROM vector_keys WHERE tier = 1").fetchone()[0]
    if fresh < FRESH_MIN:
        return 0
    top = db.execute("SELECT coalesce(max(vid), 0) FROM vectors").fetchone()[0]
    if fresh * FRESH_SHARE < top - fresh:  # the rows' count, near enough (vids only grow; deletes leave gaps)
        return 0
    # read in (k, vid) order from tier 1's range: tier 0 takes them in key order, each of its pages touched once
    db.execute("INSERT INTO vector_keys(tier, k, vid) SELECT 0, k, vid FROM vector_keys WHERE tier = 1 ORDER BY k, vid")
    db.execute("DELETE FROM vector_keys WHERE tier = 1")
    return fresh


def export_page(store: Any, after: Sequence[Any] | None, limit: int) -> list[tuple]:
    """(hash, model, hash, model, dim, vector) rows after the cursor ``after`` in (hash, model) order, ``limit`` of
    them unless fewer are left: each tier read in key order from the cursor's prefix, merged. A tier's reads stop at
    its ``take``-th key; rows at or past the first such stop are left for a later read (ties of a prefix included)."""
    start = after[0][:PREFIX] if after is not None else ""
    take = limit + 64
    while True:
        stops, vids = [], []
        for tier in (0, 1):
            got = store._read("SELECT k, vid FROM vector_keys WHERE tier = ? AND k >= ? ORDER BY k, vid LIMIT ?",
                              (tier, start, take))
            vids += [vid for _, vid in got]
            if len(got) == take:
                stops.append(got[-1][0])
        stop = min(stops) if stops else None
        rows = []
        for i in range(0, len(vids), store.CHUNK):
            chunk = vids[i: i + store.CHUNK]
            rows += store._read(f"SELECT hash, model, hash, model, dim, vector FROM vectors WHERE vid IN "
                                f"({','.join('?' * len(chunk))})", chunk)
        rows = sorted(r for r in rows if (stop is None or r[0][:PREFIX] < stop)
                      and (after is None or (r[0], r[1]) > tuple(after)))
        if len(rows) >= limit or stop is None:
            return rows[:limit]
        take *= 4


def upsert(store: Any, rows: list[tuple]) -> None:
    """A batch of vectors (hash, model, dim, bytes) into a SQLite store (``SQLiteStore._upsert_vectors``): the rows
    already held are found through vector_keys and replaced, the rest appended and their keys written to the fresh
    tier in key order; a store of a schema before 8 stores ``dim`` and finds rows through its prefix index."""
    held: dict[tuple[str, str], int] = {}
    for chunk in store._chunks(list(dict.fromkeys(r[0] for r in rows)), per_statement=2):
        clause, params = store._hash_in("hash", chunk)
        held.update(((h, m), vid) for vid, h, m in store._db.execute(
            f"SELECT rowid, hash, model FROM vectors WHERE {clause}", params))
    replaced = [(r[2], r[3], held[r[0], r[1]]) for r in rows if (r[0], r[1]) in held]
    new = [r for r in rows if (r[0], r[1]) not in held]
    if not store.KEYED:  # a schema before 8: dim stored
        store._db.executemany("UPDATE vectors SET dim = ?, vector = ? WHERE rowid = ?", replaced)
        store._insert_rows("INSERT INTO vectors(hash, model, dim, vector)", new)
        return
    # dim is derived from the bytes (migration 8)
    store._db.executemany("UPDATE vectors SET vector = ? WHERE vid = ?", [r[1:] for r in replaced])
    if new:
        last = top(store._db)
        store._insert_rows("INSERT INTO vectors(hash, model, vector)", [(r[0], r[1], r[3]) for r in new])
        keyed(store._db, last)  # their keys (vids after last), into the fresh tier in key order


def export_rows(store: Any, after: Sequence[Any] | None, limit: int) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """A page of the vectors for an export, in key order across both tiers (``export_page``)."""
    raw = export_page(store, after, limit)
    rows = [{"hash": h, "model": m, "dim": d, "vector": store._decode_vectors([v])[0]} for _, _, h, m, d, v in raw]
    return rows, (list(raw[-1][:2]) if len(raw) == limit else None)


def keyed_schema(store: Any) -> bool:
    """Whether the store's schema finds vectors through vector_keys (8 on); a store of an older schema (tests open
    such) joins and pages through its prefix index vectors_hash8, as before."""
    if store._table_exists("vector_keys"):
        return True
    store.VECTOR_JOIN = "substr(v.hash, 1, 8) = substr(n.embed_hash, 1, 8) AND v.hash = n.embed_hash"
    store.PAGE_SEEK = {"vectors": "substr(hash, 1, 8)"}
    return False
