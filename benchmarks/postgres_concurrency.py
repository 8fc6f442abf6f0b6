"""Several processes writing and reading one PostgreSQL server (issue 9 s4), and clients killed mid-batch.

``--processes`` workers share one memory namespace for ``--seconds``: each stores memories (single ones and small
batches, embedded by the store as users' are), retrieves by the text of its latest memory (read-your-writes: it must
come back), and tails the change log, reading every memory another worker stored through ``get_memory``. Afterwards:
lost writes (a stored id that is not in the store, or a count that differs); visibility: the longest a write stayed
unseen by a read that started after the write had returned in another process (target <= 1 s; the time until a busy
worker's next poll is reported beside it, as polling delay, not as invisibility); and every exception a caller saw
(target: none, lock errors included). Then ``--kills`` times a writer storing batches of ``KILL_BATCH`` memories is
sent SIGKILL at a random moment inside a batch: every batch must be in the store whole or not at all, and the store's
integrity check "ok".
Run: /work/tools/bench.sh .venv/bin/python benchmarks/postgres_concurrency.py [--processes 8 --seconds 120 --kills 5]
(tests/test_postgres_concurrency.py runs a short version.)
"""
from __future__ import annotations

import argparse
import bisect
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import report  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.store import open_store  # noqa: E402

NAMESPACE = "memory:team"
KILL_BATCH = 3000
SRC = str(Path(__file__).resolve().parent.parent / "src")

WORKER = r"""
import json, random, sys, time, traceback
import numpy as np
from agentcontext.memory import AgentMemory
from agentcontext.store import open_store
from agentcontext.workspace import Workspace
url, name, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
rng = random.Random(name)
ws = Workspace(open_store(url))
memory = AgentMemory(workspace=ws, namespace="team", max_memory_size=None, context_turns=False)
ws.embed_query("warm the model up")
words = "amber basil cedar delta ember falcon garnet harbor indigo jasper kestrel lantern meadow nectar".split()
writes, seen, polls, errors, retrieves, misses = [], {}, [], [], 0, 0
seq = start_seq = ws.store.change_counter()  # the tail reports every change after this one
started = time.time()
deadline = started + seconds
i = 0
while time.time() < deadline:
    try:
        size = rng.choice([1, 1, 1, 3, 10])
        items = [{"content": f"{name} note {i + k}: " + " ".join(rng.sample(words, 5)),
                  "metadata": {"writer": name, "n": i + k}} for k in range(size)]  # embedded as users' are
        ids = memory.batch_store(items)
        done = time.time()
        writes.extend([mid, done] for mid in ids)
        i += size
        hits = memory.retrieve(items[-1]["content"], max_results=5, filters={"writer": name})
        retrieves += 1
        misses += ids[-1] not in [h["id"] for h in hits]
        polled = time.time()  # a read starting now sees every write committed before it (or the run fails)
        polls.append(polled)
        for change in ws.store.changes_since(seq):  # what the others stored, read through the service
            seq = change.seq
            if change.op == "node.put" and change.namespace == "memory:team" and change.target not in seen:
                found = memory.get_memory(change.target)
                if found is not None and found["metadata"].get("writer") != name:
                    seen[change.target] = polled
    except Exception as exc:  # every error a caller sees is a failure of the run: record it, keep going
        errors.append(f"{type(exc).__name__}: {exc}"[:500])
json.dump({"writes": writes, "seen": seen, "polls": polls, "errors": errors, "retrieves": retrieves,
           "misses": misses, "started": started, "start_seq": start_seq}, open(out, "w"))
"""

KILLED = r"""
import sys
import numpy as np
from agentcontext.memory import AgentMemory
from agentcontext.store import open_store
from agentcontext.workspace import Workspace
url, tag, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
memory = AgentMemory(workspace=Workspace(open_store(url)), namespace="team", max_memory_size=None,
                     context_turns=False)
rng = np.random.default_rng(abs(hash(tag)) % (1 << 30))
b = 0
while True:
    vectors = rng.standard_normal((size, 384)).astype(np.float32)
    items = [{"content": f"{tag} batch {b} item {k}", "vector": vectors[k], "metadata": {"batch": f"{tag}-{b}"}}
             for k in range(size)]
    print(f"begin {b}", flush=True)
    memory.batch_store(items)
    print(f"done {b}", flush=True)
    b += 1
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC}


def workers(url: str, processes: int, seconds: float, folder: Path) -> list[dict[str, Any]]:
    outs = [folder / f"w{n}.json" for n in range(processes)]
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, url, f"w{n}", str(seconds), str(out)], env=_env(),
                              stderr=subprocess.PIPE, text=True) for n, out in enumerate(outs)]
    for proc in procs:
        _, err = proc.communicate(timeout=seconds + 600)
        if proc.returncode:
            raise RuntimeError(f"a worker failed ({proc.returncode}): {err[-2000:]}")
    return [json.loads(out.read_text()) for out in outs]


def kill_mid_batch(url: str, kills: int, size: int = KILL_BATCH) -> dict[str, Any]:
    """SIGKILL a batch writer inside a batch ``kills`` times; every batch must be whole or absent."""
    rng = random.Random(7)
    inside = 0
    for k in range(kills):
        proc = subprocess.Popen([sys.executable, "-u", "-c", KILLED, url, f"kill{k}", str(size)], env=_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:  # let it finish a batch or two, then kill it inside the next one
            lines.append(line)
            if line.startswith("begin") and sum(x.startswith("begin") for x in lines) >= 1 + k % 2:
                time.sleep(rng.uniform(0.05, 0.4))
                break
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=60)
        lines += rest.splitlines()
        inside += lines[-1].startswith("begin")
    store = open_store(url)
    try:
        sizes: dict[str, int] = {}
        for node in store.find_nodes(namespace=NAMESPACE, with_content=False, order="none"):
            batch = (node.props.get("metadata") or {}).get("batch")
            if batch:
                sizes[batch] = sizes.get(batch, 0) + 1
        torn = {b: n for b, n in sizes.items() if n != size}
        return {"kills": kills, "killed_inside_a_batch": inside, "batches_in_store": len(sizes),
                "torn_batches": torn, "integrity": store.check_integrity()}
    finally:
        store.close()


def change_seqs(store: Any) -> dict[str, int]:
    """Each memory's first ``node.put`` sequence number in the change log."""
    seqs: dict[str, int] = {}
    last = 0
    while page := store.changes_since(last, limit=10_000):
        for change in page:
            if change.op == "node.put":
                seqs.setdefault(change.target, change.seq)
        last = page[-1].seq
    return seqs


