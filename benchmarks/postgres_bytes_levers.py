"""What the levers left for bytes a memory would save on PostgreSQL (issue 23 s2), measured on a sample of a kept
``postgres_scale.py`` store without changing it: a sample of ``nodes``, ``vectors`` and ``changes`` (``--percent`` of
their pages, TABLESAMPLE SYSTEM) copied into temporary tables, once as stored and once per lever in the form the lever
would hold, each table's heap bytes a row (and the index a lever shrinks) compared, times the rows a memory has.
The copies are plain tables (the tsvector a stored column like the others): only the differences are meant.
Levers: the nodes' two hashes as bytes; ``recorded_at`` (and the version rows' too) as ``timestamptz``; ``tag_text``
dropped (the text index could read the tags); props without ``updated_at`` when it equals ``created_at``, and without
``pair_hash`` (a column of bytes instead); the vectors' model as a 2-byte id; the change log's ``at`` as
``timestamptz``; every btree built with fillfactor 100.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_bytes_levers.py --data DIR [--percent 5]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import report  # noqa: E402
from benchmarks.postgres_scale import SERVER  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

HEX = "decode({c}, 'hex')"
NODES = ("id, kind, namespace, key, title, summary, content, props, tags, valid_from, valid_until, recorded_at, "
         "retracted_at, version, content_hash, created_by, embed_hash, tokens, embed_text, tag_text, tsv")
PAIR = "decode(props::jsonb ->> 'pair_hash', 'hex') AS pair_bytes"
PROPS_SLIM = ("CASE WHEN props::jsonb ->> 'updated_at' = props::jsonb ->> 'created_at' THEN (props::jsonb - "
              "'updated_at')::text ELSE props END")


def nodes_variant(extra: str = "", **swap: str) -> str:
    cols = [extra] if extra else []
    for c in NODES.split(", "):
        if c in swap:
            if swap[c]:
                cols.append(f"{swap[c]} AS {c}")
        else:
            cols.append(c)
    return ", ".join(cols)


def per_row(db: Any, name: str, index: str | None = None) -> dict[str, float]:
    rows = db.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
    db.execute(f"VACUUM {name}")
    out = {"heap bytes a row": round(db.execute(f"SELECT pg_relation_size('{name}')").fetchone()[0] / rows, 1)}
    if index:
        db.execute(f"CREATE INDEX {name}_i ON {name} {index}")
        out["index bytes a row"] = round(db.execute(f"SELECT pg_relation_size('{name}_i')").fetchone()[0] / rows, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--percent", type=float, default=5.0)
    args = parser.parse_args()
    import psycopg

    server = PgServer(root=args.data / "cluster", options=SERVER).start()
    figures: dict[str, Any] = {"percent of pages sampled": args.percent}
    try:
        db = psycopg.connect(server.url(None), autocommit=True)
        db.execute("SET search_path = scale, public")
        memories = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
        per_memory = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] / memories
                      for t in ("nodes", "vectors", "changes")}
        figures["rows a memory"] = {k: round(v, 3) for k, v in per_memory.items()}
        db.execute(f"CREATE TEMP TABLE s_nodes AS SELECT {NODES} FROM nodes TABLESAMPLE SYSTEM ({args.percent}) "
                   "REPEATABLE (1)")
        hashed = db.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                            "'vectors'::regclass AND attname = 'hash'").fetchone()[0]
        db.execute(f"CREATE TEMP TABLE s_vectors AS SELECT * FROM vectors TABLESAMPLE SYSTEM ({args.percent}) "
                   "REPEATABLE (1)")
        db.execute(f"CREATE TEMP TABLE s_changes AS SELECT * FROM changes TABLESAMPLE SYSTEM ({args.percent}) "
                   "REPEATABLE (1)")
        base = {"nodes": per_row(db, "s_nodes", "(embed_hash)"),
                "vectors": per_row(db, "s_vectors", "(hash, model)"),
                "changes": per_row(db, "s_changes")}
        figures["as stored (sample)"] = base
        variants = {
            "nodes: content_hash and embed_hash as bytes": ("nodes", nodes_variant(
                content_hash=HEX.format(c="content_hash"), embed_hash=HEX.format(c="embed_hash")), "(embed_hash)"),
            "nodes: recorded_at as timestamptz": ("nodes", nodes_variant(recorded_at="recorded_at::timestamptz"),
                                                  "(embed_hash)"),
            "nodes: tag_text dropped": ("nodes", nodes_variant(tag_text=""), "(embed_hash)"),
            "nodes: props without updated_at equal to created_at": ("nodes", nodes_variant(props=PROPS_SLIM),
                                                                    "(embed_hash)"),
            "nodes: props without pair_hash (32 bytes in a column of its own)": ("nodes", nodes_variant(
                extra=PAIR, props="(props::jsonb - 'pair_hash')::text"), "(embed_hash)"),
            "nodes: all of the above": ("nodes", nodes_variant(
                content_hash=HEX.format(c="content_hash"), embed_hash=HEX.format(c="embed_hash"),
                recorded_at="recorded_at::timestamptz", tag_text="",
                extra=PAIR, props=f"(({PROPS_SLIM})::jsonb - 'pair_hash')::text"), "(embed_hash)"),
            "vectors: the model as a 2-byte id": ("vectors", "hash, 1::smallint AS model_id, dim, searched, pending, "
                                                  "vector, q8, q8_scale", "(hash, model_id)"),
            "changes: at as timestamptz": ("changes", "seq, at::timestamptz AS at, actor, op, target, namespace, "
                                           "detail", None),
        }
        out: dict[str, Any] = {}
        for i, (label, (table, cols, index)) in enumerate(variants.items()):
            name = f"v{i}"
            db.execute(f"CREATE TEMP TABLE {name} AS SELECT {cols} FROM s_{table}")
            got = per_row(db, name, index)
            rows = per_memory[table]
            saved = {k: round((base[table][k] - got[k]) * rows, 1) for k in got}
            out[label] = {**got, "bytes a memory saved": saved}
        db.execute("CREATE INDEX s_vectors_ff ON s_vectors (hash, model) WITH (fillfactor = 100)")
        ff = db.execute("SELECT pg_relation_size('s_vectors_ff')").fetchone()[0] / db.execute(
            "SELECT count(*) FROM s_vectors").fetchone()[0]
        out["vectors' key at fillfactor 100 (as built; random inserts split its pages again)"] = {
            "index bytes a row": round(ff, 1),
            "bytes a memory saved": round((base["vectors"]["index bytes a row"] - ff) * per_memory["vectors"], 1)}
        figures["levers (sample)"] = out
        figures["vectors.hash"] = hashed
        db.close()
    finally:
        server.stop()
    report("postgres_bytes_levers", figures)


if __name__ == "__main__":
    main()
