"""``agentcontext graph ...``: the workspace knowledge graph (ContextGraph): nodes, edges, neighbours, paths,
the algorithms of graph_algorithms.py (link prediction, k shortest paths, Node2Vec neighbours, text linking),
analytics.

The graph checks and audits every call for the acting principal: adding nodes and edges needs ``write`` on
``graph:<name>``; reading needs ``read``, and shows only what the principal sees.
"""
from __future__ import annotations

from typing import Any, Optional

import click

from .build import Argument, Group, Option
from ..errors import NotFoundError
from . import graph_algorithms
from .common import GRAPH_OPTION, JSON_OPTION, emit, open_graph, out, parse_pairs, table

graph_app = Group(help="The knowledge graph: add nodes and edges, walk neighbours and paths, analytics.",
                        no_args_is_help=True)
node_app = Group(help="Add and show graph nodes.", no_args_is_help=True)
edge_app = Group(help="Add graph edges.", no_args_is_help=True)
graph_app.add_group(node_app, "node")
graph_app.add_group(edge_app, "edge")

DIRECTION_HELP = "out (follow edges forward), in (backward) or both."


@node_app.command("add")
def node_add(ctx: click.Context, node_id: str = Argument(..., metavar="NODE_ID"),
             node_type: str = Option("entity", "--type", help="The node's type (kind)."),
             content: Optional[str] = Option(None, "--content", help="Its text (default: the id)."),
             prop: Optional[list[str]] = Option(None, "--prop", help="A property KEY=VALUE (VALUE read as "
                                                      "JSON when it parses); repeat."),
             tag: Optional[list[str]] = Option(None, "--tag", help="A tag; repeat."),
             valid_from: Optional[str] = Option(None, "--valid-from", help="Valid in the world from (ISO)."),
             valid_until: Optional[str] = Option(None, "--valid-until", help="Valid until (ISO)."),
             graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Add a node, or update it (an update appends a version)."""
    graph = open_graph(ctx, graph_name)
    graph.add_node(node_id, node_type, content=content, properties=parse_pairs(prop, "--prop"),
                   valid_from=valid_from, valid_until=valid_until, tags=tag)
    emit(graph.find_node(node_id), json_out,
         lambda n: out.print(f"{n['id']} ({n['type']}) is at version {n['version']}", markup=False))


@node_app.command("show")
def node_show(ctx: click.Context, node_id: str = Argument(..., metavar="NODE_ID"),
              as_of: Optional[str] = Option(None, "--as-of", help="The node as it stood then (ISO time)."),
              graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """One node: type, content, properties, validity, version."""
    graph = open_graph(ctx, graph_name)
    node = graph.find_node(node_id, as_of=as_of)
    if node is None:
        raise NotFoundError(f"node {node_id!r} is not in graph {graph.name!r}; add it with "
                            "`agentcontext graph node add`", node_id=node_id, graph=graph.name)
    emit(node, json_out, lambda n: out.print(f"{n['id']} ({n['type']}, v{n['version']}): {n['content']}\n"
                                             f"properties: {n['properties']}", markup=False))


@edge_app.command("add")
def edge_add(ctx: click.Context, source: str = Argument(..., metavar="SOURCE"),
             target: str = Argument(..., metavar="TARGET"),
             edge_type: str = Option("related_to", "--type", help="The relationship type."),
             weight: float = Option(1.0, "--weight", help="Edge weight."),
             prop: Optional[list[str]] = Option(None, "--prop", help="A property KEY=VALUE (VALUE read as "
                                                      "JSON when it parses); repeat."),
             valid_from: Optional[str] = Option(None, "--valid-from", help="Valid in the world from (ISO)."),
             valid_until: Optional[str] = Option(None, "--valid-until", help="Valid until (ISO)."),
             graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Add a directed edge SOURCE -> TARGET (missing endpoints are created; a repeat updates it)."""
    graph = open_graph(ctx, graph_name)
    graph.add_edge(source, target, edge_type, weight, properties=parse_pairs(prop, "--prop"),
                   valid_from=valid_from, valid_until=valid_until)
    edges = graph.find_edges(edge_type=edge_type, source_id=source, target_id=target)
    emit(edges[0], json_out, lambda e: out.print(f"{e['source']} -{e['type']}-> {e['target']}", markup=False))


@graph_app.command("neighbors")
def neighbors(ctx: click.Context, node_id: str = Argument(..., metavar="NODE_ID"),
              hops: int = Option(1, "--hops", min=0, max=100, help="How many edges away."),
              rel: Optional[list[str]] = Option(None, "--rel", help="Only this relationship type; repeat."),
              direction: str = Option("out", "--direction", help=DIRECTION_HELP),
              min_weight: Optional[float] = Option(None, "--min-weight", help="Skip lighter edges."),
              limit: Optional[int] = Option(None, "--limit", min=1, help="At most this many, nearest first."),
              graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Neighbours of a node up to --hops away, nearest first, with hop, relationship and path."""
    graph = open_graph(ctx, graph_name)
    rows = graph.get_neighbors(node_id, hops=hops, relationship_types=rel, min_weight=min_weight, limit=limit,
                               include_distance_metadata=True, direction=direction)
    emit({"node_id": node_id, "neighbors": rows}, json_out, lambda r: table(
        ("hop", "id", "type", "relationship", "weight"), r["neighbors"]) if r["neighbors"]
        else out.print("no neighbours"))


@graph_app.command("path")
def path(ctx: click.Context, source: str = Argument(..., metavar="SOURCE"),
         target: str = Argument(..., metavar="TARGET"),
         max_hops: Optional[int] = Option(None, "--max-hops", min=0, help="Give up beyond this many edges."),
         direction: str = Option("out", "--direction", help=DIRECTION_HELP),
         graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """The fewest-edges path from SOURCE to TARGET (path is null when there is none)."""
    graph = open_graph(ctx, graph_name)
    found = graph.shortest_path(source, target, max_hops=max_hops, direction=direction)
    emit({"source": source, "target": target, "path": found}, json_out,
         lambda r: out.print(" -> ".join(r["path"]) if r["path"] else f"no path from {source} to {target}",
                             markup=False))


@graph_app.command("analytics")
def analytics(ctx: click.Context,
              measure: str = Option("pagerank", "--measure", help="pagerank, degree, in_degree, "
                                          "out_degree, betweenness, closeness, or communities (Louvain)."),
              top: int = Option(10, "--top", min=1, help="The highest-scoring N nodes."),
              graph_name: Optional[str] = GRAPH_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Node importance (PageRank or a centrality measure) or communities, with the graph's counts."""
    graph = open_graph(ctx, graph_name)
    data: dict[str, Any] = {"stats": graph.stats(), "measure": measure}
    if measure == "communities":
        found = graph.detect_communities()
        data["communities"] = {"count": found["count"], "modularity": found["modularity"],
                               "largest": found["communities"][:top]}
    else:
        scores = graph.centrality(measure, top_k=top)  # ValidationError for an unknown measure
        data["top"] = [{"node_id": k, "score": v} for k, v in scores.items()]

    def human(r: dict[str, Any]) -> None:
        s = r["stats"]
        out.print(f"{s['node_count']} nodes, {s['edge_count']} edges, density {s['density']:.4f}")
        if "top" in r:
            table(("node_id", "score"), [{**x, "score": f"{x['score']:.4f}"} for x in r["top"]])
        else:
            c = r["communities"]
            out.print(f"{c['count']} communities, modularity {c['modularity']:.3f}")
            for i, group in enumerate(c["largest"]):
                out.print(f"  {i}: {len(group)} nodes: {', '.join(group[:8])}" + (" ..." if len(group) > 8 else ""),
                          markup=False)

    emit(data, json_out, human)


graph_app.command("similar")(graph_algorithms.similar)
graph_app.command("link-mentions")(graph_algorithms.link_mentions)
