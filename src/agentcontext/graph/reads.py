"""The read path of a ``ContextGraph``: nodes, versions, pages, edges, full-text hits and counts, as its principal
sees them. ``ContextGraph``'s reading methods check access and hand over to these functions."""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..model import to_utc_iso, utcnow
from .protocol import GraphLike
from .records import edge_dict, node_dict

DEEP_PAGE = 1000  # from this offset on, find_nodes pages through a cached id list


def live_ids(graph: GraphLike) -> set[str]:
    """Ids of the live nodes of the graph's scope (cached until the store changes)."""
    return graph.cached("ids", lambda: set(graph.store.node_ids(graph.scope)))


def seen_ids(graph: GraphLike, as_of: Any = None) -> set[str]:
    """Ids of the nodes in this graph's world (now, or as it stood ``as_of``)."""
    if as_of is None:
        return live_ids(graph)
    return {n.id for n in graph.store.find_nodes(namespace=graph.scope, as_of=to_utc_iso(as_of), order="none",
                                                 with_content=False)}


def find_node(graph: GraphLike, node_id: str, as_of: Any = None) -> dict[str, Any] | None:
    if as_of is None:
        sid = graph.resolve(node_id)
        node = graph.store.get_node(sid) if sid else None
    else:
        when = to_utc_iso(as_of)
        node = graph.store.get_node(graph.store_id(node_id), as_of=when) or graph.store.get_node(node_id, as_of=when)
    return node_dict(node, graph.user_id) if node and graph.sees(node) else None


def node_history(graph: GraphLike, node_id: str) -> list[dict[str, Any]]:
    versions = graph.store.node_versions(graph.store_id(node_id)) or graph.store.node_versions(node_id)
    return [node_dict(n, graph.user_id) for n in versions if graph.sees(n)]


def find_nodes(graph: GraphLike, node_type: str | None = None, skip: int = 0, limit: int | None = None,
               as_of: Any = None) -> list[dict[str, Any]]:
    store = graph.store
    if skip >= DEEP_PAGE and limit is not None and as_of is None:
        # deep pages: OFFSET would walk every skipped row; slice a cached, ordered id list instead
        order = graph.cached(f"ids-by-type:{node_type}", lambda: [
            n.id for n in store.find_nodes(namespace=graph.scope, kind=node_type, with_content=False)])
        page = order[skip: skip + limit]
        found = store.get_nodes(page)
        return [node_dict(found[i], graph.user_id) for i in page if i in found]
    nodes = store.find_nodes(namespace=graph.scope, kind=node_type, offset=skip, limit=limit, as_of=to_utc_iso(as_of))
    return [node_dict(n, graph.user_id) for n in nodes]


def find_active_nodes(graph: GraphLike, node_type: str | None = None, at_time: Any = None, skip: int = 0,
                      limit: int | None = None) -> list[dict[str, Any]]:
    when = to_utc_iso(at_time) or utcnow()
    nodes = graph.store.find_nodes(namespace=graph.scope, kind=node_type, valid_at=when, offset=skip, limit=limit)
    return [node_dict(n, graph.user_id) for n in nodes]


def find_edges(graph: GraphLike, edge_type: str | None = None, skip: int = 0, limit: int | None = None,
               source_id: str | None = None, target_id: str | None = None, as_of: Any = None,
               valid_at: Any = None) -> list[dict[str, Any]]:
    src = graph.resolve(source_id) or graph.store_id(source_id) if source_id is not None else None
    dst = graph.resolve(target_id) or graph.store_id(target_id) if target_id is not None else None
    when, valid = to_utc_iso(as_of), to_utc_iso(valid_at)
    if not graph.restricted:
        edges = graph.store.edges(src=src, dst=dst, type=edge_type, namespace=graph.scope, as_of=when, valid_at=valid,
                                  offset=skip, limit=limit)
    else:  # only edges between nodes the principal sees (paged after that filter)
        seen = seen_ids(graph, as_of)
        edges = [e for e in graph.store.edges(src=src, dst=dst, type=edge_type, namespace=graph.scope, as_of=when,
                                              valid_at=valid)
                 if e.src in seen and e.dst in seen][skip: None if limit is None else skip + limit]
    return [edge_dict(e, graph.user_id) for e in edges]


def query(graph: GraphLike, text: str, skip: int = 0, limit: int | None = 10) -> list[dict[str, Any]]:
    want = skip + (limit if limit is not None else 1000)
    hits = graph.store.text_search(text, namespace=graph.scope, limit=want)[skip:]
    nodes = graph.store.get_nodes([h for h, _ in hits])
    out = []
    for sid, score in hits:
        if sid in nodes:
            d = node_dict(nodes[sid], graph.user_id)
            out.append({"id": d["id"], "node": d, "score": score, "content": d["content"]})
    return out


def stats(graph: GraphLike) -> dict[str, Any]:
    store = graph.store
    nodes = store.count_nodes(graph.scope)
    if not graph.restricted:
        edges = store.count_edges(graph.scope)
        edge_types = store.count_edges_by_type(graph.scope)
    else:  # the edges a principal sees are those of its CSR (between nodes it sees)
        csr = graph.csr()
        edges, edge_types = csr.m, dict(sorted(Counter(csr.types[int(t)] for t in csr.etype).items()))
    return {"node_count": nodes, "edge_count": edges, "node_types": store.count_by_kind(graph.scope),
            "edge_types": edge_types, "density": edges / (nodes * (nodes - 1)) if nodes > 1 else 0.0}
