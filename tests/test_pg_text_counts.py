"""BM25's counts on PostgreSQL are exact whatever wrote the rows (issue 23 s3, migration 14, store/pg_text_counts.py).

Before, a large table's counts came from an ANALYZE sample (``N``, ``avgdl``, a common lexeme's rows from the
planner's most common elements): two stores of the same memories ranked differently. Now ``text_counts`` and
``text_totals`` hold the live rows per lexeme and namespace, kept by triggers in each write's transaction: every test
here checks them against a count of the live rows themselves after some kind of write (row path, bulk load, update,
retraction, namespace change, erasure, concurrent writers, the upgrade that fills them), and that a strict erasure
leaves no byte of a word only the erased memory held in the counts' files."""
from __future__ import annotations

import random
import threading

import pytest

from agentcontext.model import Node
from agentcontext.store import open_store, pg_text, pg_text_counts
from agentcontext.store.migrations import Migrations
from agentcontext.store.postgres import PostgresStore
from tests.bytescan import hits, new_secret

pytestmark = pytest.mark.postgres
WORDS = ("harbour walrus otter lantern meadow quarry violin saffron glacier pepper orchard ember falcon marble "
         "thistle copper canyon willow beacon cobalt").split()
QUERIES = ["harbour walrus", "lantern", "meadow quarry violin", "ember falcon thistle copper", "willow w3", "cobalt"]
STEP = 14  # the migration that adds the counts


class Step13(PostgresStore):
    """The store as the code before the step wrote it."""

    MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:STEP - 1])


def nodes(n: int, seed: int, namespace: str = "ns", start: int = 0) -> list[Node]:
    """Rows whose words repeat with skewed frequencies (some in most rows, some rare), in every indexed column."""
    rng = random.Random(seed)
    out = []
    for i in range(start, start + n):
        words = [WORDS[min(int(rng.expovariate(0.3)), len(WORDS) - 1)] for _ in range(rng.randint(2, 14))]
        out.append(Node(id=f"{namespace}/{i}", kind="memory", namespace=namespace, title=f"note w{i % 7}",
                        summary=rng.choice(WORDS) if i % 3 == 0 else "", content=" ".join(words),
                        tags=[rng.choice(WORDS)] if i % 4 == 0 else []))
    return out


def kept(store) -> tuple[dict, dict]:
    """What the counts tables hold."""
    lexemes = {(x, ns): n for x, ns, n in store._read("SELECT lexeme, namespace, rows FROM text_counts")}
    totals = {ns: (n, d) for ns, n, d in store._read("SELECT namespace, rows, lengths FROM text_totals")}
    return lexemes, totals


def counted(store) -> tuple[dict, dict]:
    """The same counted from the live rows themselves."""
    lexemes = {(x, ns): n for x, ns, n in store._read(
        "SELECT lex, namespace, count(*) FROM nodes, unnest(tsvector_to_array(tsv)) lex WHERE retracted_at IS NULL "
        "GROUP BY 1, 2")}
    totals = {ns: (n, d) for ns, n, d in store._read(
        "SELECT namespace, count(*), sum(length(tsv)) FROM nodes WHERE retracted_at IS NULL GROUP BY 1")}
    return lexemes, totals


def exact(store) -> None:
    assert kept(store) == counted(store)
    words = ["harbour", "walrus", "saffron", "violin", "w3", "nothingholdsthis", "the"]
    for scope in (None, ["ns"], ["ns", "other"]):  # what a search reads: the same as the rows' own
        assert (pg_text_counts.counts(store._read, words, scope)
                == pg_text_counts.counts(store._read, words, scope, kept=False))
    lexemes, totals = counted(store)  # and what a search of this store ranks with right after its write
    assert store.term_counts("harbour walrus", "ns") == (
        totals.get("ns", (0, 0))[0], {w: lexemes[(w, "ns")] for w in ("harbour", "walrus") if (w, "ns") in lexemes})


