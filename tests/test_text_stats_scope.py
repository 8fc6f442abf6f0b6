"""Text ranking never tells a principal what other namespaces hold.

BM25's statistics (rows, average length, each word's row count) used to be the whole text index's, so a principal
searching its own namespace saw its scores and their order move when a namespace it may not read held the query's
words: a principal able to write one namespace could test whether any word occurs in the others, and how often.
Each test ranks in one namespace, lets another namespace (or pack) fill up with the query's words, and ranks again:
the whole result (ids, order, scores, every signal) must be identical. On SQLite the first ranking is FTS5's own
``bm25()`` (nothing lies outside the namespace) and the second the scoped one (store/sqlite_text.py), so equality also
checks that a single-namespace store ranks bit for bit as before."""
from __future__ import annotations

import random

import pytest

from agentcontext.knowledge.packs import create_pack, put_doc
from agentcontext.knowledge.tools import search_knowledge
from agentcontext.memory import AgentMemory
from agentcontext.model import Node
from agentcontext.store import open_store, pg_text
from agentcontext.workspace import Workspace

WORDS = ("zorblax quivertine weather lunch plans budget meeting harbor lantern copper violet orbit garden pilot "
         "ticket winter summer river mountain signal").split()
QUERIES = ["zorblax quivertine", "zorblax", "weather lunch plans", "harbor lantern copper violet", "orbit",
           "garden pilot zorblax ticket", "winter summer river", "mountain signal budget meeting", "common zorblax",
           "common", "nothingmatches zorblax"]


def _filler(rng: random.Random, n: int, words: int = 8) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, words))) + f" filler{n}"


