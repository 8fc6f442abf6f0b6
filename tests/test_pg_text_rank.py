"""PostgreSQL's BM25 text ranking (store/pg_text.py) on a real server (issue 23 s3): each row's weighted term count is
read by ``ts_rank_cd`` (in C) where the statement before unnested each row's query lexemes; the hits and their
scores are the statement before's, bit for bit (it is kept here, verbatim, as the reference), and the scores are
FTS5's formula; a capped search takes the rows holding more of the query's words first."""
from __future__ import annotations

import pytest

from agentcontext.model import Node
from agentcontext.store import open_store, pg_text

pytestmark = pytest.mark.postgres

FILLER = "lorem ipsum dolor amet consectetur adipiscing elit sed eiusmod tempor incididunt labore dolore magna"


@pytest.fixture(scope="module")
def pg(pg_server):
    store = open_store(pg_server.url("text_rank"))
    # 320 long rows holding 'walrus' twice (ts_rank ranks them above a row holding it once), some also 'harbour';
    # then short rows holding 'walrus' once: BM25's best (short rows), written last (the greatest rids)
    nodes = [Node(id=f"long{i:03d}", kind="doc", namespace="ns",
                  content=f"walrus {FILLER} walrus {' '.join(FILLER.split()[: i % 9])}"
                          + (" harbour" if i % 40 == 0 else "") + f" item{i}")
             for i in range(320)]
    nodes += [Node(id=f"short{i}", kind="doc", namespace="ns", content=f"walrus w{i}") for i in range(3)]
    nodes += [Node(id="titled", kind="doc", namespace="ns", title="walrus harbour", content=FILLER)]
    store.put_nodes(nodes)
    yield store
    store.close()


def exact(store, words: list[str], namespace: str = "ns") -> dict[str, float]:
    """BM25 over every row holding a word, each row read whole (unnest) and scored in Python: FTS5's formula, the
    terms added in the row's lexeme order."""
    rows = store._read("SELECT id, length(tsv), (SELECT array_agg(u.lexeme || ':' || (SELECT sum(CASE w WHEN 'A' "
                       "THEN 4 WHEN 'B' THEN 3 WHEN 'C' THEN 2 ELSE 1 END) FROM unnest(u.weights) w)) FROM unnest(tsv) "
                       "u) FROM nodes WHERE namespace = %s AND retracted_at IS NULL", [namespace])
    tf = {i: dict((x.rsplit(":", 1)[0], int(x.rsplit(":", 1)[1])) for x in lexes) for i, _, lexes in rows}
    length = {i: n for i, n, _ in rows}
    avgdl = sum(length.values()) / len(length)
    held = {w: sum(w in t for t in tf.values()) for w in words}
    out = {}
    for i, t in tf.items():
        present = [x for x in t if x in held]  # the row's order (a tsvector's, sorted)
        if present:
            score = 0.0
            for x in present:
                score += (pg_text.idf(len(tf), held[x]) * t[x] * (pg_text.K1 + 1)
                          / (t[x] + pg_text.K1 * (1 - pg_text.B + pg_text.B * length[i] / avgdl)))
            out[i] = score
    return out


def best(scores: dict[str, float], k: int) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda kv: -kv[1])[:k]


def old_bm25_sql(lexes: list[str], where: str, prefilter: int, limit: int, scan: int | None = None) -> str:
    """pg_text.bm25_sql of 5f549da, verbatim: the reference the statement now must agree with."""
    weights, tf = "{0.25, 0.5, 0.75, 1.0}", "CASE w WHEN 'A' THEN 4 WHEN 'B' THEN 3 WHEN 'C' THEN 2 ELSE 1 END"
    k1, b = pg_text.K1, pg_text.B
    cheap = " + ".join(f"%s * ts_rank('{weights}', n.tsv, %s::tsquery, 0)" for _ in lexes)
    found = f"nodes n WHERE n.tsv @@ %s::tsquery{where}"
    if scan is not None:
        found = f"(SELECT n.rid, n.id, n.tsv FROM {found} LIMIT {int(scan)}) n"
    only = "ts_delete(pre.tsv, tsvector_to_array(ts_delete(pre.tsv, q.lexes)))"
    return (f"WITH pre AS MATERIALIZED (SELECT n.rid, n.id, n.tsv FROM {found} "
            f"ORDER BY {cheap} DESC, n.rid LIMIT {int(prefilter)}), "
            "q AS (SELECT %s::float8 AS avgdl, %s::text[] AS lexes, %s::float8[] AS idfs) "
            f"SELECT pre.id, (SELECT sum(q.idfs[array_position(q.lexes, u.lexeme)] * t.tf * {k1 + 1} / (t.tf + {k1} "
            f"* ({1 - b} + {b} * length(pre.tsv) / q.avgdl))) FROM unnest({only}) u CROSS JOIN LATERAL (SELECT "
            f"sum({tf}) AS tf FROM unnest(u.weights) w) t) AS score, pre.rid FROM pre CROSS JOIN q "
            f"ORDER BY score DESC, pre.rid LIMIT {int(limit)}")


def as_before(store, query: str, limit: int) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """(the search's hits, the statement before's hits with the same statistics), searching namespace ns."""
    asked = []
    read = store._read

    def spy(sql, params=()):
        if "ts_rank_cd" in sql:
            asked.append(list(params))
        return read(sql, params)

    store._read = spy
    try:
        got = store.text_search(query, namespace="ns", limit=limit)
    finally:
        store._read = read
    (params,) = asked
    avgdl, ordered = params[-3], params[-1]
    pairs = params[2: 2 + 2 * len(ordered)]  # after the match query and the namespace
    lexes, idfs = [x.strip("'") for x in pairs[1::2]], pairs[0::2]
    sql = old_bm25_sql(lexes, " AND n.namespace = %s AND n.retracted_at IS NULL", max(4 * limit, 200), limit)
    before = [(r[0], float(r[1])) for r in read(sql, [*params[:2 + len(pairs)], avgdl, lexes, idfs])]
    return got, before


