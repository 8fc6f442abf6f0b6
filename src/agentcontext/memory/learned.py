"""Memory search's hits put in the learned ranker's order (engine/ltr.py, ``ranker="learned"``): the linear fusion's
first ``ltr.POOL`` hits described by what each already reports (its score and signals), where it sits against the
best ones (links: the in-process index's previous / next columns, or on a store that searches itself the memories'
``prev`` property walked up to three turns), its speaker (the memory's title), its date (``created_at``) and which of
the query's keywords its text holds, and put in the order of the shipped trees. Each hit keeps its calibrated score
(``min_score`` means what it meant); its signals gain the model's value (``learned``).

A query that asks when (memory/dates.py ``asks_when``) keeps the linear order (its hits gain no ``learned``): held out
on LoCoMo's dev split (benchmarks/locomo_ltr.py, session 20), the trees lowered temporal R@5 0.894 -> 0.884 against
the linear fusion, whose time signals and near stage are fitted for those questions; with the linear order kept for
them, 0.742 / 0.830 -> 0.749 / 0.832, every category up or equal (temporal R@5 0.897). That gate was chosen after
seeing the temporal drop held out (a protocol choice with those figures in view)."""
from __future__ import annotations

from datetime import date
from typing import Any, Sequence

import numpy as np

from ..engine import ltr
from ..model import Node
from .dates import asks_when
from .index import MemoryIndex
from .search import Hit

TURNS = 3  # the link distances the features read (ltr.FAR beyond)


def _days(value: Any) -> float:
    """The day of a memory's ``created_at`` in days since the epoch (its date part, as the ranker was fitted: a
    LoCoMo session's date; nan: none or unreadable)."""
    try:
        return float((date.fromisoformat(str(value)[:10]) - date(1970, 1, 1)).days) if value else float("nan")
    except ValueError:
        return float("nan")


def _links_by_props(store: Any, ids: list[str], nodes: dict[str, Node]) -> np.ndarray:
    """``ltr.link_matrix`` from the memories' ``prev`` properties (a store that searches itself has no in-process
    index): each hit's previous turns walked up to ``TURNS`` (the missing nodes read in one call a step)."""
    at = {nid: i for i, nid in enumerate(ids)}
    out = np.full((len(ids), len(ids)), float(ltr.FAR))
    np.fill_diagonal(out, 0.0)
    known = dict(nodes)
    missing = [nid for nid in ids if nid not in known]
    if missing:
        known.update(store.get_nodes(missing))
    cur = {i: nid for i, nid in enumerate(ids)}
    for d in range(1, TURNS + 1):
        step = {i: ((known.get(nid).props or {}).get("prev") if known.get(nid) is not None else None)
                for i, nid in cur.items()}
        cur = {i: p for i, p in step.items() if p}
        missing = [p for p in set(cur.values()) if p not in known]
        if missing:
            known.update(store.get_nodes(missing))
        for i, p in cur.items():
            j = at.get(p)
            if j is not None and j != i:  # j is d turns before i: i is d after j
                out[i, j] = min(out[i, j], d)
                out[j, i] = min(out[j, i], d)
    return out


def learned(store: Any, query: str, hits: Sequence[Hit], nodes: dict[str, Node],
            index: MemoryIndex | None = None) -> list[Hit]:
    """``hits`` (the linear order) in the learned ranker's order, or as they are for a query that asks when (module
    doc)."""
    if len(hits) < 2 or asks_when(query):
        return list(hits)
    trees = ltr.load()
    ids = [h.id for h in hits]
    rows = [index.row.get(i, -1) for i in ids] if index is not None else []
    if index is not None and min(rows) >= 0:
        links = ltr.link_matrix(rows, index.prev, index.next, TURNS)
    else:
        links = _links_by_props(store, ids, nodes)
    titles: dict[str, int] = {}
    speaker = np.array([titles.setdefault(nodes[i].title or "", len(titles)) if i in nodes and nodes[i].title
                        else -1 for i in ids], dtype=np.int64)
    days = np.array([_days((nodes[i].props or {}).get("created_at")) if i in nodes else float("nan") for i in ids])

    def signal(name: str, fallback: str = "") -> np.ndarray:
        return np.array([float(h.signals.get(name, h.signals.get(fallback, 0.0) if fallback else 0.0)) for h in hits])

    mention = signal("mention")
    names = sorted({nodes[i].title for i, m in zip(ids, mention.tolist()) if m and i in nodes and nodes[i].title})
    held, new = ltr.terms(query, names, [(nodes[i].content or "") if i in nodes else "" for i in ids])
    pool = ltr.Pool(score=np.array([h.score for h in hits], dtype=np.float64), dense=signal("dense_context", "dense"),
                    keyword=signal("keyword"), neighbour=signal("neighbours"), mention=mention,
                    timed=signal("timed"), date=signal("date"), answer=signal("answer"), near=signal("near"),
                    links=links, speaker=speaker, days=days, held=held, new=new)
    order, scores = ltr.order(trees, pool, ltr.query_cues(asks_when(query), bool(pool.mention.any()), query))
    return [Hit(hits[i].id, hits[i].score, {**hits[i].signals, "learned": round(float(s), 6)})
            for i, s in zip(order.tolist(), scores.tolist())]
