"""``CausalChainAnalyzer``: follow explicit causal edges (``caused`` / ``informed``) between decisions.

Only edges someone recorded count; shared entities never imply a cause. Each decision appears
once, at its shortest causal distance from the start (breadth-first, one store query per level).
The walk goes only through decisions the principal sees (and edges of namespaces it may read).
"""
from __future__ import annotations

from typing import Sequence

from .. import access
from ..errors import NotFoundError, ValidationError
from .common import CAUSAL_TYPES, DECISION, Bound, Target, decision_from_node
from .models import Decision

DIRECTIONS = ("upstream", "downstream")


class CausalChainAnalyzer(Bound):
    def __init__(self, graph_store: Target | None = None, namespace: str | None = None, graph: Target | None = None,
                 relationship_types: Sequence[str] = CAUSAL_TYPES, principal: str | None = None) -> None:
        self._bind(graph_store if graph_store is not None else graph, namespace, "CausalChainAnalyzer", principal)
        self.types = list(relationship_types)

    def _walk(self, start: str, direction: str, max_depth: int) -> dict[str, tuple[int, str, str]]:
        """{decision id: (distance, previous id, relationship type)} for everything reachable."""
        if direction not in DIRECTIONS:
            raise ValidationError(f"direction must be 'upstream' or 'downstream', got {direction!r}",
                                  direction=direction)
        if max_depth is not None and max_depth < 0:
            raise ValidationError(f"max_depth must be >= 0, got {max_depth}", max_depth=max_depth)
        seen: dict[str, tuple[int, str, str]] = {}
        frontier = [start]
        depth = 0
        sight = access.sight(self.ws, self.principal)
        while frontier and (max_depth is None or depth < max_depth):
            depth += 1
            if direction == "downstream":
                edges = self.store.edges(src=frontier, type=self.types)
                pairs = [(e.src, e.dst, e.type) for e in edges]
            else:
                edges = self.store.edges(dst=frontier, type=self.types)
                pairs = [(e.dst, e.src, e.type) for e in edges]
            if sight is not None:  # never into (or through) what the principal does not see
                shown = self.seen(self.store.get_nodes({there for _, there, _ in pairs}))
                pairs = [p for p, e in zip(pairs, edges) if p[1] in shown and sight.namespace(e.namespace)]
            nxt: list[str] = []
            for here, there, rel in pairs:
                if there != start and there not in seen:
                    seen[there] = (depth, here, rel)
                    nxt.append(there)
            frontier = nxt
        return seen

    def get_causal_chain(self, decision_id: str, direction: str = "upstream", max_depth: int | None = 10
                         ) -> list[Decision]:
        """Causes (``upstream``) or effects (``downstream``) of a decision, nearest first.

        Each returned decision's ``metadata`` carries ``causal_distance``, ``direction``,
        ``relationship`` (type of the edge that reached it) and ``path`` (ids from the start).
        """
        self.check("read", "decision.chain", decision_id)
        start = self.visible_node(decision_id)
        if start is None or start.kind != DECISION:
            raise NotFoundError(f"no decision {decision_id!r}", decision_id=decision_id)
        seen = self._walk(decision_id, direction, max_depth)
        nodes = self.store.get_nodes(list(seen))
        out: list[Decision] = []
        for did, (dist, _prev, rel) in sorted(seen.items(), key=lambda kv: kv[1][0]):
            node = nodes.get(did)
            if node is None or node.kind != DECISION:
                continue
            d = decision_from_node(node)
            path = self._path(seen, decision_id, did)
            d.metadata = {**d.metadata, "causal_distance": dist, "direction": direction, "relationship": rel,
                          "path": path, "relationships": [seen[x][2] for x in path[1:]]}
            out.append(d)
        return out

    @staticmethod
    def _path(seen: dict[str, tuple[int, str, str]], start: str, end: str) -> list[str]:
        path = [end]
        while path[-1] != start:
            path.append(seen[path[-1]][1])
        return path[::-1]

    def path(self, src: str, dst: str, max_depth: int | None = None) -> list[str] | None:
        """The shortest downstream causal path from ``src`` to ``dst`` (ids), or None."""
        if src == dst:
            return [src]
        seen = self._walk(src, "downstream", max_depth)
        return self._path(seen, src, dst) if dst in seen else None

    def get_root_causes(self, decision_id: str, max_depth: int | None = None) -> list[Decision]:
        """Upstream decisions that have no recorded cause of their own."""
        chain = self.get_causal_chain(decision_id, "upstream", max_depth)
        ids = [d.decision_id for d in chain]
        caused = {e.dst for e in self.store.edges(dst=ids, type=self.types)} if ids else set()
        return [d for d in chain if d.decision_id not in caused]
