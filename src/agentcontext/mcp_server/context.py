"""``get_context``: the cited context ``query_with_reasoning`` would send a model, for an agent that reasons itself.

It reads the workspace's default memory (``memory:default``), the workspace graph (``graph:default``, with the
decisions recorded there) and every knowledge pack, each as far as the principal may read it: a store the
principal may not read is left out and named in ``skipped``; docs and graph nodes it may not read never appear,
not even as a step of a path. The bundle is ``ReasoningService.context_for``'s, as a dict; the CLI's
``agentcontext context`` prints the same (``agentcontext.workspace_reasoning`` builds the service for both).
"""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field

from ..workspace_reasoning import workspace_reasoning
from .registry import CallContext, StrictArgs, ToolSpec, register_tools
from .schemas import BOOL, INT, JSON_OBJECT, NUM, STR, array, nullable, obj

Kind = Literal["memories", "docs", "decisions", "graph"]


class ContextArgs(StrictArgs):
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


def _context(ctx: CallContext, a: ContextArgs) -> dict[str, Any]:
    service = workspace_reasoning(ctx.ws, ctx.principal)
    bundle = service.context_for(a.query, max_results=a.max_results, max_hops=a.max_hops,
                                 budget_tokens=a.budget_tokens, include=a.include, conversation_id=a.conversation_id,
                                 user_id=a.user_id, min_score=a.min_score)
    return bundle.to_dict()


STEP = obj({"from": STR, "from_title": STR, "edge": STR, "to": STR, "to_title": STR, "direction": STR})
SOURCE = obj({"label": INT, "id": STR, "kind": STR, "title": STR, "score": NUM, "origin": STR, "hops": INT,
              "tokens": INT, "truncated": BOOL, "signals": {"type": "object", "additionalProperties": NUM},
              "metadata": JSON_OBJECT, "content": STR})
PATH = obj({"label": INT, "source": STR, "origin": STR, "hops": INT, "steps": array(STEP)},
           {"seed": STR, "seed_label": nullable(INT)})
OUTPUT = obj({"query": STR, "num_sources": INT, "sources": array(SOURCE), "reasoning_path": array(PATH),
              "tokens": INT, "budget_tokens": nullable(INT),
              "dropped": array(obj({"id": STR, "kind": STR, "score": NUM, "tokens": INT, "why": STR})),
              "skipped": {"type": "object", "additionalProperties": STR,
                          "description": "Each store left out (memories, docs, decisions, graph) and why."},
              "instructions": STR, "text": STR})


def context_tools() -> list[ToolSpec]:
    return [ToolSpec(
        "get_context",
        "Gather everything stored that bears on a question, ready to answer from: the best memories, knowledge "
        "docs, decisions and graph entities, plus what entity links and typed edges connect them to (max_hops), "
        "numbered as [1], [2]... each with a stable id (memory id, pack#selector, decision id), its score, and "
        "the path that brought it in, within a token budget. `text` is the context to read; answer from it and "
        "cite sources by number, following `instructions`. This is exactly what query_with_reasoning sends a model.",
        ContextArgs, _context, OUTPUT, title="Get a cited context")]


register_tools("context", context_tools)
