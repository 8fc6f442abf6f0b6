"""Graph expansion with paths: from every seed (memories, docs, decisions, named graph nodes), walk up to
``max_hops`` edges in either direction, over entity links (``mentions``), typed graph edges, causal links
between decisions and pack ``related`` edges alike, across every store the context reads.

A node reached at hop ``h`` from a seed of score ``s`` over edges of weights ``w_1..w_h`` scores
``s * w_1 * ... * w_h * HOP_DECAY ** h`` (the best path wins); it remembers that path (each step: from,
edge type, to, direction), which becomes its ``reasoning_path``. A node the principal may not read, or a
memory outside the asked conversation or user, is neither a source nor a way through; nor is an edge of a
namespace the principal may not read (``Readable.follows``), even between two records it reads. Each hop keeps
its best ``frontier_cap`` readable nodes, so a hub with thousands of neighbours costs what the cap allows in
walking on; the records the principal may not read are passed over before the cap is applied, so they never
push a readable one out of the frontier (the context would then depend on what it may not see).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..model import Node, utcnow
from .gather import Readable
from .sources import Source, clamp, display_name, node_source, source_id

HOP_DECAY = 0.5


def expand(seeds: Sequence[Source], stores: Sequence[Any], hops: int, readable: Readable, limit: int,
           frontier_cap: int | None = None) -> list[Source]:
    """The best ``limit`` nodes reached from the seeds (never a seed itself), best first, each with its path."""
    if hops <= 0 or not stores:
        return []
    cap = frontier_cap or max(50, limit * 5)
    now = utcnow()
    stable: dict[str, str] = {}
    titles: dict[str, str] = {}
    frontier: dict[str, tuple[float, str, list[tuple[str, str, str, str]]]] = {}
    for seed in seeds:
        if seed.node_id and seed.score > frontier.get(seed.node_id, (-1.0, "", []))[0]:
            frontier[seed.node_id] = (seed.score, seed.id, [])
            stable[seed.node_id] = seed.id
            titles[seed.node_id] = seed.title
    seen = set(frontier)
    reached: dict[str, tuple[float, int, str, list, Node, Any]] = {}
    for hop in range(1, hops + 1):
        ids = list(frontier)
        found: dict[str, tuple[float, str, list]] = {}
        for store in stores:
            for edge in [*store.edges(src=ids, valid_at=now), *store.edges(dst=ids, valid_at=now)]:
                if not readable.follows(store, edge):
                    continue
                for here, there, direction in ((edge.src, edge.dst, "out"), (edge.dst, edge.src, "in")):
                    if here not in frontier or there in seen:
                        continue
                    base, seed_id, steps = frontier[here]
                    score = base * clamp(edge.weight) * HOP_DECAY
                    if score > found.get(there, (-1.0, "", []))[0]:
                        found[there] = (score, seed_id, [*steps, (here, edge.type, there, direction)])
        seen.update(found)
        nodes = _best_admitted(sorted(found, key=lambda n: (-found[n][0], n)), cap, stores, readable, now)
        frontier = {nid: found[nid] for nid in nodes}
        for nid, (score, seed_id, steps) in frontier.items():
            node, store = nodes[nid]
            stable[nid] = source_id(node)
            titles[nid] = display_name(node)
            reached[nid] = (score, hop, seed_id, steps, node, store)
        if not frontier:
            break
    ranked = sorted(reached, key=lambda n: (-reached[n][0], n))[:limit]
    out = []
    for nid in ranked:
        score, hop, seed_id, steps, node, store = reached[nid]
        path = [{"from": stable.get(a, a), "from_title": titles.get(a, ""), "edge": t, "to": stable.get(b, b),
                 "to_title": titles.get(b, ""), "direction": d} for a, t, b, d in steps]
        out.append(node_source(store, node, score, "graph_expansion", readable.for_store(store), hops=hop,
                               seed=seed_id, steps=path,
                               signals={"graph": round(score, 6), "hops": float(hop)}))
    return out


def _best_admitted(ranked: list[str], cap: int, stores: Sequence[Any], readable: Readable,
                   now: str) -> dict[str, tuple[Node, Any]]:
    """The first ``cap`` of ``ranked`` that are admitted (``_admitted``), in rank order: read a cap's worth at a
    time, then four times more each round, until ``cap`` are in or ``ranked`` is done."""
    out: dict[str, tuple[Node, Any]] = {}
    start, size = 0, cap
    while start < len(ranked) and len(out) < cap:
        chunk = ranked[start: start + size]
        admitted = _admitted(chunk, stores, readable, now)
        for nid in chunk:
            if nid in admitted and len(out) < cap:
                out[nid] = admitted[nid]
        start, size = start + size, size * 4
    return out


def _admitted(ids: list[str], stores: Sequence[Any], readable: Readable, now: str) -> dict[str, tuple[Node, Any]]:
    """The nodes among ``ids`` that exist, are valid now and may be read, with the store holding each."""
    out: dict[str, tuple[Node, Any]] = {}
    for store in stores:
        missing = [i for i in ids if i not in out]
        if not missing:
            break
        for nid, node in store.get_nodes(missing).items():
            valid = (node.valid_from is None or node.valid_from <= now) and (node.valid_until is None
                                                                                 or node.valid_until > now)
            if valid and readable.check(store, node):
                out[nid] = (node, store)
    return out