def _nodes(namespace: str, count: int, seed: int, kinds=("memory", "entity")) -> list[Node]:
    """Rows filling every indexed column (key, title, summary, content, tags) with the query words, some long, and
    the word 'common' in every row (so a query's common word is dropped when the namespace has 1,000 rows)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        out.append(Node(id=f"{namespace}/n{seed}-{i}", kind=kinds[i % len(kinds)], namespace=namespace,
                        key=rng.choice(WORDS) if i % 5 == 0 else f"k{i}", title=_filler(rng, i, 3),
                        summary=_filler(rng, i, 5) if i % 2 else "",
                        content="common " + " ".join(_filler(rng, i, 30 if i % 7 == 0 else 10) for _ in range(2)),
                        tags=[rng.choice(WORDS)] if i % 3 == 0 else []))
    return out


def _ranks(store, namespace, kind=None) -> dict[str, list]:
    out = {q: store.text_search(q, namespace=namespace, kind=kind, limit=60) for q in QUERIES}
    some = [nid for nid, _ in out["zorblax"][::3]]  # a caller's candidates (ids=), as memory/server_search asks
    out["ids"] = store.text_search("zorblax weather harbor", namespace=namespace, kind=kind, ids=some, limit=10)
    return out


def _sqlite_store(tmp_path):
    return open_store(f"sqlite:///{tmp_path / 'store.db'}")


@pytest.fixture
def sqlite_store(tmp_path):
    store = _sqlite_store(tmp_path)
    yield store
    store.close()


def _check_store(store, rows: int) -> None:
    store.put_nodes(_nodes("memory:alice", rows, 1))
    store.put_nodes(_nodes("memory:carol", 40, 2))
    alone = _ranks(store, "memory:alice")
    alone_kind = _ranks(store, "memory:alice", kind="memory")
    assert alone["zorblax"] and alone["common zorblax"]
    # another namespace full of the same words (and more of some), some of its rows retracted
    bob = _nodes("memory:bob", 300, 3) + [Node(id=f"memory:bob/z{i}", kind="memory", namespace="memory:bob",
                                                content=f"zorblax quivertine zorblax {i}") for i in range(200)]
    store.put_nodes(bob)
    store.retract_nodes([n.id for n in bob[:20]])
    both = ["memory:alice", "memory:carol"]
    pair = _ranks(store, both)
    store.put_nodes(_nodes("memory:dave", 120, 4))
    assert _ranks(store, "memory:alice") == alone
    assert _ranks(store, "memory:alice", kind="memory") == alone_kind
    assert _ranks(store, both) == pair
    assert _ranks(store, ["memory:carol", "memory:alice"]) == pair


def test_sqlite_ranking_ignores_other_namespaces(sqlite_store):
    _check_store(sqlite_store, 300)


def test_sqlite_ranking_ignores_other_namespaces_when_common_words_drop(sqlite_store):
    """1,000 rows and more: a word in over half of the namespace's rows is dropped from a query, counted in the
    namespace (the other namespace holds 'zorblax' in most of its rows, which must not make it count as common)."""
    _check_store(sqlite_store, 1100)


def test_sqlite_scoped_scores_equal_fts5_bm25_bit_for_bit(tmp_path):
    """The same rows in a store of their own (FTS5's bm25()) and beside another namespace (the scoped path)."""
    own, shared = _sqlite_store(tmp_path / "own"), _sqlite_store(tmp_path / "shared")
    try:
        own.put_nodes(_nodes("memory:alice", 500, 7))
        shared.put_nodes(_nodes("memory:bob", 200, 8))
        shared.put_nodes(_nodes("memory:alice", 500, 7))
        assert _ranks(shared, "memory:alice") == _ranks(own, "memory:alice")
    finally:
        own.close()
        shared.close()


def _probe(memory_of, victim_words: int = 30) -> tuple[list, list]:
    """The lead's reproduction: mallory's 41 memories, a retrieve in its own namespace before and after another
    namespace (victim, which mallory cannot read) stores memories holding the query's words."""
    filler = [{"content": f"We talked about the weather and lunch plans number {i}."} for i in range(40)]
    mallory = memory_of("mallory")
    mallory.batch_store(filler + [{"content": "the zorblax quivertine is ready"},
                                  {"content": "a quivertine for the weather, lunch and a zorblax"}])
    queries = ["zorblax quivertine", "zorblax weather", "quivertine lunch plans"]
    before = [mallory.retrieve(q, max_results=5) for q in queries]
    victim = memory_of("victim")
    victim.batch_store(filler + [{"content": f"my zorblax code {i}"} for i in range(victim_words)])
    after = [mallory.retrieve(q, max_results=5) for q in queries]
    return before, after


def test_memory_retrieve_is_the_same_whatever_other_namespaces_hold(tmp_path):
    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    try:
        before, after = _probe(lambda ns: AgentMemory(workspace=ws, max_memory_size=None, namespace=ns))
        assert before[0][0]["content"] == "the zorblax quivertine is ready" and before[0][0]["signals"]["bm25"] > 0
        assert after == before
    finally:
        ws.close()


def test_knowledge_search_is_the_same_whatever_other_packs_hold(ws):
    create_pack(ws, "ours")
    for i, text in enumerate(["The zorblax quivertine release plan", "Weather and lunch plans for the team",
                              "A zorblax in the harbor lantern", "Copper violet orbit"]):
        put_doc(ws, "lib:ours", f"doc{i}", title=f"Doc {i}", summary=text, content=text + " in more words.")
    queries = ["zorblax quivertine", "zorblax", "lunch plans", "harbor zorblax lantern"]
    before = [search_knowledge(ws, "lib:ours", q) for q in queries]
    create_pack(ws, "theirs")
    for i in range(25):
        put_doc(ws, "lib:theirs", f"secret{i}", title="zorblax", summary=f"zorblax code {i}",
                content="zorblax zorblax quivertine harbor", embed=False)
    assert [search_knowledge(ws, "lib:ours", q) for q in queries] == before
    assert before[0][0]["selector"] == "doc0"


# --- PostgreSQL ------------------------------------------------------------------------------------------------


@pytest.mark.postgres
def test_postgres_ranking_ignores_other_namespaces(pg_server):
    store = open_store(pg_server.url("scope_store"))
    try:
        _check_store(store, 300)
    finally:
        store.close()


@pytest.mark.postgres
def test_postgres_many_rows_count_each_word_in_the_namespaces_searched(pg_server, monkeypatch):
    """Past ``pg_text.SMALL`` rows the whole table's figures were estimates (the planner's row count, a sample, the
    most common lexemes' shares, all over every namespace). A search of some namespaces, while others exist, counts
    their rows and each word's rows in them (``pg_text_counts``, exact since migration 14): a word another namespace
    makes common (ANALYZE lists it among the most common elements) moves nothing. (SMALL made small here, so a few
    hundred rows take the capped path.)"""
    monkeypatch.setattr(pg_text, "SMALL", 50)
    store = open_store(pg_server.url("scope_many"))
    try:
        store.put_nodes(_nodes("memory:alice", 400, 1))
        store.put_nodes(_nodes("memory:carol", 60, 2))
        store._db.execute("ANALYZE nodes")
        alone = _ranks(store, "memory:alice")
        counts = store.term_counts("zorblax quivertine common", namespace="memory:alice")
        store.put_nodes([Node(id=f"memory:bob/z{i}", kind="memory", namespace="memory:bob",
                              content=f"zorblax quivertine {i}") for i in range(3000)])
        store._db.execute("ANALYZE nodes")
        assert _ranks(store, "memory:alice") == alone
        assert store.term_counts("zorblax quivertine common", namespace="memory:alice") == counts
    finally:
        store.close()


@pytest.mark.postgres
def test_postgres_memory_retrieve_is_the_same_whatever_other_namespaces_hold(pg_server, tmp_path):
    lite = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    ws = Workspace(open_store(pg_server.url("scope_memory")), embedder=lite.embedder)
    try:
        before, after = _probe(lambda ns: AgentMemory(workspace=ws, max_memory_size=None, namespace=ns))
        assert before[0][0]["content"] == "the zorblax quivertine is ready" and before[0][0]["signals"]["bm25"] > 0
        assert after == before
    finally:
        ws.close()
        lite.close()


def test_cli_memory_retrieve_json_is_the_same_whatever_other_namespaces_hold(tmp_path):
    """The CLI door (a subprocess, --json). The CLI, the MCP memory tool (mcp_server/memory.py) and the Python API
    all rank through AgentMemory.retrieve; pack search through knowledge.tools.search_knowledge likewise."""
    import json
    import subprocess
    import sys

    home = tmp_path / ".agentcontext"

    def retrieve() -> list:
        proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", "--home", str(home), "memory", "retrieve",
                               "zorblax quivertine", "--k", "3", "--json"], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout)

    ws = Workspace.open(home=home, create=True)
    filler = [{"content": f"We talked about the weather and lunch plans number {i}."} for i in range(40)]
    try:
        AgentMemory(workspace=ws, max_memory_size=None).batch_store(
            filler + [{"content": "the zorblax quivertine is ready"}])
    finally:
        ws.close()
    before = retrieve()
    ws = Workspace.open(home=home)
    try:
        AgentMemory(workspace=ws, max_memory_size=None, namespace="victim").batch_store(
            [{"content": f"my zorblax code {i}"} for i in range(30)])
    finally:
        ws.close()
    assert before and before[0]["content"] == "the zorblax quivertine is ready"
    assert retrieve() == before