def test_every_write_path_keeps_the_counts_exact(pg_url):
    store = open_store(pg_url)
    try:
        for node in nodes(30, 1):  # the row path
            store.put_nodes([node])
        exact(store)
        store.put_nodes(nodes(800, 2, start=30))  # one batch (the bulk path)
        store.put_nodes(nodes(300, 3, namespace="other"))
        exact(store)
        changed = [Node(id=n.id, kind=n.kind, namespace=n.namespace, content=f"saffron rewritten {n.id}")
                   for n in nodes(200, 2, start=30)]
        store.put_nodes(changed)  # updates of the text, in a batch
        store.put_nodes([Node(id="ns/5", kind="memory", namespace="ns", content="quarry again")])  # one row
        exact(store)
        store.retract_nodes([f"ns/{i}" for i in range(100, 260)])  # retractions
        exact(store)
        store.put_nodes([Node(id=f"ns/{i}", kind="memory", namespace="ns", content="back again violin")
                         for i in range(100, 120)])  # a retracted id written again
        exact(store)
        with pytest.raises(RuntimeError):  # a rolled-back write leaves the counts as they were
            with store.transaction():
                store.put_nodes(nodes(50, 9, namespace="gone"))
                raise RuntimeError("rolled back")
        exact(store)
        store.purge_nodes([f"ns/{i}" for i in range(0, 60)] + [f"other/{i}" for i in range(300)])  # erasure
        exact(store)
        lexemes, totals = kept(store)
        assert "other" not in totals and not any(ns == "other" for _, ns in lexemes)  # no row of 0 is kept
        assert all(n > 0 for n in lexemes.values())
        rows, avgdl, small, found = store._bm25_stats("walrus lantern", namespace="ns")
        live, lengths = totals["ns"]
        assert (rows, avgdl) == (live, lengths / live) and small
        assert [(t, x, n) for t, x, n, _ in found] == [("walrus", "walrus", lexemes[("walrus", "ns")]),
                                                        ("lantern", "lantern", lexemes[("lantern", "ns")])]
    finally:
        store.close()


def test_an_import_into_an_empty_store_counts_once_after_the_rows_what_the_triggers_count(pg_server):
    """A copy into an empty ``nodes`` (import_rows: migrate, the 1M build) runs without the counts' triggers and
    counts the rows once at its end (pg_text_counts.suspend / resume): the counts equal those the triggers kept in
    the source, row path and batches, retractions and namespaces included; an import into a table holding rows
    keeps the triggers."""
    src, dst = open_store(pg_server.url("counts_src")), open_store(pg_server.url("counts_dst"))
    try:
        for node in nodes(20, 31):
            src.put_nodes([node])
        src.put_nodes(nodes(700, 32, start=20))
        src.put_nodes(nodes(250, 33, namespace="other"))
        src.retract_nodes([f"ns/{i}" for i in range(40, 90)])
        exact(src)
        rows = src.export_rows("nodes", None, 100_000)[0]
        enabled = []

        def batches():
            for i in range(0, len(rows), 300):
                yield rows[i:i + 300]
                enabled.append(dst._read("SELECT tgenabled FROM pg_trigger WHERE tgname = "
                                         "'actx_text_counts_insert' AND tgrelid = 'nodes'::regclass")[0][0])

        dst.import_rows("nodes", batches())
        assert enabled[0] == "D" and len(enabled) == 4  # disabled while the rows went in
        assert kept(dst) == kept(src)
        exact(dst)
        dst.put_nodes(nodes(30, 34, namespace="ns", start=5000))  # the triggers keep them again after
        exact(dst)
        more = open_store(pg_server.url("counts_more"))
        more.put_nodes(nodes(5, 35))
        seen = []
        more.import_rows("nodes", [[r for r in rows if r["id"] not in {f"ns/{i}" for i in range(5)}]])
        seen.append(more._read("SELECT tgenabled FROM pg_trigger WHERE tgname = 'actx_text_counts_insert' AND "
                               "tgrelid = 'nodes'::regclass")[0][0])
        assert seen == ["O"]
        exact(more)
        more.close()
    finally:
        src.close()
        dst.close()


def test_a_retrieves_searches_read_the_counts_once_and_another_writer_shows_within_a_second(pg_url, monkeypatch):
    """The searches of one retrieve ask the same words three to five times: the counts read are used again for
    ``COUNTS_SECONDS`` (one statement a search: its rows); a write of this store forgets them at once, another
    store's (process's) commit shows once they are that old; inside a transaction they are always read."""
    store, other = open_store(pg_url), open_store(pg_url)
    asked: list[str] = []
    real = store._read

    def spy(sql, params=()):
        asked.append(sql)
        return real(sql, params)

    try:
        store.put_nodes(nodes(300, 12))
        monkeypatch.setattr(store, "_read", spy)
        first = store.text_search("harbour walrus", namespace="ns", limit=10)
        assert len(asked) == 2
        asked.clear()
        assert store.text_search("walrus harbour", namespace="ns", limit=10) and store.term_counts("walrus", "ns")
        assert len(asked) == 1  # the search's rows only
        store.put_nodes([Node(id="ns/new", kind="memory", namespace="ns", content="walrus walrus harbour")])
        assert store.term_counts("walrus", "ns")[0] == 301  # its own write: at once
        other.put_nodes([Node(id="ns/more", kind="memory", namespace="ns", content="walrus")])
        with store.transaction():
            assert store.term_counts("walrus", "ns")[0] == 302  # inside a transaction: read
        monkeypatch.setattr(pg_text_counts, "COUNTS_SECONDS", 0.0)
        other.put_nodes([Node(id="ns/last", kind="memory", namespace="ns", content="walrus")])
        assert store.term_counts("walrus", "ns")[0] == 303
        assert first
    finally:
        store.close()
        other.close()


