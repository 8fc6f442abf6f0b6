"""How much of exact search's top 10 int8 own vectors keep, before any index (issue 23 s2;
the lever was built on branch pgq8own in session 20 and not landed: at 1,000,000 memories the server's dense search
kept recall@10 0.977 of exact float32 search, under the issue's 0.98, for 4,962 -> 4,179 bytes a memory): over the own
vectors ``postgres_scale.py`` kept (``own.npy``, float32) and its questions' vectors, recall@10 of exact search over
the values each form holds (float16: a halfvec, schema 5; int8: ``pg_q8.quantize``, rebuilt as an HNSW index over
them would hold them, and as the client scores them, int8 times the scale in float32) against exact search
over the float32 values. The ceiling an HNSW walk over each form can reach; no server, no store.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_own_q8_ceiling.py --data /work/pg/1m [--queries 200]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import report  # noqa: E402
from benchmarks.postgres_scale import base_corpus  # noqa: E402

from agentcontext.store import pg_q8  # noqa: E402

CHUNK = 50_000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    t0 = time.perf_counter()
    own = np.load(args.data / "own.npy", mmap_mode="r")
    q = np.asarray(base_corpus(args.data)[3][1: args.queries + 1], dtype=np.float32)
    forms = ("float32", "float16 (halfvec)", "int8 rebuilt as float16 (the index)", "int8 x scale (the client)")
    best = {f: np.full((len(q), 10), -np.inf, dtype=np.float32) for f in forms}
    rows = {f: np.zeros((len(q), 10), dtype=np.int64) for f in forms}
    for start in range(0, own.shape[0], CHUNK):
        chunk = np.asarray(own[start: start + CHUNK], dtype=np.float32)
        packed, scale = pg_q8.quantize(chunk)
        values = pg_q8.unpack(packed).astype(np.float32) * scale[:, None]
        held = {forms[0]: chunk, forms[1]: chunk.astype(np.float16).astype(np.float32),
                forms[2]: values.astype(np.float16).astype(np.float32), forms[3]: values}
        for f, m in held.items():
            scores = q @ m.T
            top = np.argpartition(-scores, 10, axis=1)[:, :10]
            both = np.concatenate([best[f], np.take_along_axis(scores, top, axis=1)], axis=1)
            ids = np.concatenate([rows[f], top + start], axis=1)
            keep = np.argpartition(-both, 10, axis=1)[:, :10]
            best[f], rows[f] = np.take_along_axis(both, keep, axis=1), np.take_along_axis(ids, keep, axis=1)
    exact = rows[forms[0]]
    figures = {"memories": int(own.shape[0]), "queries": len(q), "seconds": round(time.perf_counter() - t0, 1),
               "recall@10 of exact search over each form against float32": {
                   f: round(float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(rows[f], exact)])), 4)
                   for f in forms[1:]}}
    report(f"postgres_own_q8_ceiling_{own.shape[0]}", figures)


if __name__ == "__main__":
    main()