def _doc_grant_search(ws) -> tuple[list, list]:
    """A principal granted some docs of a pack (a doc pattern) searches it before and after the owner writes docs
    it may not read holding the query's words."""
    from agentcontext import access

    create_pack(ws, "team")
    for i, text in enumerate(["The zorblax quivertine release plan", "Weather and lunch plans for the team",
                              "A zorblax in the harbor lantern"]):
        put_doc(ws, "lib:team", f"pub.doc{i}", title=f"Doc {i}", summary=text, content=text + " in more words.",
                embed=False)
    access.grant(ws, "reader", "lib:team/pub.*", "read")
    queries = ["zorblax quivertine", "zorblax", "harbor zorblax lantern"]
    before = [search_knowledge(ws, "lib:team", q, principal="reader") for q in queries]
    for i in range(20):
        put_doc(ws, "lib:team", f"hr.secret{i}", title="zorblax", summary=f"zorblax code {i}",
                content="zorblax zorblax quivertine harbor", embed=False)
    return before, [search_knowledge(ws, "lib:team", q, principal="reader") for q in queries]


def test_knowledge_search_ranks_by_the_docs_a_principal_may_read(ws):
    before, after = _doc_grant_search(ws)
    assert before[0] and before[0][0]["selector"] == "pub.doc0"
    assert after == before


@pytest.mark.postgres
def test_postgres_knowledge_search_ranks_by_the_docs_a_principal_may_read(pg_server, tmp_path):
    lite = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    ws = Workspace(open_store(pg_server.url("scope_docs")), embedder=lite.embedder)
    try:
        before, after = _doc_grant_search(ws)
        assert before[0] and before[0][0]["selector"] == "pub.doc0"
        assert after == before
    finally:
        ws.close()
        lite.close()


