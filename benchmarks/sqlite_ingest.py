"""SQLite bulk ingest (issue 23 s1-2, SQLite part): ``AgentMemory.batch_store`` with vectors supplied (no model time)
beside raw SQLite inserts of the same rows and beside the code before the issue, all in the same run; bytes per
memory.

Three workers, each a process of its own (the code on its path), each growing one fresh store in batches of 10,000:
- ``now``: this tree's ``batch_store``;
- ``before``: the same through the code of git revision ``--before`` (default 7908be6, main before this work: its
  ``src/`` extracted with ``git archive`` into a temporary folder, first on the worker's path);
- ``raw``: the same rows written by plain ``executemany`` statements: each batch is stored once through this tree's
  ``batch_store`` into a scratch store whose connection records every write statement and its rows (untimed), and
  those statements and rows are replayed, timed, into a second store of the same schema, one transaction a batch,
  each table's rows by plain ``executemany`` of a one-row statement (a multi-row INSERT batch_store runs is replayed
  as its rows).
  This is what SQLite itself costs for what a memory is (its node row, its text index row, its vector and its change
  log row): what ``batch_store`` adds on top of it is the library's work.
Each prints memories/s (wall clock, and per CPU second of the process: the machine is shared, and CPU time follows
the work rather than the load), per-batch figures by tenth of the load (is the cost flat as the store grows?) and
the store's bytes per memory (after a TRUNCATE checkpoint). Memories as in benchmarks/writes.py: short facts, a
384-d unit vector each, metadata
``{"n": i % 10}``; ``--conversations`` gives every 50 a conversation id and a context vector (pair vectors).

Targets: batch_store >= 60,000 memories/s at 100,000 and >= 0.5x raw inserts of the same rows in the same run (the
issue's figure before: 15,900/s on a quiet machine), flat to 1,000,000 (last tenth's batches <= 1.3x the first's);
bytes per memory not growing.

Run: nice -n 10 .venv/bin/python benchmarks/sqlite_ingest.py [--memories 100000] [--runs 3] [--curve 1000000]
     [--before 7908be6] [--now REV] [--conversations]   (--now: a git revision instead of the working tree)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
BATCH = 10_000
TARGETS = {"memories_per_s": 60_000, "over_raw": 0.5, "last_over_first": 1.3}
ISSUE_BEFORE = {"memories_per_s": 15_900}


def _items(start: int, n: int, conversations: bool) -> list[dict[str, Any]]:
    sys.path.insert(0, str(BENCH))
    from memory import facts, unit_vectors

    texts, vecs = facts(n, 1000 + start), unit_vectors(n, start)
    items = [{"content": t, "vector": v, "metadata": {"n": (start + i) % 10}}
             for i, (t, v) in enumerate(zip(texts, vecs))]
    if conversations:
        context = unit_vectors(n, 7 + start)
        for i, item in enumerate(items):
            item["conversation_id"] = f"conv-{(start + i) // 50}"
            item["context_vector"] = context[i]
    return items


def _memory(home: Path) -> Any:
    from agentcontext import AgentMemory, VectorStore

    return AgentMemory(vector_store=VectorStore(home=home), max_memory_size=10**8)


class Recorder:
    """A connection that records the write statements run through it (and their rows), then runs them."""

    def __init__(self, db: Any) -> None:
        self.db, self.log = db, []

    def execute(self, sql: str, params: Any = ()) -> Any:
        head, _, values = sql.partition(" VALUES ")
        if values.startswith("(") and "),(" in values:  # a multi-row INSERT: replayed as executemany of its rows
            one = values[: values.index(")") + 1]
            width = one.count("?")
            self.log.append((True, f"{head} VALUES {one}",
                             [tuple(params[i: i + width]) for i in range(0, len(params), width)]))
        elif sql.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE", "BEGIN", "COMMIT", "ROLLBACK")):
            self.log.append((False, sql, tuple(params)))
        return self.db.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        rows = list(rows)
        self.log.append((True, sql, rows))
        return self.db.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def worker(mode: str, folder: Path, n: int, conversations: bool) -> dict[str, Any]:
    """Grow one store to ``n`` memories in batches; seconds (wall, CPU) per batch and bytes per memory."""
    walls, cpus = [], []
    if mode == "raw":
        from agentcontext.store import SQLiteStore

        scratch = _memory(folder / "scratch")
        recorder = Recorder(scratch.workspace.store._db)
        scratch.workspace.store._db = recorder
        target = SQLiteStore(folder / "raw" / "store.db")
        db, store = target._db, target
    else:
        mem = _memory(folder / mode)
        store = mem.workspace.store
    for start in range(0, n, BATCH):
        items = _items(start, min(BATCH, n - start), conversations)
        if mode == "raw":
            recorder.log.clear()
            scratch.batch_store(items)
            log = list(recorder.log)
            t, c = time.perf_counter(), time.process_time()
            for many, sql, params in log:
                if many:
                    db.executemany(sql, params)
                else:
                    db.execute(sql, params)
        else:
            t, c = time.perf_counter(), time.process_time()
            mem.batch_store(items)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    # The WAL copied into the file first: bytes of the store, not of where the WAL's checkpoint cycle stands (up to
    # 256 MB more, whatever the page size)
    (db if mode == "raw" else store._db).execute("PRAGMA wal_checkpoint(TRUNCATE)")
    sizes = store.info()["sizes"]
    if mode == "raw":
        scratch.workspace.close()
        target.close()
    else:
        mem.workspace.close()
    return {"walls": walls, "cpus": cpus, "bytes": sizes["total"],
            "tables": {k: v for k, v in sorted(sizes.get("tables", {}).items(), key=lambda kv: -kv[1])[:6]}}


def run(mode: str, src: Path, folder: Path, n: int, conversations: bool) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(dir=folder, prefix=f"{mode}-"))
    env = {**os.environ, "PYTHONPATH": str(src / "src")}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", mode, "--home", str(home), "--memories", str(n)]
    if conversations:
        cmd.append("--conversations")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode:
        raise RuntimeError(f"{mode} worker failed: {proc.stderr[-3000:]}")
    subprocess.run(["rm", "-rf", str(home)], check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summary(got: dict[str, Any], n: int) -> dict[str, Any]:
    walls, cpus = got["walls"], got["cpus"]
    tenth = max(1, len(walls) // 10)
    out = {"per_s": round(n / sum(walls)), "per_cpu_s": round(n / sum(cpus)),
           "bytes_per_memory": round(got["bytes"] / n), "largest_tables": got["tables"]}
    if len(walls) >= 10:
        first, last = statistics.median(walls[:tenth]), statistics.median(walls[-tenth:])
        cfirst, clast = statistics.median(cpus[:tenth]), statistics.median(cpus[-tenth:])
        out.update({"first_tenth_per_s": round(BATCH / first), "last_tenth_per_s": round(BATCH / last),
                    "last_over_first": round(last / first, 2), "cpu_last_over_first": round(clast / cfirst, 2),
                    "cpu_us_per_memory_by_tenth": [round(statistics.median(cpus[i: i + tenth]) / BATCH * 1e6, 1)
                                                   for i in range(0, len(cpus), tenth)]})
    return out


def before_tree(rev: str, folder: Path) -> Path:
    tree = folder / f"tree-{rev}"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--home", type=Path)
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--curve", type=int, default=0, help="also grow one store of each to this many (1000000)")
    ap.add_argument("--before", default="7908be6", help="git revision of the code before (empty: skip it)")
    ap.add_argument("--now", default="", help="git revision of the new code (default: this working tree)")
    ap.add_argument("--modes", nargs="+", default=["now", "raw", "before"], help="which of now, raw, before to run")
    ap.add_argument("--conversations", action="store_true")
    ap.add_argument("--name", default=None)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.home, args.memories, args.conversations)))
        return
    sys.path.insert(0, str(BENCH))
    from _util import report

    n = args.memories
    figures: dict[str, Any] = {"now": args.now or "working tree", "before": args.before,
                               "memories": n, "batch": BATCH, "runs": args.runs, "conversations": args.conversations,
                               "targets": TARGETS, "issue_before": ISSUE_BEFORE, "load_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        folder = Path(tmp)
        now = before_tree(args.now, folder) if args.now else ROOT
        trees = {mode: now for mode in ("now", "raw") if mode in args.modes}
        if args.before and "before" in args.modes:
            trees["before"] = before_tree(args.before, folder)
        sizes = [(n, args.runs)] + ([(args.curve, 1)] if args.curve else [])
        for size, runs in sizes:
            got: dict[str, list[dict[str, Any]]] = {mode: [] for mode in trees}
            for r in range(runs):  # interleaved, so a change of the machine's load reaches every mode alike
                for mode, src in trees.items():
                    got[mode].append(summary(run("now" if mode == "before" else mode, src, folder, size,
                                                 args.conversations), size))
                    print(size, mode, r, got[mode][-1], file=sys.stderr, flush=True)
            med = {mode: {key: statistics.median(x[key] for x in runs_) for key in ("per_s", "per_cpu_s")}
                   for mode, runs_ in got.items()}
            entry: dict[str, Any] = {"median": med, "runs": got}
            figures[f"at_{size}"] = entry
            print(f"N={size:,}: " + "; ".join(f"{m} {v['per_s']:,.0f}/s ({v['per_cpu_s']:,.0f} per CPU s)"
                                             for m, v in med.items()), flush=True)
            if "now" not in med or "raw" not in med:
                continue
            entry["now_over_raw"] = {k: round(med["now"][k] / med["raw"][k], 2) for k in ("per_s", "per_cpu_s")}
            if "before" in med:
                entry["now_over_before"] = {k: round(med["now"][k] / med["before"][k], 2)
                                            for k in ("per_s", "per_cpu_s")}
                entry["before_over_raw"] = {k: round(med["before"][k] / med["raw"][k], 2)
                                            for k in ("per_s", "per_cpu_s")}
            figures[f"at_{size}"] = entry
            print(f"N={size:,}: batch_store {med['now']['per_s']:,.0f}/s ({med['now']['per_cpu_s']:,.0f} per CPU s), "
                  f"raw inserts {med['raw']['per_s']:,.0f}/s ({med['raw']['per_cpu_s']:,.0f}), ratio "
                  f"{entry['now_over_raw']['per_s']} ({entry['now_over_raw']['per_cpu_s']} by CPU; target >= 0.5), "
                  + (f"before ({args.before}) {med['before']['per_s']:,.0f}/s ({med['before']['per_cpu_s']:,.0f}): "
                     f"now/before {entry['now_over_before']['per_s']}x; " if "before" in med else "")
                  + "bytes/memory " + ", ".join(f"{m} {statistics.median(x['bytes_per_memory'] for x in runs_):,.0f}"
                                               for m, runs_ in got.items()), flush=True)
    figures["load_at_end"] = os.getloadavg()
    report(args.name or ("sqlite_ingest" if n == 100_000 else f"sqlite_ingest_{n}"), figures, quiet=True)


if __name__ == "__main__":
    main()