def test_concurrent_writers_keep_the_counts_exact(pg_url):
    """Four stores (connections) writing the same words at once: every count still equals the rows' own."""
    stores = [open_store(pg_url) for _ in range(4)]
    errors: list[BaseException] = []

    def write(k: int) -> None:
        try:
            for b in range(6):
                stores[k].put_nodes(nodes(40, 10 * k + b, start=1000 * k + 40 * b))
                stores[k].retract_nodes([f"ns/{1000 * k + 40 * b}"])
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        exact(stores[0])
        assert kept(stores[0])[1]["ns"][0] == 4 * 6 * 39
    finally:
        for s in stores:
            s.close()


def test_two_stores_of_the_same_memories_rank_the_same_whatever_their_analyze(pg_server, monkeypatch):
    """Past ``pg_text.SMALL`` rows the counts were estimates from an ANALYZE sample; two stores of the same rows
    sampled differently (statistics target 1 against 1,000) ranked differently. Now both rank with the same exact
    counts, which are the rows' own."""
    monkeypatch.setattr(pg_text, "SMALL", 100)
    rows = nodes(2500, 5) + nodes(400, 6, namespace="other")
    one, two = open_store(pg_server.url("counts_a")), open_store(pg_server.url("counts_b"))
    try:
        for store, target in ((one, 1), (two, 1000)):
            store.put_nodes(rows)
            store._db.execute(f"ALTER TABLE nodes ALTER COLUMN tsv SET STATISTICS {target}")
            store._db.execute("ANALYZE nodes")
        for query in QUERIES:
            for namespace in ("ns", None, ["ns", "other"]):
                first = one.text_search(query, namespace=namespace, limit=20)
                assert first and first == two.text_search(query, namespace=namespace, limit=20)
                assert one.term_counts(query, namespace) == two.term_counts(query, namespace)
        lexemes, _ = counted(one)
        total, counts = one.term_counts("harbour walrus")
        assert total == 2900 and counts == {w: sum(n for (x, _), n in lexemes.items() if x == w)
                                            for w in ("harbour", "walrus")}
    finally:
        one.close()
        two.close()


def test_the_upgrade_counts_the_rows_a_store_holds(pg_server):
    """A store written before the step (schema 13) upgrades to the counts its rows hold, and ranks as a store written
    since (whose counts the triggers kept) does."""
    def write(store) -> None:
        store.put_nodes(nodes(600, 7))
        store.put_nodes(nodes(100, 8, namespace="other"))
        store.retract_nodes([f"ns/{i}" for i in range(50)])

    url = pg_server.url("counts_upgrade")
    old = Step13(url)
    write(old)
    assert old.schema_version() == STEP - 1
    old.close()
    store, fresh = open_store(url), open_store(pg_server.url("counts_fresh"))
    try:
        write(fresh)
        assert store.schema_version() >= STEP
        exact(store)
        assert kept(store) == kept(fresh)
        assert ({q: store.text_search(q, namespace="ns", limit=20) for q in QUERIES}
                == {q: fresh.text_search(q, namespace="ns", limit=20) for q in QUERIES})
    finally:
        store.close()
        fresh.close()


def test_a_strict_scrub_leaves_no_byte_of_an_erased_word_in_the_counts(pg_url, pg_server):
    """A word only the erased memory held: its count row is deleted with the memory, and the dead row version that
    still held its bytes goes with the strict erasure's VACUUM FULL (text_counts is among ``scrub.CONTENT_TABLES``);
    a word other memories hold keeps its (smaller) count."""
    from agentcontext.store.scrub import CONTENT_TABLES

    store = open_store(pg_url)
    secret = new_secret()
    try:
        store.put_nodes(nodes(50, 11))
        store.put_nodes([Node(id="ns/secret", kind="memory", namespace="ns", content=f"the {secret} walrus")])
        walrus = kept(store)[0][("walrus", "ns")]
        assert kept(store)[0][(secret, "ns")] == 1

        def files() -> list:
            store._db.execute("CHECKPOINT")
            paths = [r[0] for r in store._read(
                "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.relname IN "
                "('text_counts', 'text_counts_pkey') AND c.relnamespace = current_schema()::regnamespace")]
            return [pg_server.data / p for p in paths]

        assert hits(files(), secret), "the word is in the counts' files before the erasure"
        store.purge_nodes(["ns/secret"])
        assert (secret, "ns") not in kept(store)[0] and kept(store)[0][("walrus", "ns")] == walrus - 1
        assert hits(files(), secret), "its dead row version still holds it before the scrub"
        store.scrub(CONTENT_TABLES, strict=True)
        assert hits(files(), secret) == {}
        exact(store)
    finally:
        store.close()
