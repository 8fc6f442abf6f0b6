"""Community reports: the graph's Leiden communities, each with a summary (seed 003's global and drift retrieval).

A report covers one community of two or more nodes (graph/analytics.py, Leiden over the undirected graph the
principal sees): its members (store ids, most central first by PageRank), a title (its two most central names),
a summary and the summary's vector. Without a provider the summary is extractive: the members' own texts, most
central first, then the relationships inside the community ("Tony Fadell founded Nest Labs"). With a provider
(``llm_provider``: anything with ``complete(messages)``) the provider writes it from that same material. Reports
are cached until the graph changes, one set per summariser; vectors are computed in this process, never stored.

``rank_reports`` scores each report for a query: ``RELEVANCE(cosine + KEYWORD * words)``, absolute in [0, 1] like
every other score (engine/fusion.py), with its signals.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine import proximity
from ..engine.fusion import RELEVANCE
from ..seams import NamesModel, NamesProvider
from .node_search import KEYWORD
from .writes import node_text

MEMBERS_SHOWN = 8  # members whose text an extractive summary quotes
RELATIONS_SHOWN = 8
TEXT_CHARS = 160  # of each member's text
PROMPT = ("Summarise this community of a knowledge graph in two or three sentences: what its members are and how "
          "they relate. Use only the facts given.\n\n{material}")


@dataclass
class Report:
    id: str
    title: str
    members: list[str]  # store ids, most central first
    summary: str
    summarised_by: str  # "extractive" or the provider's model
    vector: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _material(graph: Any, members: list[str], nodes: dict[str, Any]) -> tuple[str, str]:
    """(members' texts, relationships inside the community) for a summary."""
    texts = [node_text(nodes[m])[:TEXT_CHARS] for m in members[:MEMBERS_SHOWN] if m in nodes]
    inside = set(members)
    relations = []
    for e in graph.store.edges(src=members):
        if e.dst in inside and len(relations) < RELATIONS_SHOWN:
            a, b = nodes.get(e.src), nodes.get(e.dst)
            if a is not None and b is not None:
                relations.append(f"{a.title} {e.type.replace('_', ' ')} {b.title}")
    return "; ".join(texts), "; ".join(relations)


def _summarise(llm_provider: Any, material: str) -> str:
    reply = llm_provider.complete([{"role": "user", "content": PROMPT.format(material=material)}])
    return str(reply.text).strip()


def community_reports(graph: Any, llm_provider: Any = None) -> list[Report]:
    """The graph's communities of two or more nodes as reports (cached until the graph changes)."""
    by = "extractive" if llm_provider is None else \
        f"{llm_provider.provider if isinstance(llm_provider, NamesProvider) else 'llm'}:" \
        f"{llm_provider.model if isinstance(llm_provider, NamesModel) else ''}"

    def build() -> list[Report]:
        found = graph.detect_communities(algorithm="leiden")
        rank = graph.pagerank()
        reports = []
        for k, group in enumerate(found["communities"]):
            if len(group) < 2:
                continue
            members = [graph.store_id(u) if graph.resolve(u) is None else graph.resolve(u) for u in group]
            order = sorted(range(len(group)), key=lambda i: (-rank.get(group[i], 0.0), group[i]))
            members = [members[i] for i in order]
            nodes = graph.store.get_nodes(members)
            texts, relations = _material(graph, members, nodes)
            material = texts + (f". Relationships: {relations}." if relations else ".")
            summary = material if llm_provider is None else _summarise(llm_provider, material)
            title = " / ".join(nodes[m].title for m in members[:2] if m in nodes)
            reports.append(Report(id=f"community:{k}", title=title, members=members, summary=summary,
                                  summarised_by=by))
        if reports:
            vectors = graph.workspace.embedder.embed([f"{r.title}. {r.summary}" for r in reports])
            for r, v in zip(reports, vectors):
                r.vector = np.asarray(v, dtype=np.float32)
        return reports

    return graph.cached(f"community-reports:{by}", build)


def rank_reports(graph: Any, query: str, reports: list[Report]) -> list[tuple[Report, float, dict[str, float]]]:
    """Each report with its score for ``query`` and the signals behind it, best first."""
    if not reports:
        return []
    qv = graph.workspace.embed_query(query)
    out = []
    for r in reports:
        cos = max(0.0, float(r.vector @ qv)) if r.vector is not None else 0.0
        words = proximity.term_share(query, f"{r.title} {r.summary}".replace("_", " "))
        out.append((r, float(RELEVANCE(cos + KEYWORD * words)), {"dense": round(cos, 6), "keyword": round(words, 6)}))
    out.sort(key=lambda t: (-t[1], t[0].id))
    return out
