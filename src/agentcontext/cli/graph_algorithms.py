"""``agentcontext graph predict-links | paths | similar | link-mentions``: the graph algorithms (issue 11 s4).

Each command is one ``ContextGraph`` call acting as the CLI's principal, so it is checked as the Python call is:
the reads need ``read`` on ``graph:<name>`` (a node the principal does not see answers like a missing one, and a
graph it may not read is denied whatever the node), ``link-mentions`` needs ``write`` on the graph and on every
memory store it links. ``graph.py`` mounts these functions on ``graph_app``.
"""
from __future__ import annotations

from typing import Any, Optional

import click

from .build import Argument, Option
from .common import GRAPH_OPTION, JSON_OPTION, emit, open_graph, out, progress_bar, table

METHOD_HELP = "adamic_adar, jaccard, resource_allocation or preferential_attachment."
DIRECTION_HELP = "out (follow edges forward), in (backward) or both."


def similar(ctx: click.Context, node_id: str = Argument(..., metavar="NODE_ID"),
            top: int = Option(10, "--top", min=1, max=10_000, help="At most this many nodes, most alike first."),
            dimensions: int = Option(32, "--dimensions", min=1, max=1024, help="Node2Vec vector size."),
            walk_length: int = Option(20, "--walk-length", min=2, max=1000, help="Nodes per random walk."),
            num_walks: int = Option(10, "--num-walks", min=1, max=1000, help="Walks started from each node."),
            p: float = Option(1.0, "--p", min=1e-6, help="Return parameter: higher, fewer steps back."),
            q: float = Option(1.0, "--q", min=1e-6, help="In-out parameter: below 1 walks outward (DFS-like), "
                                    "above 1 stays near (BFS-like)."),
            seed: int = Option(0, "--seed", min=0, help="Random seed (the same seed, the same vectors)."),
            graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """The nodes structurally most like NODE_ID: cosine of Node2Vec embeddings (random walks + skip-gram)."""
    graph = open_graph(ctx, graph_name)
    found = graph.structurally_similar(node_id, top_k=top, dimensions=dimensions, walk_length=walk_length,
                                       num_walks=num_walks, p=p, q=q, seed=seed)
    emit({"node_id": node_id, "similar": found}, json_out,
         lambda r: table(("id", "similarity"), [{**x, "similarity": f"{x['similarity']:.4f}"} for x in r["similar"]])
         if r["similar"] else out.print(f"{node_id} has no neighbours to compare by", markup=False))


def link_mentions(ctx: click.Context,
                  namespace: Optional[list[str]] = Option(None, "--namespace", help="Link the records of this "
                                                                "namespace (memory:default, lib:handbook, ...); "
                                                                "repeat. Default: every one the graph reads."),
                  kind: Optional[list[str]] = Option(None, "--kind", help="Only records of this kind "
                                                           "(memory, doc, decision, ...); repeat."),
                  graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Link memories, docs and other records already stored to the known entities their text names (mentions
    edges; a second run adds none), with a progress bar."""
    graph = open_graph(ctx, graph_name)
    with progress_bar(not json_out) as report:
        found = graph.link_mentions(namespace, kind, progress=lambda done, total: report("linking", done, total))

    def human(r: dict[str, Any]) -> None:
        out.print(f"{r['scanned']} records read, {r['linked']} links made", markup=False)
        if r.get("skipped"):
            out.print(f"left out (no write grant): {', '.join(r['skipped'])}", markup=False)

    emit(found, json_out, human)
