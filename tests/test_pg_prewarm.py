"""Prewarming at open (store/pg_prewarm.py, issue 23 s3): a store opened on a server just started loads its search
indexes into the server's buffers (a cold index too large for its share of shared_buffers is only prefetched); on a
warm server it finds them warm and loads nothing; ``prewarm=False`` does nothing."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from agentcontext.model import Node, content_hash
from agentcontext.store import pg_prewarm
from agentcontext.store.pg_vectors import ann_index_name
from agentcontext.store.postgres import PostgresStore

from .pg_server import PgServer

pytestmark = pytest.mark.postgres
MODEL, DIM = "test-model", 64


def _fill(store: PostgresStore, n: int = 1500) -> str:
    """n nodes with their own vectors (searched, so in the HNSW index); the index's name."""
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    nodes = [Node(id=f"n{i}", kind="memory", namespace="ns", content=f"text {i}", embed_text=f"text {i}")
             for i in range(n)]
    store.put_nodes(nodes)
    store.put_vectors({content_hash(f"text {i}"): vectors[i] for i in range(n)}, MODEL)
    return ann_index_name(MODEL, DIM)


def test_a_server_just_started_gets_the_search_indexes_loaded_when_a_store_opens():
    folder = Path(tempfile.mkdtemp(prefix="actx-pgwarm-"))  # under /tmp: the server's user can reach it
    os.chmod(folder, 0o755)
    server = PgServer(root=folder / "cluster").start()
    try:
        url = server.url("prewarm")
        store = PostgresStore(url)
        assert store.prewarmed.skipped.startswith("the search indexes are small")
        index = _fill(store)
        store.close()
        server.stop()
        server = PgServer(root=folder / "cluster").start()  # the same cluster, its buffers empty
        url = server.url("prewarm")
        cold = PostgresStore(url)
        assert cold.prewarmed.skipped is None
        assert cold.prewarmed.loaded.get(index, 0) > 1  # every block of the HNSW index, read into the buffers
        assert "nodes_tsv" in cold.prewarmed.loaded or "nodes_tsv" in cold.prewarmed.warm
        cold.close()
        warm = PostgresStore(url)  # a second process on the same server: nothing to load
        assert warm.prewarmed.loaded == {}
        assert index in warm.prewarmed.warm
        warm.close()
        assert PostgresStore(url, prewarm=False).prewarmed.skipped == "not asked"
        server.stop()
        server = PgServer(root=folder / "cluster").start()  # cold again
        with pytest.MonkeyPatch.context() as patch:  # no share of the buffers: the cold index is only prefetched
            patch.setattr(pg_prewarm, "SHARE", 0.0)
            small = PostgresStore(server.url("prewarm")).prewarmed
        assert index in small.prefetched and index not in small.loaded
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)



FIRST_QUERIES = """
import gc, sys
from agentcontext.memory import AgentMemory
from agentcontext.store import open_store
from agentcontext.workspace import Workspace
full = []
store = open_store(sys.argv[1])
opened = gc.get_stats()[2]["collections"]
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "start" and info["generation"] == 2 else None)
ws = Workspace(store)
ws.embedder.embed(["the model loaded before the first query"])
memory = AgentMemory(workspace=ws, namespace="talk", max_memory_size=None)
for question in ("what did Ann say about the trip", "when is the meeting", "who likes tea"):
    memory.retrieve(question, max_results=5)
print(opened, len(full))
"""


def test_a_new_process_runs_its_first_full_collection_when_a_store_opens_not_during_its_first_queries(pg_url):
    """``collect_once``: the full collection Python runs once in a new process (after ten of the second generation),
    run at open instead of during the first retrieves."""
    import subprocess
    import sys

    from agentcontext.memory import AgentMemory
    from agentcontext.workspace import Workspace

    store = PostgresStore(pg_url)
    memory = AgentMemory(workspace=Workspace(store), namespace="talk", max_memory_size=None)
    memory.batch_store([{"content": f"Ann: turn {i} about tea, trips and meetings", "conversation_id": "c"}
                        for i in range(300)])
    store.close()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run([sys.executable, "-c", FIRST_QUERIES, pg_url], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    opened, during = (int(x) for x in done.stdout.split())
    assert opened >= 1 and during == 0
    assert not pg_prewarm.collect_once()  # once a process: a full collection has run in this one
