"""The read-only graph algorithm operations (issue 11 s4): ``predict_links`` and ``find_paths``, declared once for
every door (the MCP tools, ``agentcontext graph predict-links`` / ``graph paths``).

Each is one ``ContextGraph`` call on the workspace graph (``graph:default``, or ``graph:<name>`` given ``graph``)
acting as the caller's principal. Access is the graph's: ``read`` on the graph's namespace; a node the principal
does not see answers like a missing one (NotFoundError), and a graph it may not read is denied whatever the node.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional

from pydantic import Field
from typing_extensions import TypedDict

from .base import Args, Caller, Cli, Operation, declare

if TYPE_CHECKING:  # the graph loads when an operation runs
    from ..graph.context_graph import ContextGraph

NodeId = Annotated[str, Field(min_length=1, max_length=1000)]
RelType = Annotated[str, Field(min_length=1, max_length=300)]
GRAPH = Field(None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.-]+$",
              description="A named graph (graph:<name>); default: the workspace graph, graph:default.")
Method = Literal["adamic_adar", "jaccard", "resource_allocation", "preferential_attachment"]  # engine.linkpred.METHODS
GRAPH_FLAG = ("--graph", "-g")
GRAPH_HELP = ("Graph name (access name graph:NAME); default: the workspace graph, graph:default, that the MCP "
              "decision tools use.")


def open_graph(ctx: Caller, name: str | None) -> ContextGraph:
    from ..graph.context_graph import workspace_graph

    return workspace_graph(ctx.ws, ctx.principal, name=name)


class PredictArgs(Args):
    node_id: Optional[NodeId] = Field(None, description="Predict links of this node; omit for the best pairs "
                                      "over the whole graph.")
    method: Method = Field("adamic_adar", description="The neighbourhood index: adamic_adar, jaccard, "
                           "resource_allocation or preferential_attachment.")
    top_k: int = Field(10, ge=1, le=1000, description="At most this many links, best first.")
    relationship_types: Optional[list[RelType]] = Field(None, max_length=100, description="Count only edges of "
                                                        "these types (default: all).")
    node_type: Optional[str] = Field(None, min_length=1, max_length=300, description="Only links to nodes of "
                                     "this type.")
    graph: Optional[str] = GRAPH


class PathArgs(Args):
    source: NodeId = Field(description="The node the paths start from.")
    target: NodeId = Field(description="The node the paths end at.")
    k: int = Field(3, ge=1, le=100, description="How many paths (1 = the shortest only).")
    weighted: bool = Field(False, description="Length is the summed edge weights (default: the number of edges).")
    max_hops: Optional[int] = Field(None, ge=0, le=1000, description="No path longer than this many edges.")
    direction: Literal["out", "in", "both"] = Field("out", description="Follow edges forward (out), backward (in) "
                                                    "or either way (both).")
    relationship_types: Optional[list[RelType]] = Field(None, max_length=100, description="Only edges of these "
                                                        "types (default: all).")
    graph: Optional[str] = GRAPH


def _predict(ctx: Caller, a: PredictArgs) -> dict[str, Any]:
    links = open_graph(ctx, a.graph).predict_links(a.node_id, top_k=a.top_k, method=a.method,
                                                   relationship_types=a.relationship_types, node_type=a.node_type)
    return {"node_id": a.node_id, "method": a.method, "links": links}


def _paths(ctx: Caller, a: PathArgs) -> dict[str, Any]:
    found = open_graph(ctx, a.graph).k_shortest_paths(a.source, a.target, k=a.k, weighted=a.weighted,
                                                      max_hops=a.max_hops, direction=a.direction,
                                                      relationship_types=a.relationship_types)
    return {"source": a.source, "target": a.target, "paths": found}


class Link(TypedDict):
    source: str
    target: str
    score: float
    method: str


class PredictOut(TypedDict):
    node_id: Optional[str]
    method: str
    links: list[Link]


class FoundPath(TypedDict):
    path: list[str]
    length: float
    hops: int


class PathsOut(TypedDict):
    source: str
    target: str
    paths: list[FoundPath]


NO_WEB = "the console's graph explorer shows a node's neighbourhood; it has no form for this algorithm yet"

PREDICT = Operation(
    "predict_links", "Predict missing graph links",
    "Suggest links the knowledge graph is probably missing: pairs of nodes that share neighbours (Adamic-Adar, "
    "Jaccard, resource allocation) or are both well connected (preferential attachment), best first with their "
    "score. Give node_id for the links of one entity, or omit it for the whole graph. Use it to propose "
    "relationships to record, not as facts.",
    PredictArgs, PredictOut, _predict,
    cli=Cli(("graph", "predict-links"), args=("node_id",), metavars={"node_id": "[NODE_ID]"},
            flags={"top_k": ("--top",), "relationship_types": ("--rel",), "graph": GRAPH_FLAG},
            help={"node_id": "Predict links of this node (default: the best pairs over the whole graph).",
                  "method": "adamic_adar, jaccard, resource_allocation or preferential_attachment.",
                  "top_k": "At most this many links, best first.",
                  "relationship_types": "Count only edges of this relationship type; repeat.",
                  "graph": GRAPH_HELP}),
    skips={"web": NO_WEB})
PATHS = Operation(
    "find_paths", "Find paths between graph nodes",
    "How two nodes of the knowledge graph are connected: up to k loopless paths from source to target, shortest "
    "first (fewest edges, or least total weight with weighted), each as its list of node ids with its length and "
    "hop count. An empty list means no path within max_hops.",
    PathArgs, PathsOut, _paths,
    cli=Cli(("graph", "paths"), args=("source", "target"), metavars={"source": "SOURCE", "target": "TARGET"},
            flags={"relationship_types": ("--rel",), "graph": GRAPH_FLAG},
            help={"k": "How many paths (1: the shortest only).",
                  "weighted": "Length = the summed edge weights (default: the number of edges).",
                  "direction": "out (follow edges forward), in (backward) or both.",
                  "relationship_types": "Only this relationship type; repeat.", "graph": GRAPH_HELP}),
    skips={"web": NO_WEB})

MCP_TOOLS = [PREDICT, PATHS]
declare(*MCP_TOOLS)
