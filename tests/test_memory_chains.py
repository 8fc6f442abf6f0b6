"""Conversation chains stay one chain (issue 13, section 5): each turn links to the one before it, and
neither concurrent writers nor updates of older turns fork it."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from agentcontext import AgentMemory, VectorStore

WRITER = textwrap.dedent("""
    import sys
    from agentcontext import AgentMemory, VectorStore
    where, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = VectorStore(url=where) if where.startswith("postgresql") else VectorStore(home=where)
    mem = AgentMemory(vector_store=store, max_memory_size=10**7)
    mem.workspace.embedder.embed(["warm up"])
    print("READY", flush=True)
    sys.stdin.readline()  # every writer starts at once
    for i in range(count):  # a fixed count, not a time budget: a loaded machine writes fewer, not other
        if i % 5 == 4:  # now and then a batch of two turns
            mem.batch_store([{"content": f"{name} batch turn {i} a", "conversation_id": f"conv-{i % 2}"},
                             {"content": f"{name} batch turn {i} b", "conversation_id": f"conv-{i % 2}"}])
        else:
            mem.store(f"{name} says turn {i}", conversation_id=f"conv-{i % 2}")
    print(count, flush=True)
""")


def chain_problems(mem: AgentMemory, conversation_id: str) -> dict:
    turns = {n.id: (n.props or {}).get("prev") for n in mem._nodes(conversation_id)}
    followers: dict[str, int] = {}
    for prev in turns.values():
        if prev is not None:
            followers[prev] = followers.get(prev, 0) + 1
    heads = [t for t in turns if t not in followers]
    starts = [t for t, prev in turns.items() if prev is None]
    walked, at = 0, heads[0] if heads else None
    while at is not None and walked <= len(turns):
        walked, at = walked + 1, turns.get(at)
    return {"turns": len(turns), "heads": len(heads), "starts": len(starts),
            "forks": sum(n - 1 for n in followers.values() if n > 1), "walked": walked}


def one_chain(n: int) -> dict:
    return {"turns": n, "heads": 1, "starts": 1, "forks": 0, "walked": n}


ROUNDS = 10  # per writer: 12 turns, 6 in each conversation (rounds 4 and 9 store a batch of two)
TURNS_PER_CONVERSATION = 6


def run_writers(tmp_path, where: str, writers: int = 4) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [subprocess.Popen([sys.executable, str(script), where, f"w{n}", str(ROUNDS)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(writers)]
    for proc in procs:
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err


def assert_one_chain_each(store: VectorStore, writers: int) -> None:
    mem = AgentMemory(vector_store=store, max_memory_size=10**7)
    try:
        for conv in ("conv-0", "conv-1"):
            report = chain_problems(mem, conv)
            assert report == one_chain(writers * TURNS_PER_CONVERSATION), report  # none lost, one chain
    finally:
        mem.workspace.close()


def test_concurrent_writers_keep_one_chain_per_conversation(tmp_path):
    home = tmp_path / ".agentcontext"
    VectorStore(home=home).close()
    run_writers(tmp_path, str(home), writers=4)
    assert_one_chain_each(VectorStore(home=home), writers=4)


@pytest.mark.postgres
def test_concurrent_writers_keep_one_chain_on_postgres(tmp_path, pg_url):
    VectorStore(url=pg_url).close()
    run_writers(tmp_path, pg_url, writers=3)
    assert_one_chain_each(VectorStore(url=pg_url), writers=3)


def test_updating_an_older_turn_does_not_fork_the_chain(tmp_path):
    mem = AgentMemory(vector_store=VectorStore(home=tmp_path / ".agentcontext"))
    first = mem.store("first turn", conversation_id="c")
    mem.store("second turn", conversation_id="c")
    mem.update(first, metadata={"checked": True})  # moves the older turn's recorded_at to now
    third = mem.store("third turn", conversation_id="c")
    assert chain_problems(mem, "c") == one_chain(3)
    assert mem.db.get_node(third).props["prev"] != first


def test_forgetting_the_head_relinks_to_the_turn_before(tmp_path):
    mem = AgentMemory(vector_store=VectorStore(home=tmp_path / ".agentcontext"))
    ids = [mem.store(f"turn {i}", conversation_id="c") for i in range(3)]
    mem.delete_memory(ids[-1])
    fourth = mem.store("turn 3", conversation_id="c")
    assert mem.db.get_node(fourth).props["prev"] == ids[1]
    assert chain_problems(mem, "c") == one_chain(3)


def test_a_batch_over_many_conversations_reads_their_heads_at_once_on_a_server(pg_url, monkeypatch):
    """batch_store on a server store reads the heads of all its conversations set-based (chain.heads: the head
    records listed once and their turns in one read), not a record and a turn per conversation, before and again
    inside the transaction (an embedded store reads them by key: a read there costs no round trip)."""
    import numpy as np

    mem = AgentMemory(vector_store=VectorStore(url=pg_url))
    rng = np.random.default_rng(0)

    def items(tag: str) -> list[dict]:
        vectors = rng.standard_normal((40, 384)).astype(np.float32)
        return [{"content": f"{tag} turn of conversation {i}", "conversation_id": f"c{i}", "vector": vectors[i],
                 "context_vector": vectors[i]} for i in range(40)]

    first = mem.batch_store(items("first"))
    statements: list[str] = []
    real = mem.db._read

    def counted(sql, params=()):
        statements.append(sql)
        return real(sql, params)

    monkeypatch.setattr(mem.db, "_read", counted)
    second = mem.batch_store(items("second"))
    monkeypatch.undo()
    reads = [s for s in statements if "FROM records" in s]
    assert len(reads) <= 4, len(reads)  # was 80: each conversation's record read twice
    for i, (a, b) in enumerate(zip(first, second)):
        assert mem.db.get_node(b).props["prev"] == a
        assert chain_problems(mem, f"c{i}") == one_chain(2)
