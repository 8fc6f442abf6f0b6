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

from ...llms.env import configured_model, provider_from_env
from ...model import CONTEXT_KINDS
from ...operations import context as ops
from ...workspace_reasoning import workspace_reasoning
from ..operations import form_input, run, serves
from ..render import page
from ..requests import console, principal
from . import text_param

SETTINGS = ("include", "max_results", "max_hops", "budget_tokens", "min_score")
serves(ops.CONTEXT, "/ask")


def provider() -> Any:
    return provider_from_env(max_retries=1, deadline=60.0)


def question(params: Any) -> Any:
    """The form as get_context's input (its constraints and defaults): the question (a placeholder while there is
    none, so the settings are still checked) and the searches ticked (all when none is)."""
    chosen = [k for k in CONTEXT_KINDS if params.get(k)]
    query = text_param(params, "q")
    return form_input(ops.CONTEXT, params, {"query": "q"}, query=query or "?",
                      include=chosen if query and chosen else list(CONTEXT_KINDS))


def settings(args: Any) -> dict[str, Any]:
    return args.model_dump(include=set(SETTINGS))


async def ask_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    q = request.query_params
    query = text_param(q, "q")
    args = question(q)
    chosen = settings(args)
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
            bundle = run(request, ops.CONTEXT, args)
        ctx["bundle"] = bundle
        ctx["paths"] = {p["label"]: p for p in bundle["reasoning_path"]}
    return page(request, "ask.html", **ctx)


ROUTES = [Route("/ask", ask_page)]
