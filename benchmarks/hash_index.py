"""The index behind "does a live row still use this vector hash" (issue 9 s3, SQLite migration 7), measured alone:
a nodes-like table (400-byte rows, one index) grown to N rows in transactions of 10,000, each variant in its own
file, then lookups of 600 absent hashes on a fresh connection (what a purge of a 600-memory conversation asks).

    .venv/bin/python benchmarks/hash_index.py [--rows 1000000] [--variants h8 h2 ...] [--runs 2]

h8: schema 6's nodes_hash8 (8 characters of a random hash: each batch lands all over the index);
h2: schema 7's nodes_hash2 (2 characters, then rid, then 8 more: each batch appends to 256 buckets);
h2only / h2full: the bucket alone (every bucket row read from the table) / the bucket with the whole hash.
Prints the insert CPU per row in the first and last tenth (target of the curve: last / first <= 1.3).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import tempfile
import time
from pathlib import Path

import sqlean as sqlite3

VARIANTS = {
    "h8": ("substr(embed_hash, 1, 8)", "substr(embed_hash, 1, 8) = substr(?1, 1, 8) AND embed_hash = ?1"),
    "h2": ("substr(embed_hash, 1, 2), rid, substr(embed_hash, 3, 8)",
           "rid IN (SELECT x.rid FROM nodes x WHERE substr(x.embed_hash, 1, 2) = substr(?1, 1, 2) AND "
           "substr(x.embed_hash, 3, 8) = substr(?1, 3, 8)) AND embed_hash = ?1"),
    "h2only": ("substr(embed_hash, 1, 2)", "substr(embed_hash, 1, 2) = substr(?1, 1, 2) AND embed_hash = ?1"),
    "h2full": ("substr(embed_hash, 1, 2), rid, embed_hash",
               "substr(embed_hash, 1, 2) = substr(?1, 1, 2) AND embed_hash = ?1"),
}
BATCH = 10_000


def run(folder: Path, rows: int, variant: str) -> dict:
    index, lookup = VARIANTS[variant]
    path = folder / f"{variant}.db"
    db = sqlite3.connect(str(path), isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA cache_size = -65536")
    db.execute("CREATE TABLE nodes(rid INTEGER PRIMARY KEY AUTOINCREMENT, embed_hash TEXT, content TEXT)")
    db.execute(f"CREATE INDEX nh ON nodes({index})")
    pad, cpus = "x" * 400, []
    for start in range(0, rows, BATCH):
        batch = [(hashlib.sha256(str(i).encode()).hexdigest(), pad) for i in range(start, start + BATCH)]
        c = time.process_time()
        db.execute("BEGIN")
        db.executemany("INSERT INTO nodes(embed_hash, content) VALUES (?, ?)", batch)
        db.execute("COMMIT")
        cpus.append(time.process_time() - c)
    size = db.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'nh'").fetchone()[0]
    db.close()
    db = sqlite3.connect(str(path), isolation_level=None)
    absent = [hashlib.sha256(f"absent {i}".encode()).hexdigest() for i in range(600)]
    t = time.perf_counter()
    for h in absent:
        assert not db.execute(f"SELECT 1 FROM nodes WHERE {lookup}", (h,)).fetchall()
    lookups = (time.perf_counter() - t) * 1000
    db.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    tenth = max(1, len(cpus) // 10)
    first, last = sum(cpus[:tenth]) / tenth / BATCH * 1e6, sum(cpus[-tenth:]) / tenth / BATCH * 1e6
    return {"insert_cpu_us_first_tenth": round(first, 1), "insert_cpu_us_last_tenth": round(last, 1),
            "last_over_first": round(last / first, 2), "lookups_600_ms": round(lookups),
            "index_mb": round(size / 1e6, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--variants", nargs="+", default=["h8", "h2"], choices=sorted(VARIANTS))
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):  # alternating: the load drifts
            for v in args.variants:
                out.setdefault(v, []).append(run(Path(tmp), args.rows, v))
    summary = {v: {"runs": r, "last_over_first_median": statistics.median(x["last_over_first"] for x in r)}
               for v, r in out.items()}
    print(json.dumps({"rows": args.rows, **summary}, indent=1))


if __name__ == "__main__":
    main()
