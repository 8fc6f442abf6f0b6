"""Graph analytics with python-igraph: PageRank, centrality, communities.

Pure functions over the CSR adjacency, computed on demand; the caller caches them until the store's
change counter moves. Results are keyed by the CSR's node index; the graph maps them to user ids.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ValidationError
from .traversal import CSR

CENTRALITY = ("degree", "in_degree", "out_degree", "betweenness", "closeness", "pagerank")
COMMUNITY = ("louvain", "leiden")


def to_igraph(csr: CSR) -> Any:
    """A directed igraph.Graph with one vertex per CSR node and edge attribute ``weight``."""
    import igraph

    edges = np.column_stack((csr.sources(), csr.dst)).astype(np.int64) if csr.m else np.zeros((0, 2), np.int64)
    g = igraph.Graph(n=csr.n, edges=edges, directed=True)
    if csr.m:
        g.es["weight"] = csr.weight
    return g


def pagerank(csr: CSR, g: Any, damping: float = 0.85, weighted: bool = True) -> np.ndarray:
    if not 0.0 < damping < 1.0:
        raise ValidationError(f"damping must be between 0 and 1 (got {damping}); 0.85 is usual", damping=damping)
    if csr.n == 0:
        return np.zeros(0)
    weights = "weight" if weighted and csr.m else None
    return np.asarray(g.pagerank(damping=damping, weights=weights, directed=True), dtype=np.float64)


def centrality(csr: CSR, g: Any, measure: str) -> np.ndarray:
    """Normalised scores: degree by (n-1), betweenness by (n-1)(n-2), closeness harmonic-free igraph form."""
    n = csr.n
    if measure not in CENTRALITY:
        raise ValidationError(f"unknown centrality {measure!r}; use one of {', '.join(CENTRALITY)}", measure=measure)
    if n == 0:
        return np.zeros(0)
    scale = 1.0 / (n - 1) if n > 1 else 0.0
    if measure == "degree":
        return np.asarray(g.degree(mode="all"), dtype=np.float64) * scale
    if measure == "in_degree":
        return np.asarray(g.degree(mode="in"), dtype=np.float64) * scale
    if measure == "out_degree":
        return np.asarray(g.degree(mode="out"), dtype=np.float64) * scale
    if measure == "betweenness":
        raw = np.asarray(g.betweenness(directed=True), dtype=np.float64)
        return raw / ((n - 1) * (n - 2)) if n > 2 else raw * 0.0
    if measure == "closeness":
        # distances to a node (incoming), as networkx defines closeness for directed graphs,
        # scaled by the reachable fraction (Wasserman-Faust) so unreachable parts do not inflate it
        raw = g.closeness(mode="in", normalized=True)
        reach = np.asarray(g.neighborhood_size(order=n, mode="in"), dtype=np.float64) - 1
        values = np.nan_to_num(np.asarray(raw, dtype=np.float64))
        return values * (reach / (n - 1)) if n > 1 else values * 0.0
    return pagerank(csr, g)


def communities(csr: CSR, g: Any, algorithm: str = "louvain", resolution: float = 1.0,
                seed: int = 0) -> tuple[list[int], float]:
    """(membership per node, modularity) on the undirected, weight-summed graph."""
    import random

    if algorithm not in COMMUNITY:
        raise ValidationError(f"unknown community algorithm {algorithm!r}; use louvain or leiden",
                              algorithm=algorithm)
    if csr.n == 0:
        return [], 0.0
    und = g.as_undirected(mode="collapse", combine_edges="sum") if csr.m else g.as_undirected()
    weights = "weight" if csr.m else None
    state = random.getstate()
    random.seed(seed)
    try:
        import igraph

        igraph.set_random_number_generator(random)
        if algorithm == "louvain":
            clusters = und.community_multilevel(weights=weights, resolution=resolution)
        else:
            clusters = und.community_leiden(objective_function="modularity", weights=weights,
                                            resolution=resolution, n_iterations=-1)
    finally:
        random.setstate(state)
    membership = list(clusters.membership)
    modularity = float(und.modularity(membership, weights=weights)) if csr.m else 0.0
    return membership, modularity
