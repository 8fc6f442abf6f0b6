"""PostgreSQL's text search, held to its hits and scores (issue 23 s3, session 18): on a store built to stress the
ranking (a word in most rows, ties, more rows asked than match, other namespaces and kinds, retracted rows), capped
or not, the search returns what the statement of session 17 (kept here verbatim) returns, and the candidates' scores
(``ids=``) are those the search of every matching row gives them. A change to how the statement reads its rows (a
cap, an index path, a bound: docs/POSTGRES_SCALE.md, session 18) must keep these or say which hits it changes."""
from __future__ import annotations

import pytest

from agentcontext.model import Node
from agentcontext.store import open_store, pg_text

pytestmark = pytest.mark.postgres

WORDS = ["walrus", "harbour", "otter", "lantern", "meadow"]


@pytest.fixture(scope="module")
def pg(pg_server):
    store = open_store(pg_server.url("text_paths"))
    nodes = []
    for i in range(1200):  # 'common' in every row but every 7th; rarer words spread unevenly; many ties
        words = [w for j, w in enumerate(WORDS) if i % (3 + 4 * j) == 0]
        nodes.append(Node(id=f"r{i:04d}", kind="doc" if i % 5 else "note", namespace="ns" if i % 9 else "other",
                          title="walrus" if i % 97 == 0 else "",
                          content=" ".join((["common"] if i % 7 else []) + words + [f"item{i % 40}"])))
    store.put_nodes(nodes)
    store.retract_nodes([f"r{i:04d}" for i in range(0, 1200, 11)])  # retracted: never a hit, never counted
    store._exec("ANALYZE nodes", [])
    yield store
    store.close()


def s17_bm25_sql(lexes: list[str], where: str, prefilter: int, limit: int, scan: int | None = None,
                 first: bool = False) -> str:
    """pg_text.bm25_sql of 040746f (session 17), verbatim: the reference the statement now must agree with."""
    weights, cd_weights, k1, b = pg_text.WEIGHTS, pg_text.CD_WEIGHTS, pg_text.K1, pg_text.B
    cheap = " + ".join(f"%s * ts_rank('{weights}', n.tsv, %s::tsquery, 0)" for _ in lexes)
    found = f"SELECT n.rid, n.id, n.tsv FROM nodes n WHERE n.tsv @@ %s::tsquery{where}"
    if first and scan is not None:
        found = f"({found}) UNION ALL ({found})"
    page = "" if scan is None else f" LIMIT {int(scan)}"
    tfs = ", ".join(f"(8 * ts_rank_cd('{cd_weights}', pre.tsv, q.lexes[{i}], 0))::int AS tf{i}"
                    for i in range(1, len(lexes) + 1))
    terms = " + ".join(f"CASE WHEN f.tf{i} > 0 THEN f.idfs[{i}] * f.tf{i} * {k1 + 1} / (f.tf{i} + {k1} * ({1 - b} + "
                       f"{b} * f.dl / f.avgdl)) ELSE 0 END" for i in range(1, len(lexes) + 1))
    return (f"WITH pre AS MATERIALIZED (SELECT n.rid, n.id, n.tsv FROM ({found}{page}) n "
            f"ORDER BY {cheap} DESC, n.rid LIMIT {int(prefilter)}), "
            "q AS (SELECT %s::float8 AS avgdl, %s::float8[] AS idfs, %s::tsquery[] AS lexes) "
            f"SELECT f.id, {terms} AS score, f.rid FROM (SELECT pre.id, pre.rid, length(pre.tsv) AS dl, q.avgdl, "
            f"q.idfs, {tfs} FROM pre CROSS JOIN q OFFSET 0) f ORDER BY score DESC, f.rid LIMIT {int(limit)}")


def searched(store, query: str, **kw) -> tuple[list[tuple[str, float]], list[tuple[str, list]]]:
    """(the search's hits, the ranking statements it ran with their parameters)."""
    asked, read = [], store._read

    def spy(sql, params=()):
        if "ts_rank_cd" in sql:
            asked.append((sql, list(params)))
        return read(sql, params)

    store._read = spy
    try:
        return store.text_search(query, **kw), asked
    finally:
        store._read = read


def as_s17(store, monkeypatch, query: str, **kw) -> list[tuple[str, float]]:
    """The search run with session 17's statement (``s17_bm25_sql``)."""
    with monkeypatch.context() as m:
        m.setattr(pg_text, "bm25_sql", s17_bm25_sql)
        got, _ = searched(store, query, **kw)
    return got


QUERIES = ["walrus", "common walrus", "common harbour otter", "walrus lantern meadow common", "item3 common",
           "otter item12 harbour", "nothing common"]


@pytest.mark.parametrize("capped", [False, True])
@pytest.mark.parametrize("k", [1, 7, 50, 2000])
@pytest.mark.parametrize("query", QUERIES)
def test_the_hits_and_scores_are_session_17s_on_a_store_built_to_stress_them(pg, monkeypatch, query, k, capped):
    if capped:  # the large table's path: found through the rarest words, ranked up to a cap, prefiltered
        monkeypatch.setattr(pg_text, "SMALL", 10)
        monkeypatch.setattr(pg_text, "MATCH_ROWS", 60)
        monkeypatch.setattr(pg_text, "PREFILTER", 8)
    got, _ = searched(pg, query, namespace="ns", kind="doc", limit=k)
    assert got == as_s17(pg, monkeypatch, query, namespace="ns", kind="doc", limit=k)  # the same ids, order, floats
    assert not any(i.endswith(tuple(f"{j:04d}" for j in range(0, 1200, 11))) for i, _ in got)  # no retracted row


@pytest.mark.parametrize("query", ["walrus", "lantern meadow", "common otter", "walrus item3"])
def test_the_candidates_scores_are_the_full_searchs(pg, monkeypatch, query):
    """The scores of asked ids (many, a few, one) are those the search of every matching row gives them (a small
    table: every match ranked) and session 17's; a row holding no word is left out."""
    full = dict(pg.text_search(query, namespace="ns", limit=5000))
    for ids in ([f"r{i:04d}" for i in range(0, 1200, 2)], [f"r{i:04d}" for i in range(1, 40)], ["r0003"]):
        got, _ = searched(pg, query, namespace="ns", limit=len(ids), ids=ids)
        assert dict(got) == {i: full[i] for i in ids if i in full}
        assert got == as_s17(pg, monkeypatch, query, namespace="ns", limit=len(ids), ids=ids)
