"""``agentcontext context QUERY``: the cited context query_with_reasoning would send a model (the MCP tool
``get_context``), over the workspace's default memory, its graph and decisions, and its packs."""
from __future__ import annotations

from typing import Any, Optional

import typer

from ..model import CONTEXT_KINDS as KINDS
from .common import JSON_OPTION, emit, open_workspace, out, principal


def context(ctx: typer.Context, query: str = typer.Argument(..., help="The question or task, in words."),
            max_results: int = typer.Option(10, "--max-results", "-k", help="At most this many sources, best first."),
            hops: int = typer.Option(2, "--hops", help="Follow entity links and typed edges this many hops "
                                     "(0 = none)."),
            budget: Optional[int] = typer.Option(4000, "--budget", help="Token budget for the whole context text."),
            include: Optional[list[str]] = typer.Option(None, "--include", help="Seed only from these (repeatable): "
                                                        + ", ".join(KINDS) + "."),
            conversation: Optional[str] = typer.Option(None, "--conversation", "-c",
                                                       help="Only memories of this conversation."),
            user: Optional[str] = typer.Option(None, "--user", "-u", help="Only memories of this user."),
            min_score: float = typer.Option(0.0, "--min-score", help="Drop sources scoring below this (0..1)."),
            json_out: bool = JSON_OPTION) -> None:
    """The numbered, cited sources for QUERY (memories, docs, decisions, graph), within a token budget."""
    from ..workspace_reasoning import workspace_reasoning

    ws = open_workspace(ctx)
    bundle = workspace_reasoning(ws, principal(ctx)).context_for(
        query, max_results=max_results, max_hops=hops, budget_tokens=budget, include=include or None,
        conversation_id=conversation, user_id=user, min_score=min_score)
    emit(bundle.to_dict(), json_out, _print)


def _print(data: dict[str, Any]) -> None:
    out.print(data["text"], markup=False)
    out.print(f"\n{data['num_sources']} sources, {data['tokens']} tokens"
              + (f" of {data['budget_tokens']}" if data["budget_tokens"] else "")
              + (f"; left out: {', '.join(d['id'] for d in data['dropped'])}" if data["dropped"] else "")
              + "".join(f"; {k}: {v}" for k, v in data["skipped"].items()), style="dim", markup=False)


COMMANDS = (context,)
