"""A load into an empty PostgreSQL store through ``Store.import_rows`` (the product's copy path, what
``postgres_scale.py`` builds with; issue 23 s1), by this code and another source tree's, in the same run.

N memories' rows (``postgres_scale.batch``: LoCoMo-like texts, 384-d own and pair vectors) are made once, then
imported table by table (nodes, node versions, change log, vectors; the HNSW index built at the vectors' commit) into
a fresh schema of one temporary server by a new process with one tree's code on its path, alternating
(before, this, this, before). Printed per code: the median seconds of each table (and of its part after the last
batch went in: the indexes built after the rows, BM25's counts, the HNSW build, the commit) and the total, and the
ratios.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_import_empty.py --before-src DIR [--memories 50000]
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import before_tree, report  # noqa: E402
from benchmarks.postgres_scale import BATCH, NAMESPACE, SERVER, base_corpus, batch, rows  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.embed.base import MINILM  # noqa: E402

WORKER = """
import json, pickle, sys, time
from agentcontext.store import open_store
url, folder, batches, tables = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
store = open_store(url)
spent = {}
for table in tables:
    ended = {}
    def each():
        for i in range(batches):
            made = pickle.load(open(f"{folder}/{i:05d}-{table}.pkl", "rb"))
            yield made
        ended["rows"] = time.perf_counter()
    t = time.perf_counter()
    store.import_rows(table, each())
    spent[table] = time.perf_counter() - t
    spent[f"  {table}: after the rows"] = time.perf_counter() - ended["rows"]
store.close()
print(json.dumps(spent))
"""


def make(n: int, folder: Path, data: Path) -> None:
    """Each batch's rows for each table, pickled as ``import_rows`` gets them."""
    texts, vectors, _, _ = base_corpus(data)
    for i in range(n // BATCH):
        nodes, by_hash, _ = batch(i, texts, vectors)
        live = rows(nodes, versions=False)
        tables = {
            "nodes": live, "node_versions": [{**r, "embed_text": None} for r in live],
            "changes": [{"seq": i * BATCH + j + 1, "at": x.recorded_at, "actor": "bench", "op": "node.put",
                         "target": x.id, "namespace": NAMESPACE, "detail": json.dumps({"version": 1})}
                        for j, x in enumerate(nodes)],
            "vectors": [{"hash": h, "model": MINILM, "dim": 384, "vector": v}
                        for h, v in by_hash.items()]}
        for table, got in tables.items():
            (folder / f"{i:05d}-{table}.pkl").write_bytes(pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before-src", type=Path, required=True)
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--tables", default="nodes,node_versions,changes,vectors", help="tables, in order")
    parser.add_argument("--data", type=Path, default=Path("/work/pgdata-pgmillion/200k"),
                        help="a folder holding (or to hold) postgres_scale.py's locomo-vectors.npz")
    args = parser.parse_args()
    n = args.memories - args.memories % BATCH
    folder = Path(tempfile.mkdtemp(prefix="import-empty-"))
    make(n, folder, args.data)
    server = PgServer(options=SERVER).start()
    order = [("before", before_tree(args.before_src)), ("this", ROOT / "src"), ("this", ROOT / "src"),
             ("before", before_tree(args.before_src))]
    runs: list[tuple[str, dict[str, float]]] = []
    load_before = os.getloadavg()
    try:
        for k, (name, src) in enumerate(order):
            proc = subprocess.run([sys.executable, "-c", WORKER, server.url(f"run{k}"), str(folder), str(n // BATCH),
                                   args.tables],
                                  capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(src)},
                                  timeout=7200)
            if proc.returncode:
                raise RuntimeError(proc.stderr[-3000:])
            spent = json.loads(proc.stdout)
            spent["total"] = sum(v for k, v in spent.items() if not k.startswith(" "))
            runs.append((name, spent))
            print(name, {t: round(s, 1) for t, s in spent.items()}, flush=True)
    finally:
        server.stop()
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
    figures: dict[str, Any] = {"memories": n, "order": [name for name, _ in runs],
                               "note": "busy shared 2-core machine; medians of each code's two runs",
                               "load_average before / after": [[round(x, 2) for x in load_before],
                                                               [round(x, 2) for x in os.getloadavg()]]}
    for name in ("before", "this"):
        figures[name] = {t: {"median s": round(statistics.median(r[t] for n_, r in runs if n_ == name), 1),
                             "runs s": [round(r[t], 1) for n_, r in runs if n_ == name]} for t in runs[0][1]}
    figures["ratios (this / before, medians)"] = {
        t: round(figures["this"][t]["median s"] / max(figures["before"][t]["median s"], 1e-9), 3) for t in runs[0][1]}
    figures["measured at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report(f"postgres_import_empty_{n}" + ("" if args.tables.count(",") == 3 else f"_{args.tables}"), figures)


if __name__ == "__main__":
    main()
