"""``get_context``: the cited context ``query_with_reasoning`` would send a model, for an agent that reasons itself,
declared once for every door (the MCP tool, ``agentcontext context QUERY``, the console's Ask page).

It reads the workspace's default memory (``memory:default``), the workspace graph (``graph:default``, with the
decisions recorded there) and every knowledge pack, each as far as the principal may read it: a store the
principal may not read is left out and named in ``skipped``; docs and graph nodes it may not read never appear,
not even as a step of a path. The bundle is ``ReasoningService.context_for``'s, as a dict
(``agentcontext.workspace_reasoning`` builds the service).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import Field
from typing_extensions import NotRequired, TypedDict

from .base import Args, Caller, Cli, Operation, declare
from .types import ConfigEcho, JsonObject

Kind = Literal["memories", "docs", "decisions", "graph"]
KINDS = ("memories", "docs", "decisions", "graph")  # model.CONTEXT_KINDS, without importing the model here


class ContextArgs(Args):
    query: str = Field(min_length=1, max_length=10_000, description="The question or task, in words.")
    max_results: int = Field(10, ge=1, le=100, description="At most this many sources, best first.")
    max_hops: int = Field(2, ge=0, le=5, description="Follow entity links and typed edges this many hops from "
                          "what the searches found (0 = no expansion).")
    budget_tokens: Optional[int] = Field(4000, ge=1, le=1_000_000, description="Token budget for the whole "
                                         "context text (cl100k tokens); lower-ranked sources are cut or left out.")
    include: Optional[list[Kind]] = Field(None, min_length=1, max_length=4, description="Which searches seed the "
                                          "context (default all: memories, docs, decisions, graph).")
    conversation_id: Optional[str] = Field(None, min_length=1, max_length=300,
                                           description="Only memories of this conversation.")
    user_id: Optional[str] = Field(None, min_length=1, max_length=300, description="Only memories of this user.")
    min_score: float = Field(0.0, ge=0.0, le=1.0, description="Drop sources scoring below this (0..1).")


def _context(ctx: Caller, a: ContextArgs) -> dict[str, Any]:
    from ..workspace_reasoning import workspace_reasoning

    service = workspace_reasoning(ctx.ws, ctx.principal)
    bundle = service.context_for(a.query, max_results=a.max_results, max_hops=a.max_hops,
                                 budget_tokens=a.budget_tokens, include=a.include, conversation_id=a.conversation_id,
                                 user_id=a.user_id, min_score=a.min_score)
    return bundle.to_dict()


Step = TypedDict("Step", {"from": str, "from_title": str, "edge": str, "to": str, "to_title": str, "direction": str})


class Source(TypedDict):
    label: int
    id: str
    kind: str
    title: str
    score: float
    origin: str
    hops: int
    tokens: int
    truncated: bool
    signals: dict[str, float]
    metadata: JsonObject
    content: str


class Path(TypedDict):
    label: int
    source: str
    origin: str
    hops: int
    steps: list[Step]
    seed: NotRequired[str]
    seed_label: NotRequired[Optional[int]]


class Dropped(TypedDict):
    id: str
    kind: str
    score: float
    tokens: int
    why: str


class ContextOut(TypedDict):
    query: str
    num_sources: int
    sources: list[Source]
    reasoning_path: list[Path]
    tokens: int
    budget_tokens: Optional[int]
    dropped: list[Dropped]
    skipped: Annotated[dict[str, str], Field(description="Each store left out (memories, docs, decisions, graph) "
                                                         "and why.")]
    instructions: str
    text: str
    config: ConfigEcho  # the retrieval configuration that ran (engine/retrieval_config.py)


CONTEXT = Operation(
    "get_context", "Get a cited context",
    "Gather everything stored that bears on a question, ready to answer from: the best memories, knowledge docs, "
    "decisions and graph entities, plus what entity links and typed edges connect them to (max_hops), numbered as "
    "[1], [2]... each with a stable id (memory id, pack#selector, decision id), its score, and the path that "
    "brought it in, within a token budget. `text` is the context to read; answer from it and cite sources by "
    "number, following `instructions`. This is exactly what query_with_reasoning sends a model.",
    ContextArgs, ContextOut, _context,
    cli=Cli(("context",), args=("query",),
            flags={"max_results": ("--max-results", "-k"), "max_hops": ("--hops",), "budget_tokens": ("--budget",),
                   "conversation_id": ("--conversation", "-c"), "user_id": ("--user", "-u")},
            help={"max_hops": "Follow entity links and typed edges this many hops (0 = none).",
                  "budget_tokens": "Token budget for the whole context text.",
                  "include": "Seed only from these (repeatable): " + ", ".join(KINDS) + "."}))

MCP_TOOLS = [CONTEXT]
declare(*MCP_TOOLS)
