"""LoCoMo dev recall on PostgreSQL beside SQLite (issue 23 s2: holding vectors as halfvec keeps "the same LoCoMo dev
recall"), in one run: every conversation stored in an SQLite store in memory (as ``agentcontext eval locomo`` does)
and in a PostgreSQL schema with the same ids and the same vectors (embedded once, by the SQLite side, copied), every
question (category 5 left out) asked of both; recall@1/5/10 with partial credit as ``eval_locomo`` counts it, and
how many of the two top 10s agree. With int8 context vectors (migration 9, ``store/pg_q8.py``): each conversation's
questions are asked of PostgreSQL first with its context vectors as written (halfvec), then once ``pack`` held them
as int8, and the two rankings compared (recall both ways, the same top 10, the share of the top 10 kept).

``--before-src DIR`` (a source tree of the code before, e.g. ``git archive <rev> | tar -x -C DIR``): the same run
with that code in a subprocess (its PostgreSQL store held float32 vectors), printed beside this one.
``--large 160,300,none 100,150,none``: PostgreSQL's one-round path of a large namespace forced (LoCoMo's are
small), each question asked under each setting of its pools (dense, text, expand: memory/server_search.py).
Run: nice -n 10 .venv/bin/python benchmarks/locomo_postgres.py [--before-src DIR] [--large SETTING ...]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._util import before_tree  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.eval_locomo import evidence, turn_text, turns  # noqa: E402

LOCOMO = Path("/work/shared/data/locomo/locomo_dev.json")
KS = (1, 5, 10)


def run(url_of: Any, large: list[tuple[int, int, int | None]] | None = None) -> dict[str, Any]:
    """Recall of both backends; ``large``: PostgreSQL's large-namespace path forced (one round, memory/server_search.py
    ``_large``), once per setting of its pools (dense, text, expand), each question asked under each."""
    from agentcontext.embed.base import default_embedder
    from agentcontext.memory import server_search
    from agentcontext.memory import AgentMemory
    from agentcontext.store import open_store
    from agentcontext.vector_store import VectorStore
    from agentcontext.workspace import Workspace

    embedder = default_embedder()
    from agentcontext.store.postgres import PostgresStore

    settings = {f"postgresql, large path, dense {d}, text {t}, expand {e}": (d, t, e) for d, t, e in large or []}
    packs = hasattr(PostgresStore, "pack") and not settings  # the code before has no int8 context vectors
    recall = {b: {k: 0.0 for k in KS} for b in ("sqlite", "postgresql", *settings) +
              (("postgresql, context vectors halfvec",) if packs else ())}
    if settings:
        server_search.COMMON_MIN_DOCS = 1  # every namespace is large
    same_top10 = asked = packed = same_int8 = 0
    shared_int8 = 0.0
    agree = dict.fromkeys(settings, 0)
    start = time.perf_counter()
    for n, sample in enumerate(json.loads(LOCOMO.read_text())):
        sid = str(sample.get("sample_id", "conv"))
        ts = turns(sample)
        items = [{"content": turn_text(t), "conversation_id": sid, "created_at": t["created_at"],
                  "metadata": {"speaker": t.get("speaker", ""), "dia_id": t["dia_id"], "session": t["session"],
                               "session_date": t["session_date"]}} for t in ts]
        lite = AgentMemory(VectorStore(backend="inmemory", embedder=embedder), max_memory_size=10**9)
        ids = lite.batch_store(items)
        nodes = lite.workspace.store.find_nodes(kind="memory")
        hashes = [x.embed_hash for x in nodes] + [x.props["pair_hash"] for x in nodes if x.props.get("pair_hash")]
        ws = Workspace(open_store(url_of(n)), embedder=embedder)
        model = lite.workspace.model_name
        ws.store.put_vectors(lite.workspace.store.get_vectors(hashes, model), model)
        pg = AgentMemory(workspace=ws, max_memory_size=10**9)
        pg.batch_store([{**item, "id": i} for item, i in zip(items, ids)])
        known = {t["dia_id"] for t in ts}
        asked_here = [(qa, ev) for qa in sample["qa"] if qa.get("category") != 5 and
                      (ev := evidence(qa.get("evidence") or [], known))]
        whole = []  # issue 23 s2 (migration 9): the context vectors as written (halfvec), then held as int8
        if packs:
            for qa, ev in asked_here:
                ranked = [r["metadata"].get("dia_id") for r in pg.retrieve(str(qa["question"]), max_results=10)]
                whole.append(ranked)
                for k in KS:
                    recall["postgresql, context vectors halfvec"][k] += len(ev & set(ranked[:k])) / len(ev)
            packed += ws.store.pack()["packed"]
        for j, (qa, ev) in enumerate(asked_here):
            asked += 1
            tops = {}
            asks = [("sqlite", lite, None)] + ([("postgresql", pg, None)] if not settings else
                                               [(name, pg, pools) for name, pools in settings.items()])
            for backend, memory, pools in asks:
                if pools is not None:
                    server_search.LARGE_DENSE_POOL, server_search.LARGE_TEXT_POOL, server_search.LARGE_EXPAND = pools
                ranked = [r["metadata"].get("dia_id") for r in memory.retrieve(str(qa["question"]), max_results=10)]
                tops[backend] = ranked
                for k in KS:
                    recall[backend][k] += len(ev & set(ranked[:k])) / len(ev)
            same_top10 += tops["sqlite"] == tops.get("postgresql")
            if settings:
                first = tops[next(iter(settings))]
                for name in settings:
                    agree[name] += tops[name] == first
            if packs:
                same_int8 += whole[j] == tops["postgresql"]
                shared_int8 += len(set(whole[j]) & set(tops["postgresql"])) / max(len(whole[j]), 1)
        lite.workspace.close()
        ws.close()
    return {"questions": asked, "seconds": round(time.perf_counter() - start, 1),
            **{f"{b} recall@k": {str(k): round(v / max(asked, 1), 4) for k, v in r.items()} for b, r in recall.items()},
            "questions whose top 10s are the same (order too)": same_top10,
            **({"questions whose top 10 is the first setting's (order too)": agree} if settings else {}),
            **({"context vectors packed as int8": packed,
                "PostgreSQL top 10 the same (order too) with halfvec and int8 context vectors": same_int8,
                "PostgreSQL top 10 shared, halfvec against int8 context vectors (mean share)": round(
                    shared_int8 / max(asked, 1), 4)} if packs else {})}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before-src", type=Path, default=None)
    parser.add_argument("--large", nargs="+", default=None, metavar="DENSE,TEXT,EXPAND",
                        help="force PostgreSQL's large-namespace path and ask under each of these pools (e.g. "
                             "160,300,none 100,150,none)")
    parser.add_argument("--url", default=None, help=argparse.SUPPRESS)  # the subprocess: a server to use
    args = parser.parse_args()
    if args.url:  # the code before, in a subprocess: print its figures
        print(json.dumps(run(lambda n: f"{args.url}?schema=before_{n}")))
        return
    server = PgServer().start()
    try:
        figures: dict[str, Any] = {"note": "busy shared 2-core machine"}
        large = [(int(d), int(t), None if e.lower() == "none" else int(e))
                 for d, t, e in (x.split(",") for x in args.large)] if args.large else None
        this = "this code (PostgreSQL vectors: halfvec, context vectors int8 once packed)"
        figures[this] = run(lambda n: server.url(f"after_{n}"), large)
        if args.before_src:
            src = before_tree(args.before_src).parent
            env = {**os.environ, "PYTHONPATH": str(src / "src")}
            out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--url", server.url(None)], env=env,
                                 cwd=src, capture_output=True, text=True, check=True)
            figures[f"the code before ({src}; float32)"] = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        server.stop()
    from benchmarks._util import report

    report("locomo_postgres_large" if args.large else "locomo_postgres", figures)


if __name__ == "__main__":
    main()
