"""The retrieval modes beside ``local`` (seed 003's ``ContextRetriever.retrieve(mode=...)``).

- ``global`` (``retrieve_global``): answers from the graph's communities (Leiden, graph/communities.py). Each result
  is one community report: ``source="community"``, ``content`` = its summary (extractive, or written by the
  provider when one is given), ``metadata`` = ``{"title", "members" (node ids, most central first), "size",
  "summarised_by"}``, scored ``RELEVANCE(cosine + 0.3 * words)`` against the summary.
- ``drift`` (``retrieve_drift``): starts from the best ``communities`` reports, then follows up locally: the local
  results (memory, vectors, graph nodes and their expansion) that are members of those communities, or that the
  graph reaches from them, each scored ``(score + community score) / 2`` with ``signals["community"]`` and
  ``community`` naming the report. Returns the reports it started from, then the follow-ups, best first.
- ``hybrid``: local and global fused: both lists merged by their scores, one entry per id (each score is
  already an absolute relevance in [0, 1], engine/fusion.py's curve, so they compare without re-weighting).

``truth_filter`` is refused outside ``local`` (retrieval.py): these modes are outside the dependency-validation
guarantee. Every score is absolute in [0, 1] and names its signals. Each mode returns its results ranked and
unbounded: ``ContextRetriever.retrieve`` applies ``min_score`` once (engine/retrieval_config.py ``above``) and cuts to
``max_results`` after it.
"""
from __future__ import annotations

from typing import Any

from .engine.retrieved import RetrievedContext
from .errors import ValidationError
from .graph import ContextGraph
from .graph.communities import community_reports, rank_reports

DRIFT_COMMUNITIES = 2


def _graph(retriever: Any, mode: str) -> ContextGraph:
    graph = retriever.knowledge_graph
    if not isinstance(graph, ContextGraph):
        raise ValidationError(f"mode={mode!r} answers from the knowledge graph's communities: give the retriever "
                              "knowledge_graph=ContextGraph(...) (AgentContext: knowledge_graph= or load_graph)",
                              mode=mode)
    return graph


def global_results(retriever: Any, query: str, llm_provider: Any = None) -> list[Any]:
    graph = _graph(retriever, "global")
    out = []
    for report, score, signals in rank_reports(graph, query, community_reports(graph, llm_provider)):
        out.append(RetrievedContext(
            content=report.summary, score=score, source="community", id=report.id, signals=dict(signals),
            metadata={"title": report.title, "members": [graph.user_id(m) for m in report.members],
                      "size": len(report.members), "summarised_by": report.summarised_by}))
    return out


def drift_results(retriever: Any, query: str, max_results: int, llm_provider: Any = None,
                  communities: int = DRIFT_COMMUNITIES, **local: Any) -> list[Any]:
    graph = _graph(retriever, "drift")
    starts = global_results(retriever, query, llm_provider)[:max(1, int(communities))]
    member_of: dict[str, tuple[str, float]] = {}
    reports = {r.id: r for r in community_reports(graph, llm_provider)}
    for start in starts:
        for m in reports[start.id].members:
            if m not in member_of:
                member_of[m] = (start.id, start.score)
    follow = []
    for hit in retriever._ranked(query, max(max_results * 3, 20), **local):
        home = member_of.get(hit.id or "") or member_of.get(str(hit.extra.get("via", "")))
        if home is None:
            continue
        hit.signals["community"] = home[1]
        hit.extra["community"] = home[0]
        hit.score = (hit.score + home[1]) / 2
        follow.append(hit)
    follow.sort(key=lambda c: (-c.score, c.id or ""))
    return starts + follow


def hybrid_results(retriever: Any, query: str, max_results: int, llm_provider: Any = None, **local: Any) -> list[Any]:
    found = retriever._ranked(query, max_results, **local)
    found += global_results(retriever, query, llm_provider)
    best: dict[str, Any] = {}
    for c in found:
        key = c.id or f"{c.source}:{c.content}"
        if key not in best or c.score > best[key].score:
            best[key] = c
    return sorted(best.values(), key=lambda c: (-c.score, c.id or ""))