def test_sqlite_remembered_namespace_rows_follow_every_change(tmp_path):
    """The namespaces' rows a store remembers follow its change log (puts, updates, retractions, other namespaces'
    writes) and are read again after a purge: after each change, a store opened afresh on the file (nothing
    remembered) ranks the same."""
    path = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(path)
    try:
        store.put_nodes(_nodes("memory:alice", 200, 1))
        store.put_nodes(_nodes("memory:bob", 50, 2))
        steps = [
            lambda: store.put_nodes(_nodes("memory:alice", 30, 5)),
            lambda: store.put_nodes([Node(id="memory:alice/n1-2", kind="memory", namespace="memory:alice",
                                          content="zorblax zorblax zorblax quivertine rewritten")]),
            lambda: store.retract_nodes(["memory:alice/n1-4", "memory:alice/n1-5"]),
            lambda: store.put_nodes(_nodes("memory:bob", 80, 6)),
            lambda: store.purge_nodes(["memory:alice/n1-6"]),
            lambda: store.put_nodes([Node(id="memory:alice/fresh", kind="note", namespace="memory:alice",
                                          title="zorblax", content="harbor lantern zorblax")]),
        ]
        for step in steps:
            _ranks(store, "memory:alice")  # remembered before the change
            step()
            fresh = open_store(path)
            try:
                assert _ranks(store, "memory:alice") == _ranks(fresh, "memory:alice")
            finally:
                fresh.close()
    finally:
        store.close()


def test_a_scoped_search_reads_one_state_of_the_file_while_another_process_commits(tmp_path):
    """The scoped path reads the namespace's rows, the table's totals and each word's rows in several statements: a
    write committed by another connection between them must not be seen by some and not others (the search is one
    read transaction), so the result is the ranking of the state before that write."""
    store = _sqlite_store(tmp_path)
    other = _sqlite_store(tmp_path)  # another process's connection to the same file
    try:
        store.put_nodes(_nodes("memory:alice", 60, 1))
        store.put_nodes(_nodes("memory:bob", 60, 3))  # something outside the namespace: the scoped path
        before = store.text_search("zorblax quivertine", namespace="memory:alice", limit=60)
        assert before
        reads, real = [], store._read

        def read_then_write(sql, params=()):
            out = real(sql, params)
            reads.append(sql)
            if len(reads) == 2:  # between the search's statements, another connection adds matching rows
                other.put_nodes([Node(id=f"memory:alice/late{i}", kind="memory", namespace="memory:alice",
                                      content="zorblax quivertine zorblax") for i in range(30)])
            return out

        store._read = read_then_write
        during = store.text_search("zorblax quivertine", namespace="memory:alice", limit=60)
        store._read = real
        assert len(reads) > 2
        assert during == before  # the state the search began in, whole
        after = store.text_search("zorblax quivertine", namespace="memory:alice", limit=60)
        assert any(nid.startswith("memory:alice/late") for nid, _ in after)  # the write is seen by the next one
    finally:
        other.close()
        store.close()


@pytest.mark.postgres
def test_postgres_a_search_is_two_statements_its_counts_and_its_rows(pg_server, monkeypatch):
    """A memory query searches its namespace's text three to five times (text_search, again without the names
    asked, ids=, term_counts). Each text_search reads every count it ranks with in one statement
    (``pg_text_counts.COUNTS``: N, avgdl and each lexeme's rows in the namespaces, exact) and then its rows: two
    statements, where the sampled statistics took up to four (whether the namespace lies alone, N and avgdl, the
    lexemes, the rows); term_counts right after asks none (``pg_text_counts.COUNTS_SECONDS``). The counts are read
    through the counts' keys, never by a scan."""
    from agentcontext.store import pg_text_counts

    monkeypatch.setattr(pg_text, "SMALL", 50)
    store = open_store(pg_server.url("scope_statements"))
    asked: list[str] = []
    real = store._read

    def spy(sql, params):
        asked.append(sql)
        return real(sql, params)

    try:
        store.put_nodes(_nodes("memory:alice", 400, 1))
        store.put_nodes([Node(id=f"memory:bob/z{i}", kind="memory", namespace="memory:bob",
                              content=f"zorblax quivertine {i}") for i in range(3000)])
        store._db.execute("ANALYZE")
        monkeypatch.setattr(store, "_read", spy)
        for namespace in ("memory:alice", None, ["memory:alice", "memory:bob"]):
            asked.clear()
            assert store.text_search("zorblax weather", namespace=namespace, limit=10)
            assert len(asked) == 2 and asked[0].startswith(pg_text_counts.COUNTS.format(scope="")[:30])
            asked.clear()
            store.term_counts("zorblax weather", namespace=namespace)
            assert asked == []  # the search's counts, read less than a second ago
        scoped = pg_text_counts.COUNTS.format(scope=pg_text_counts.SCOPE)
        with store.transaction():
            store._db.execute("SET LOCAL enable_seqscan = off")  # what the plan would be on a large table
            plan = "\n".join(r[0] for r in store._db.execute(
                "EXPLAIN " + scoped, [["zorblax", "weather"], ["memory:alice"], ["memory:alice"], ["memory:alice"]]))
        assert "Seq Scan on text_counts" not in plan, plan
    finally:
        store.close()
