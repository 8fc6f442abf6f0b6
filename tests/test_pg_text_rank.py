"""PostgreSQL's BM25 text ranking (store/pg_text.py) on a real server: the best hits of the rows a search finds are
exactly BM25's best, with FTS5's scores, however many rows match (issue 23 s3: the ranking once kept the rows
``ts_rank`` liked best and ordered only those, and ``ts_rank`` ignores a row's length, so a short row with the word
once, BM25's best, could be dropped behind hundreds of long ones)."""
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


@pytest.mark.parametrize("query,words", [("walrus", ["walrus"]), ("harbour walrus", ["harbour", "walrus"])])
@pytest.mark.parametrize("k", [1, 5, 30])
def test_the_best_hits_are_bm25s_best_with_its_scores(pg, query, words, k):
    want = best(exact(pg, words), k)
    got = pg.text_search(query, namespace="ns", limit=k)
    assert [i for i, _ in got] == [i for i, _ in want]  # no tie at these ranks: the rows' scores differ
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)
    if query == "walrus" and k >= 5:
        assert {"short0", "short1", "short2"} <= {i for i, _ in got}  # the short rows, written last, rank high


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
