"""What moving the ranking's fields out of the props text into typed ``nodes`` columns would save (issue 23 s2/s3),
measured on a kept ``postgres_scale.py`` store without changing it.

Bytes: every live memory row's props split by key (the text each key and its value take in the props), then the
memories copied twice into a scratch schema, once as held and once per layout with the moved keys cut from the props
text and held as columns, each with the indexes that read them (the props' GIN index, a ``prev`` btree), their heap
and index bytes a memory compared. Time: the ranking's decode of the linked rows (``pg_search._with_fields`` on the
rows ``linked_sql`` reads for random seed ids, the props text parsed) against the same rows' fields read as columns
(the columns decoded by the driver, no JSON), the client's CPU (best of ``--repeat``), a call's fetch included.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_props_columns.py --data DIR [--calls 20]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from benchmarks._util import report  # noqa: E402
from benchmarks.postgres_scale import SERVER  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

FIELDS = ["prev", "pair_hash", "created_at", "conversation_id", "user_id"]  # memory/server_search.py FIELDS
T = 'TEXT COLLATE "C"'
# the layouts weighed: the keys each cuts from the props text, and the columns that hold them
LAYOUTS: dict[str, dict[str, str]] = {
    "prev + pair_hash": {"prev": f"(props::jsonb ->> 'prev')::{T}",
                         "pair_hash": "decode(props::jsonb ->> 'pair_hash', 'hex')"},
    "all five (created_at text)": {
        "prev": f"(props::jsonb ->> 'prev')::{T}", "pair_hash": "decode(props::jsonb ->> 'pair_hash', 'hex')",
        "created_at": f"(props::jsonb ->> 'created_at')::{T}",
        "conversation_id": f"(props::jsonb ->> 'conversation_id')::{T}",
        "user_id": f"(props::jsonb ->> 'user_id')::{T}"},
    "all five (created_at timestamptz)": {
        "prev": f"(props::jsonb ->> 'prev')::{T}", "pair_hash": "decode(props::jsonb ->> 'pair_hash', 'hex')",
        "created_at": "(props::jsonb ->> 'created_at')::timestamptz",
        "conversation_id": f"(props::jsonb ->> 'conversation_id')::{T}",
        "user_id": f"(props::jsonb ->> 'user_id')::{T}"},
}


def _size(db: Any, name: str) -> int:
    return db.execute("SELECT pg_relation_size(%s::regclass)", (name,)).fetchone()[0]


def layout_bytes(db: Any, name: str, cols: dict[str, str], memories: int) -> dict[str, float]:
    """A scratch copy of the memory rows with ``cols`` moved out of the props text, and its bytes a memory."""
    cut = "".join(f" - '{k}'" for k in cols)
    moved = "".join(f", {expr} AS {k}" for k, expr in cols.items())
    props = f"CASE WHEN props IS NULL THEN NULL ELSE ((props::jsonb){cut})::text END" if cols else "props"
    others = [c for c in ("id, kind, namespace, key, title, summary, content, tags, valid_from, valid_until, "
                          "recorded_at, retracted_at, version, content_hash, created_by, embed_hash, tokens, "
                          "embed_text, tag_text, tsv").split(", ")]
    db.execute(f"CREATE TABLE pcols.{name} AS SELECT {', '.join(others)}, {props}::{T} AS props{moved} "
               "FROM nodes WHERE kind = 'memory' ORDER BY rid")
    db.execute(f"CREATE INDEX {name}_props ON pcols.{name} USING gin ((props::jsonb) jsonb_path_ops)")
    prev = ("prev" if "prev" in cols else "((props::jsonb) ->> 'prev')")
    db.execute(f"CREATE INDEX {name}_prev ON pcols.{name} ({prev}) WHERE {prev} IS NOT NULL")
    db.execute(f"VACUUM pcols.{name}")
    out = {"heap": _size(db, f"pcols.{name}") / memories, "props GIN": _size(db, f"pcols.{name}_props") / memories,
           "prev index": _size(db, f"pcols.{name}_prev") / memories}
    out["props text (pg_column_size)"] = float(db.execute(
        f"SELECT avg(pg_column_size(props)) FROM pcols.{name}").fetchone()[0])
    out["total"] = out["heap"] + out["props GIN"] + out["prev index"]
    return {k: round(v, 1) for k, v in out.items()}


def key_bytes(db: Any) -> dict[str, dict[str, float]]:
    """Each top-level key's text in a memory's props (``"key": value, ``), averaged over the memories."""
    rows = db.execute("SELECT k, count(*), avg(length(k) + 6 + length(v::text)) FROM nodes, jsonb_each(props::jsonb) "
                      "AS e(k, v) WHERE kind = 'memory' GROUP BY k ORDER BY k").fetchall()
    memories = db.execute("SELECT count(*) FROM nodes WHERE kind = 'memory'").fetchone()[0]
    return {k: {"rows with it": n, "bytes a row with it": round(float(b), 1),
                "bytes a memory": round(float(b) * n / memories, 1)} for k, n, b in rows}


def decode_times(db: Any, calls: int, repeat: int) -> dict[str, Any]:
    """The linked rows of ``calls`` random seed sets: the ranking's decode now, and the fields read as columns."""
    from agentcontext.store import pg_search
    from agentcontext.store.pg_sql import linked_sql

    ns = db.execute("SELECT namespace FROM nodes WHERE kind = 'memory' LIMIT 1").fetchone()[0]
    memories = db.execute("SELECT count(*) FROM nodes WHERE kind = 'memory'").fetchone()[0]
    ids = db.execute("SELECT id FROM nodes WHERE kind = 'memory' ORDER BY rid").fetchall()
    rng = random.Random(7)
    sql = linked_sql("prev", FIELDS, True)
    sets = [[ids[rng.randrange(memories)][0] for _ in range(95)] for _ in range(calls)]
    fetched = [db.execute(sql, {"ids": s, "ns": ns, "kind": "memory"}).fetchall() for s in sets]
    rows = [[r[2:] for r in f if r[3] is not None] for f in fetched]
    keyed = [[r[0] for r in f] for f in rows]
    n = sum(len(f) for f in rows)

    def best(fn) -> float:
        times = []
        for _ in range(repeat):
            t = time.process_time()
            fn()
            times.append(time.process_time() - t)
        return min(times) * 1000

    now = best(lambda: [pg_search._with_fields(f, FIELDS) for f in rows])
    fetch_text = best(lambda: [db.execute("SELECT props FROM nodes WHERE id = ANY(%s)", (k,)).fetchall()
                               for k in keyed])
    cols = ", ".join(FIELDS)
    db.execute("CREATE TEMP TABLE pcols_fields AS SELECT id, (props::jsonb ->> 'prev')::text AS prev, "
               "decode(props::jsonb ->> 'pair_hash', 'hex') AS pair_hash, (props::jsonb ->> 'created_at') AS "
               "created_at, (props::jsonb ->> 'conversation_id') AS conversation_id, (props::jsonb ->> 'user_id') "
               "AS user_id FROM nodes WHERE kind = 'memory'")
    db.execute("CREATE INDEX ON pcols_fields (id)")
    fetch_cols = best(lambda: [db.execute(f"SELECT {cols} FROM pcols_fields WHERE id = ANY(%s)", (k,)).fetchall()
                               for k in keyed])
    parse = best(lambda: [json.loads("[" + ",".join(r[7] or "{}" for r in f) + "]") for f in rows])
    return {"calls": calls, "rows": n, "rows a call": round(n / calls, 1),
            "_with_fields ms a call (now: the props text parsed, Node made)": round(now / calls, 3),
            "of it json.loads ms a call": round(parse / calls, 3),
            "fetch of the props text ms a call (driver, server included)": round(fetch_text / calls, 3),
            "fetch of the five columns ms a call (driver, server included)": round(fetch_cols / calls, 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--url", default=None, help="a running server's URL (with ?schema=) instead of --data's")
    args = parser.parse_args()
    import psycopg

    server = None if args.url else PgServer(root=args.data / "cluster", options=SERVER).start()
    url = args.url or server.url("scale")
    schema = url.rsplit("schema=", 1)[1]
    try:
        with psycopg.connect(url.split("?")[0], autocommit=True) as db:
            db.execute(f"SET search_path = {schema}, public")
            db.execute("DROP SCHEMA IF EXISTS pcols CASCADE")
            db.execute("CREATE SCHEMA pcols")
            try:
                memories = db.execute("SELECT count(*) FROM nodes WHERE kind = 'memory'").fetchone()[0]
                figures: dict[str, Any] = {"memories": memories, "keys of a memory's props": key_bytes(db)}
                layouts = {"as held": layout_bytes(db, "held", {}, memories)}
                for i, (name, cols) in enumerate(LAYOUTS.items()):
                    layouts[name] = layout_bytes(db, f"l{i}", cols, memories)
                base = layouts["as held"]["total"]
                for v in layouts.values():
                    v["saved a memory"] = round(base - v["total"], 1)
                figures["layouts (bytes a memory: heap, props GIN, prev index)"] = layouts
                figures["decode"] = decode_times(db, args.calls, args.repeat)
            finally:
                db.execute("DROP SCHEMA IF EXISTS pcols CASCADE")
    finally:
        if server:
            server.stop()
    report(f"postgres_props_columns_{memories}", figures)


if __name__ == "__main__":
    main()
