"""PostgreSQL-specific store behaviour on a real server: schemas as workspaces, several writer processes, the
optional extra, lost connections, and services running unchanged on it. What every backend must do is the
conformance suite's (tests/conformance/, run here by test_conformance_postgres.py)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from agentcontext.model import Node
from agentcontext.store import open_store

from .conftest import PACKS, ROOT

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg(pg_url):
    store = open_store(pg_url)
    yield store
    store.close()


def test_importing_agentcontext_does_not_import_psycopg():
    code = ("import sys, agentcontext, agentcontext.workspace, agentcontext.store, agentcontext.context; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('psycopg', 'pgvector')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_schema_parameter_separates_workspaces(pg_server):
    a, b = open_store(pg_server.url("ws_a")), open_store(pg_server.url("ws_b"))
    try:
        from agentcontext.store import Store

        assert isinstance(a, Store)
        a.put_nodes([Node(id="x", kind="doc", namespace="ns", title="only in a")])
        assert a.get_node("x").title == "only in a" and b.get_node("x") is None
        again = open_store(pg_server.url("ws_a"))  # reopening finds the same tables and rows
        assert again.get_node("x").version == 1 and again.change_counter() == a.change_counter()
        again.close()
    finally:
        a.close()
        b.close()


def test_text_search_stopwords_and_case(pg):
    pg.put_nodes([Node(id="a", kind="doc", namespace="ns", key="design.agents", title="The Agent Design",
                       content="How to build reliable agents.", tags=["intent:design"])])
    assert pg.text_search("the of and") == []  # only stopwords: an empty answer, not an error
    assert [h[0] for h in pg.text_search("AGENTS")] == ["a"]  # stemmed, case-folded, found through the key
    assert [h[0] for h in pg.text_search("intent")] == ["a"]  # tags are indexed
    assert pg.text_search("design' | !! & (x")[0][0] == "a"  # tsquery syntax in user text is just text


def test_text_search_on_a_large_table_finds_rows_through_the_rarest_words(pg, monkeypatch):
    from agentcontext.store import pg_text

    monkeypatch.setattr(pg_text, "SMALL", 10)  # 30 rows: a large table (statistics estimated, the cap applies)
    monkeypatch.setattr(pg_text, "MATCH_ROWS", 5)
    pg.put_nodes([Node(id=f"r{i}", kind="doc", namespace="ns", content=f"walrus{' harbour' if i < 3 else ''} {i}")
                  for i in range(30)])
    both = pg.text_search("harbour walrus", limit=50)
    assert {h[0] for h in both} == {"r0", "r1", "r2"}  # walrus (30 rows) is past the cap: it finds nothing alone
    alone = dict(pg.text_search("harbour", limit=50))
    assert all(score > alone[i] for i, score in both)  # yet it still scores the rows found
    assert len(pg.text_search("walrus", limit=50)) == 5  # the rarest alone holds more: the first 5 found are ranked
    assert {h[0] for h in pg.text_search("walrus", limit=50, ids=["r7", "r20"])} == {"r7", "r20"}  # ids: no cap



def test_bm25_scores_each_row_by_its_query_lexemes_weighted_by_field(pg):
    """The ranking (pg_text.bm25_sql) reads only the query's lexemes of each row (issue 23): its scores are FTS5's
    formula over every lexeme of the row, read here whole (unnest) and computed in Python."""
    import math

    from agentcontext.store import pg_text

    words = "harbour lantern walrus kettle orchard meadow pebble violin".split()
    pg.put_nodes([Node(id=f"w{i}", kind="doc", namespace="bm", key=f"k.{words[i % 8]}", title=words[(i + 1) % 8],
                       summary=f"{words[(i + 2) % 8]} {words[i % 8]}", tags=[words[(i + 3) % 8]],
                       content=" ".join(words[(i * j) % 8] for j in range(1, 4 + i)) + f" filler{i}")
                  for i in range(12)])
    rows = pg._read("SELECT id, length(tsv), (SELECT array_agg(u.lexeme || ':' || (SELECT sum(CASE w WHEN 'A' THEN "
                    "4 WHEN 'B' THEN 3 WHEN 'C' THEN 2 ELSE 1 END) FROM unnest(u.weights) w)) FROM unnest(tsv) u) "
                    "FROM nodes WHERE namespace = 'bm'", [])
    tf = {i: dict((x.rsplit(":", 1)[0], int(x.rsplit(":", 1)[1])) for x in lexes) for i, _, lexes in rows}
    length = {i: n for i, n, _ in rows}
    avgdl = sum(length.values()) / len(length)
    query = ["harbour", "walrus", "violin"]
    lexes = {"harbour": "harbour", "walrus": "walrus", "violin": "violin"}
    held = {x: sum(x in t for t in tf.values()) for x in lexes.values()}
    expected = {}
    for i, t in tf.items():
        score = sum(pg_text.idf(len(tf), held[x]) * t[x] * (pg_text.K1 + 1)
                    / (t[x] + pg_text.K1 * (1 - pg_text.B + pg_text.B * length[i] / avgdl)) for x in t if x in held)
        if any(x in t for x in held):
            expected[i] = score
    got = dict(pg.text_search(" ".join(query), namespace="bm", limit=50))
    assert set(got) == set(expected) and len(got) > 6
    assert all(math.isclose(got[i], expected[i], rel_tol=1e-9) for i in got)

WRITER = """
import sys
from agentcontext.model import Edge, Node
from agentcontext.store import open_store
url, tag = sys.argv[1], sys.argv[2]
store = open_store(url)
for i in range(25):
    with store.transaction():
        store.put_nodes([Node(id="shared", kind="doc", namespace="ns", content=f"{tag} {i}"),
                         Node(id=f"{tag}{i}", kind="doc", namespace="ns")])
        store.put_edges([Edge(f"{tag}{i}", "rel", "shared", namespace="ns")])
        store.put_record("counter", f"{tag}{i}", {"i": i})
