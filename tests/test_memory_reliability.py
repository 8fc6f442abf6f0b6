"""Crash safety and multi-process use of one workspace, with real processes and a real SQLite file."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from agentcontext import AgentMemory, VectorStore

BATCH = 10_000

KILL_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from agentcontext import AgentMemory, VectorStore
    mem = AgentMemory(vector_store=VectorStore(home=sys.argv[1]), max_memory_size=10**7)
    vecs = np.random.default_rng(1).standard_normal((%d, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    items = [{"content": f"crash test fact {i}", "vector": vecs[i]} for i in range(len(vecs))]
    print("START", flush=True)
    mem.batch_store(items)
    print("DONE", flush=True)
""" % BATCH)

WORKER = textwrap.dedent("""
    import json, random, sys, time
    from agentcontext import AgentMemory, VectorStore
    WORDS = ("amber basil cedar delta ember falcon garnet harbor indigo jasper kestrel lantern meadow nectar "
             "orchid pepper quartz raven saffron thistle umber velvet willow yarrow zephyr").split()
    home, name, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    mem = AgentMemory(vector_store=VectorStore(home=home), max_memory_size=10**7)
    ids, misses, i, detail = [], 0, 0, None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rng = random.Random(f"{name}-{i}")
        text = f"{name} note {i}: " + " ".join(rng.sample(WORDS, 6))
        mid = mem.store(text, conversation_id=f"conv-{name}", user_id=name)
        ids.append(mid)
        # Visibility, not ranking: every memory of this user comes back when asking for all of them.
        found = mem.retrieve(text, max_results=10**6, user_id=name)
        if mid not in [r["id"] for r in found] or len(found) != len(ids):
            misses += 1
            detail = {"i": i, "mid": mid, "returned": len(found), "stored": len(ids)}
        i += 1
    json.dump({"ids": ids, "misses": misses, "detail": detail}, open(out, "w"))
""")


def _count(home) -> tuple[str, int]:
    mem = AgentMemory(vector_store=VectorStore(home=home), max_memory_size=10**7)
    try:
        return mem.db.check_integrity(), mem.count()
    finally:
        mem.workspace.close()


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.4, 1.0])
def test_sigkill_mid_batch_store_leaves_none_or_all(tmp_path, delay):
    home = tmp_path / ".agentcontext"
    script = tmp_path / "child.py"
    script.write_text(KILL_CHILD)
    proc = subprocess.Popen([sys.executable, str(script), str(home)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "START"
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    integrity, count = _count(home)
    assert integrity == "ok"
    assert count in (0, BATCH), count


@pytest.mark.slow
def test_four_processes_share_one_workspace(tmp_path):
    home = tmp_path / ".agentcontext"
    VectorStore(home=home).close()
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    procs = [subprocess.Popen([sys.executable, str(script), str(home), f"w{n}", "10", str(tmp_path / f"w{n}.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(4)]
    outputs = [p.communicate(timeout=240) for p in procs]
    for proc, (_, err) in zip(procs, outputs):
        assert "locked" not in err.lower(), err
        assert proc.returncode == 0, err
    mem = AgentMemory(vector_store=VectorStore(home=home), max_memory_size=10**7)
    total = 0
    for n in range(4):
        result = json.loads((tmp_path / f"w{n}.json").read_text())
        assert result["ids"] and result["misses"] == 0, result["detail"]
        for mid in result["ids"]:
            got = mem.get_memory(mid)
            assert got is not None and got["user_id"] == f"w{n}"
        assert [m["id"] for m in mem.get_conversation_history(f"conv-w{n}", max_items=10**6)] == result["ids"]
        total += len(result["ids"])
    assert mem.count() == total and mem.db.check_integrity() == "ok"
    mem.workspace.close()
