"""The Ask page: a question -> the cited context bundle ``get_context`` returns (each source with its score, its
signals and the hops that brought it in), and, when a model is configured by environment, the grounded answer of
``query_with_reasoning`` with its citations linked to the sources and its confidence.

The model: ``AGENTCONTEXT_LLM_BASE_URL`` (an OpenAI-compatible server), ``AGENTCONTEXT_LLM_MODEL`` and, if the
server needs one, ``AGENTCONTEXT_LLM_API_KEY``, read from the console's environment on each question. The key
never reaches the page; the page names only the model and the server's address."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...errors import ValidationError
from ...llms.env import configured_model, provider_from_env
from ...model import CONTEXT_KINDS
from ...workspace_reasoning import workspace_reasoning
from ..render import page
from ..requests import console, principal
from . import int_param, text_param

def provider() -> Any:
    return provider_from_env(max_retries=1, deadline=60.0)


def settings(params: Any) -> dict[str, Any]:
    """The retrieval settings of the form (defaults as get_context's), checked."""
    chosen = [k for k in CONTEXT_KINDS if params.get(k)]
    raw_score = text_param(params, "min_score")
    try:
        min_score = float(raw_score) if raw_score is not None else 0.0
    except ValueError:
        raise ValidationError(f"min_score must be a number from 0 to 1, got {raw_score[:40]!r}") from None
    if not 0.0 <= min_score <= 1.0:
        raise ValidationError(f"min_score must be from 0 to 1, got {min_score}")
    return {"include": chosen if text_param(params, "q") and chosen else list(CONTEXT_KINDS),
            "max_results": int_param(params, "max_results", 10, 1, 100),
            "max_hops": int_param(params, "max_hops", 2, 0, 5),
            "budget_tokens": int_param(params, "budget_tokens", 4000, 1, 1_000_000),
            "min_score": min_score}


async def ask_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    q = request.query_params
    query = text_param(q, "q")
    chosen = settings(q)
    ctx: dict[str, Any] = {"query": query, "settings": chosen, "kinds": CONTEXT_KINDS, "model": configured_model(),
                           "bundle": None, "answer": None, "paths": {}}
    if query:
        service = workspace_reasoning(ws, who)
        llm = provider() if q.get("answer") else None
        if llm is not None:
            answer = service.query_with_reasoning(query, llm_provider=llm, max_hops=chosen["max_hops"],
                                                  max_results=chosen["max_results"],
                                                  budget_tokens=chosen["budget_tokens"], include=chosen["include"],
                                                  min_score=chosen["min_score"])
            ctx["answer"] = answer
            bundle = {k: answer[k] for k in ("sources", "reasoning_path", "dropped", "skipped", "num_sources")}
            bundle["tokens"] = answer["context_tokens"]
        else:
            bundle = service.context_for(query, **chosen).to_dict()
        ctx["bundle"] = bundle
        ctx["paths"] = {p["label"]: p for p in bundle["reasoning_path"]}
    return page(request, "ask.html", **ctx)


ROUTES = [Route("/ask", ask_page)]