store.close()
"""


OPENER = """
import sys
from agentcontext.model import Node
from agentcontext.store import open_store
store = open_store(sys.argv[1])
store.put_nodes([Node(id=sys.argv[2], kind="doc", namespace="ns")])
store.close()
"""


def test_processes_opening_a_new_schema_at_once(pg_server):
    url = pg_server.url()
    procs = [subprocess.Popen([sys.executable, "-c", OPENER, url, f"p{i}"], cwd=ROOT) for i in range(4)]
    assert [p.wait() for p in procs] == [0, 0, 0, 0]
    store = open_store(url)
    assert store.count_nodes("ns") == 4 and store.check_integrity() == "ok"
    store.close()


def test_several_writer_processes_and_a_change_log_tail_that_misses_nothing(pg):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, pg.url, tag], cwd=ROOT) for tag in "abc"]
    seen: list[int] = []
    while any(p.poll() is None for p in procs):
        seen.extend(c.seq for c in pg.changes_since(seen[-1] if seen else 0))
    assert [p.wait() for p in procs] == [0, 0, 0]
    seen.extend(c.seq for c in pg.changes_since(seen[-1] if seen else 0))
    everything = [c.seq for c in pg.changes_since(0)]
    assert seen == everything  # a tail that polled while others committed skipped nothing
    assert pg.count_nodes("ns") == 76 and pg.count_edges("ns") == 75
    assert pg.get_node("shared").version == 75 == len(pg.node_versions("shared"))
    assert len(pg.list_records("counter")) == 75 and pg.check_integrity() == "ok"


def test_workspace_on_postgres_installs_and_flashes_a_pack(pg_url, monkeypatch, tmp_path):
    from agentcontext.knowledge.flash import flash
    from agentcontext.knowledge.packs import install_folder, list_packs
    from agentcontext.knowledge.search import search_knowledge
    from agentcontext.workspace import Workspace

    monkeypatch.setenv("AGENTCONTEXT_URL", pg_url)
    ws = Workspace.open()
    local = Workspace.open(home=tmp_path / ".agentcontext", create=True, embedder=None)
    try:
        assert ws.store.url == pg_url and type(ws.store).__name__ == "PostgresStore"
        install_folder(ws, PACKS / "semdag")  # embeds through the real model into pgvector columns
        install_folder(local, PACKS / "semdag", defer_embeddings=True)
        assert [p["pack"] for p in list_packs(ws)] == [p["pack"] for p in list_packs(local)]
        bundle = flash(ws, "lib:semdag", "invitations")
        assert bundle.order == ["identity", "account", "membership", "invitations"]
        same = flash(local, "lib:semdag", "invitations")
        assert (bundle.text, bundle.digest, bundle.tokens) == (same.text, same.digest, same.tokens)
        ids, matrix = ws.store.load_vectors(ws.embedder.name, namespace="lib:semdag")
        assert len(ids) == 4 and matrix.shape[0] == 4 and matrix.dtype.name == "float32"
        hits = search_knowledge(ws, "lib:semdag", "who can invite people")
        assert hits and hits[0].selector == "invitations"
    finally:
        ws.close()
        local.close()



def test_bad_url_is_a_store_error_without_the_password(pg_server):
    from agentcontext.errors import StoreError
    from agentcontext.store.pg_sql import redact

    url = f"postgresql://postgres:s3cret@127.0.0.1:{pg_server.port}/no_such_db"
    with pytest.raises(StoreError) as info:
        open_store(url)
    assert "s3cret" not in str(info.value) and "no_such_db" in str(info.value)
    assert redact(url) == f"postgresql://postgres:***@127.0.0.1:{pg_server.port}/no_such_db"


def test_huge_random_body_stores_whole_and_nul_is_a_validation_error(pg):
    import random
    import string

    from agentcontext.errors import ValidationError

    rng = random.Random(3)
    body = "zebraword " + " ".join("".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(200_000))
    pg.put_nodes([Node(id="big", kind="doc", namespace="ns", content=body)])  # > 1 MB of distinct lexemes
    assert pg.get_contents(["big"])["big"] == body and pg.text_search("zebraword")[0][0] == "big"
    with pytest.raises(ValidationError):
        pg.put_nodes([Node(id="nul", kind="doc", namespace="ns", content="a\x00b")])
    assert pg.get_node("nul") is None


def test_agent_memory_on_postgres_ranks_like_sqlite_and_forgets(pg_url, tmp_path):
    from agentcontext import AgentMemory, VectorStore

    facts = ["Critical compliance rule: all trades must be pre-approved",
             "The office coffee machine is on the third floor",
             "Quarterly reports are due on the fifth business day"]
    on_pg, on_sqlite = VectorStore(url=pg_url), VectorStore(home=tmp_path / ".agentcontext")
    try:
        assert type(on_pg.workspace.store).__name__ == "PostgresStore"
        results = []
        for vs in (on_pg, on_sqlite):
            memory = AgentMemory(vector_store=vs, max_memory_size=1000)
            ids = memory.batch_store(facts)
            top = memory.retrieve(query="trade approval requirements", max_results=3)
            results.append([facts[ids.index(r["id"])] for r in top])
            assert memory.forget(ids[0]) == 1 and memory.get_memory(ids[0]) is None
            assert ids[0] not in {r["id"] for r in memory.retrieve(query="trade approval", max_results=3)}
        assert results[0][0] == results[1][0] == facts[0]
    finally:
        on_pg.close()
        on_sqlite.close()


def test_a_lost_connection_is_reopened_outside_transactions(pg, pg_server):
    import psycopg

    pg.put_nodes([Node(id="a", kind="doc", namespace="ns")])

    def kill_backend() -> None:
        backend = pg._db.info.backend_pid
        with psycopg.connect(pg_server.url(None), autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (backend,)).fetchone()[0]

    kill_backend()
    assert pg.get_node("a").version == 1  # a read reconnects
    kill_backend()
    pg.put_nodes([Node(id="b", kind="doc", namespace="ns")])  # so does the start of a transaction
    assert pg.count_nodes("ns") == 2 and pg.load_vectors("m")[0] == []
    with pytest.raises(psycopg.OperationalError):
        with pg.transaction():
            pg.put_nodes([Node(id="c", kind="doc", namespace="ns")])
            kill_backend()  # mid-transaction: the write is lost and the caller must know
            pg.put_nodes([Node(id="d", kind="doc", namespace="ns")])
    assert sorted(pg.get_nodes(["a", "b", "c", "d"])) == ["a", "b"]
    pg.close()
    with pytest.raises(psycopg.OperationalError):
        pg.get_node("a")  # closed on purpose: no silent reconnect


def test_nearest_judges_few_nodes_through_the_index_and_walks_hnsw_past_them(pg, monkeypatch):
    """Past ``EXACT_ROWS`` filtered nodes the HNSW index is walked; whether they are few is counted in an index
    (namespace, kind, title: no row read), so a namespace whose nodes are mostly retracted is walked too, and
    still answers exactly what is live."""
    import numpy as np

    from agentcontext.model import content_hash
    from agentcontext.store import pg_vectors

    monkeypatch.setattr(pg_vectors, "EXACT_ROWS", 20)
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((90, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    big = [i for i in range(90) if i % 3]  # 60 nodes in ns:a, 30 in ns:b
    pg.put_nodes([Node(id=f"n{i}", kind="memory", namespace="ns:a" if i % 3 else "ns:b", key=f"k{i:03d}",
                       title="Bob" if i % 6 == 1 else "Ann", embed_text=f"text {i}") for i in range(90)])
    pg.put_vectors({content_hash(f"text {i}"): vectors[i] for i in range(90)}, "m")

    def exact(query, keep, k=5):
        return [f"n{i}" for i in np.argsort(-(vectors @ query), kind="stable") if keep(i)][:k]

    query = vectors[4] + 0.1
    cases = [({"namespace": "ns:a"}, lambda i: i % 3 != 0), ({"namespace": "ns:b"}, lambda i: i % 3 == 0),
             ({"namespace": "ns:a", "titles": ["Bob"]}, lambda i: i % 6 == 1),
             ({"namespace": "ns:a", "kind": "memory", "tags": None}, lambda i: i % 3 != 0)]
    for filters, keep in cases:
        assert [h[0] for h in pg.nearest(query, "m", 5, **filters)] == exact(query, keep), filters
    retracted = [f"n{i}" for i in big[:50]]
    pg.retract_nodes(retracted)
    live = set(big[50:])
    assert [h[0] for h in pg.nearest(query, "m", 5, namespace="ns:a", kind="memory")] == exact(query, live.__contains__)

    sql = pg_vectors.nearest_sql(pg._db, "m", 16, " WHERE n.namespace = %s AND n.retracted_at IS NULL", 5,
                                 " WHERE n.namespace = %s", hb=pg._hb and not pg._nb)  # joined through pg_hash: 10, 11
    q = np.asarray(query, dtype=np.float32)
    pg._db.execute("SET enable_seqscan = off")  # 90 rows: the planner would rather read them all
    plan = "\n".join(r[0] for r in pg._read("EXPLAIN (ANALYZE, COSTS OFF) " + sql,
                                            ["ns:a", "ns:a", q, q, q, "ns:a", q, q, "ns:a"]))
    assert "Index Only Scan" in plan, plan  # (reading no row once VACUUM has set the visibility map)
    assert "never executed" in plan, plan  # 60 nodes counted: the exact branch is not run
    pg._db.execute("RESET enable_seqscan")


def test_nodes_linked_sends_each_follower_once_and_a_named_one_by_its_id_alone(pg):
    """A follower that is also asked for (part 0) crosses the wire as its rid and id only, and a follower of two
    levels once: the client copies the named row (without content, its own props) instead of parsing it again."""
    from agentcontext.store.pg_sql import linked_sql

    pg.put_nodes([Node(id="a1", kind="memory", namespace="ns", title="Ann", content="one"),
                  Node(id="a2", kind="memory", namespace="ns", title="Bob", content="two", props={"prev": "a1"}),
                  Node(id="a3", kind="memory", namespace="ns", title="Ann", content="three", props={"prev": "a2"}),
                  Node(id="a4", kind="memory", namespace="ns", title="Bob", content="four", props={"prev": "a3"})])
    from agentcontext.store.pg_props import MOVED

    moved = MOVED if pg._pc else ()  # the props the ranking reads as columns (migration 16)
    rows = pg._read(linked_sql("prev", moved=moved), {"ids": ["a2", "a3"], "ns": "ns", "kind": "memory"})
    followers = [r for r in rows if r[0] == 1]
    assert sorted(r[2] for r in followers) == ["a2", "a3", "a4"]  # a3 follows a2 and a4 follows a3: once each
    assert sorted(r[2] for r in followers if r[3] is None) == ["a2", "a3"]  # named ones: rid and id alone
    named, after = pg.nodes_linked(["a2", "a3"], "prev", "ns", "memory")
    assert sorted(named) == ["a1", "a2", "a3"] and [n.id for n in after] == ["a2", "a3", "a4"]
    copy = after[1]
    assert (copy.title, copy.props, copy.content, copy.version) == ("Ann", {"prev": "a2"}, "", named["a3"].version)
    assert copy.props is not named["a3"].props and named["a3"].content == "three"