@pytest.mark.parametrize("query,words", [("walrus", ["walrus"]), ("harbour walrus", ["harbour", "walrus"]),
                                         ("walrus harbour item7", ["walrus", "harbour", "item7"])])
@pytest.mark.parametrize("k", [1, 5, 30, 100])
def test_the_hits_and_scores_are_the_statement_befores_and_fts5s(pg, query, words, k):
    got, before = as_before(pg, query, k)
    assert got == before and len(got) == k  # the same ids, order and floats
    scores = exact(pg, words)
    assert [s for _, s in got] == pytest.approx([scores[i] for i, _ in got], rel=1e-12)


def test_each_rows_weighted_term_count_is_read_exactly(pg):
    """ts_rank_cd with weights 1/8..4/8 and a one-lexeme query is the lexeme's weighted position count (the tf the
    ranking reads) for every row and lexeme here."""
    wrong = pg._read("WITH u AS (SELECT n.tsv, u.lexeme, (SELECT sum(CASE w WHEN 'A' THEN 4 WHEN 'B' THEN 3 WHEN 'C' "
                     "THEN 2 ELSE 1 END) FROM unnest(u.weights) w) AS tf FROM nodes n, unnest(n.tsv) u "
                     "WHERE n.namespace = 'ns') SELECT count(*) FROM u WHERE tf <> 8 * ts_rank_cd("
                     f"'{pg_text.CD_WEIGHTS}', tsv, quote_literal(lexeme)::tsquery, 0)", [])
    assert wrong[0][0] == 0


def test_a_capped_search_ranks_the_rows_holding_more_of_the_query_first(pg, monkeypatch):
    """On a large table a search finds its rows through the rarest word and ranks at most ``MATCH_ROWS`` of them:
    the rows also holding another of the query's words come first (they outrank the rows holding the rare word
    alone), not the first rows stored, so the cap does not drop these best hits."""
    monkeypatch.setattr(pg_text, "SMALL", 10)  # statistics estimated, the cap applies
    monkeypatch.setattr(pg_text, "MATCH_ROWS", 5)
    pg.put_nodes([Node(id=f"cap-o{i:02d}", kind="doc", namespace="cap", content=f"otter item{i}") for i in range(20)]
                 + [Node(id=f"cap-h{i:02d}", kind="doc", namespace="cap", content=f"harbour item{i}")
                    for i in range(10)]
                 + [Node(id=f"cap-w{i:02d}", kind="doc", namespace="cap", content=f"walrus item{i}")
                    for i in range(8)]
                 + [Node(id=f"cap-b{i}", kind="doc", namespace="cap", content=f"harbour walrus item{i}")
                    for i in range(2)])  # written last: the cap once ranked the first 5 walrus rows stored
    got = pg.text_search("harbour walrus", namespace="cap", limit=5)  # walrus (10 rows) the rarest, past the cap
    want = best(exact(pg, ["harbour", "walrus"], "cap"), 2)
    assert [i for i, _ in got[:2]] == [i for i, _ in want] == ["cap-b0", "cap-b1"]
    assert [s for _, s in got[:2]] == pytest.approx([s for _, s in want], rel=1e-12)
    assert len(got) == 5  # the cap still holds: 2 rows holding both, then 3 of the walrus rows


def test_each_rows_term_counts_are_read_once(pg):
    """BM25 reads a lexeme's count in a row once (the subquery holding the counts is not folded into the score's
    expression, which named each count three times: ~7 ms of CPU for 600 rows at 200,000 memories)."""
    asked = []
    read = pg._read

    def spy(sql, params=()):
        if "ts_rank_cd" in sql:
            asked.append((sql, list(params)))
        return read(sql, params)

    pg._read = spy
    try:
        pg.text_search("harbour walrus item7", namespace="ns", limit=5)
    finally:
        pg._read = read
    (sql, params), = asked
    plan = "\n".join(r[0] for r in read("EXPLAIN (VERBOSE, COSTS OFF) " + sql, params))
    assert plan.count("ts_rank_cd(") == 3  # one a lexeme: harbour, walrus, item7


def test_the_candidates_ids_go_as_one_text_and_score_as_before(pg):
    """A ranking's ~1,000 candidates (``text_search(ids=)``) go to the server as one text split there (the client
    dumping a list of ~1,000 strings cost ~2.5 ms a call at 200,000 memories); their hits and scores are those of
    the ids sent one by one."""
    ids = [f"long{i:03d}" for i in range(0, 320, 3)] + ["short1", "titled", "nowhere"]
    asked = []
    read = pg._read

    def spy(sql, params=()):
        if "ts_rank_cd" in sql:
            asked.append(list(params))
        return read(sql, params)

    pg._read = spy
    try:
        got = pg.text_search("walrus harbour", namespace="ns", limit=500, ids=ids)
    finally:
        pg._read = read
    (params,) = asked
    assert not any(isinstance(p, list) and len(p) > 2 for p in params)  # no list of ids
    assert "\x1f".join(ids) in params
    each = {i: s for one in ids for i, s in pg.text_search("walrus harbour", namespace="ns", limit=5, ids=[one])}
    assert dict(got) == each and len(got) == len(ids) - 1
    # (no node id holds a control character; an asked one holding the separator goes as a list and matches none)
    found = pg.text_search("walrus", namespace="ns", ids=["short1\x1fshort2", "short1"])
    assert [i for i, _ in found] == ["short1"]