def visibility(logs: list[dict[str, Any]], seqs: dict[str, int]) -> tuple[list[float], list[float], int]:
    """For each write as the other workers saw it: (stale, lags, unseen). A worker's tail reports the changes
    after ``start_seq``, so only writes whose change-log number is above it are judged (a write can commit before
    another worker's tail starts and return to its writer after: its return time says nothing about that).
    stale: how long reads that started after the write had returned still missed it; lags: the polling delay
    until it was seen; unseen: returned over a second before the worker's last read and never reported."""
    written = {mid: (n, at) for n, log in enumerate(logs) for mid, at in log["writes"]}
    stale, lags, unseen = [], [], 0
    for n, log in enumerate(logs):
        polls = log["polls"]
        for mid, (writer, at) in written.items():
            if writer == n or seqs[mid] <= log["start_seq"]:
                continue
            if mid in log["seen"]:  # the reads that started after the commit and still missed it
                found = log["seen"][mid]
                lags.append(max(0.0, found - at))
                missed = polls[bisect.bisect_right(polls, at):bisect.bisect_left(polls, found)]
                stale.append(missed[-1] - at if missed else 0.0)
            elif polls and polls[-1] > at + 1.0:
                unseen += 1  # committed after this worker's tail began, read over a second later, never reported
    return stale, lags, unseen


def unseen_by_return_time(logs: list[dict[str, Any]]) -> int:
    """The old judgement, reported beside the new one: writes returned after a worker's start time (rather than
    committed after its starting counter), returned over a second before its last read and never reported by it."""
    written = {mid: (n, at) for n, log in enumerate(logs) for mid, at in log["writes"]}
    return sum(1 for n, log in enumerate(logs) for mid, (writer, at) in written.items()
               if writer != n and at > log["started"] and mid not in log["seen"] and log["polls"]
               and log["polls"][-1] > at + 1.0)


def run(url: str, processes: int, seconds: float, kills: int, kill_size: int = KILL_BATCH) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.time()
        logs = workers(url, processes, seconds, Path(tmp))
        elapsed = time.time() - t
    store = open_store(url)
    try:
        written = {mid: (n, at) for n, log in enumerate(logs) for mid, at in log["writes"]}
        present = set(store.get_nodes(list(written)))
        count = store.count_nodes(namespace=NAMESPACE, kind="memory")
        seqs = change_seqs(store)
    finally:
        store.close()
    stale, lags, unseen = visibility(logs, {mid: seqs.get(mid, 0) for mid in written})
    figures = {
        "processes": processes, "seconds": round(elapsed, 1), "writes": len(written),
        "writes_per_second": round(len(written) / elapsed, 1),
        "retrieves": sum(log["retrieves"] for log in logs),
        "lost_writes": len(set(written) - present) + abs(count - len(written)),
        "read_your_writes_misses": sum(log["misses"] for log in logs),
        "visible_to_others_max_s": round(max(stale), 3) if stale else None,  # longest a committed write was missed
        "reads_missing_a_committed_write": sum(x > 0 for x in stale),
        "seen_by_others_polling_p50_s": round(sorted(lags)[len(lags) // 2], 3) if lags else None,
        "seen_by_others_polling_max_s": round(max(lags), 3) if lags else None,
        "not_seen_by_others": unseen,
        "not_seen_by_others_judged_by_return_time": unseen_by_return_time(logs),  # the judgement before 2026-12-01
        "errors_seen_by_callers": [e for log in logs for e in log["errors"]],
    }
    if kills:
        figures["sigkill_mid_batch"] = kill_mid_batch(url, kills, kill_size)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--kills", type=int, default=5)
    args = parser.parse_args()
    server = PgServer().start()
    try:
        figures = run(server.url("team"), args.processes, args.seconds, args.kills)
    finally:
        server.stop()
    figures["targets"] = {"lost_writes": 0, "visible_to_others_max_s": 1.0, "errors_seen_by_callers": 0,
                          "torn_batches": 0}
    figures["note"] = "one embedded server and every worker on this busy shared 2-core machine"
    report("postgres_concurrency", figures)


if __name__ == "__main__":
    main()
