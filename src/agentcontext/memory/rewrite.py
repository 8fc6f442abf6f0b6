"""Query rewriting / decomposition with a provider (opt-in): a multi-hop or world-knowledge question is split
by the model into up to ``max_queries`` short sub-queries; each is searched (``AgentMemory.retrieve``), the
original question always among them, and the results are merged by each memory's best score.

    from agentcontext.memory.rewrite import retrieve_rewritten
    found = retrieve_rewritten(memory, llm, "Which city did the woman who adopted Miso move to?")

The provider's reply must be ``{"queries": ["...", ...]}``. A malformed reply, a timeout or any other
``ProviderError`` never reaches the caller: the search falls back to the original question alone and each
result's ``signals["rewrite"]`` says so (``fallback`` is the error's reason). Access is checked before the
provider sees the question: a principal without read on the store gets ``AccessDeniedError`` and no request
is sent.
"""
from __future__ import annotations

import time
from typing import Any

from ..errors import ProviderError, ValidationError

SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["queries"], "additionalProperties": False,
    "properties": {"queries": {"type": "array", "maxItems": 8,
                               "items": {"type": "string", "minLength": 1, "maxLength": 300}}},
}
SYSTEM = ("You turn a question about a person's past conversations into short search queries for a memory store. "
          "Split a multi-hop question into the facts it needs, one query each; for a world-knowledge question, "
          "name the personal facts that would answer it. At most {n} queries, each a few words, no answers.")


def sub_queries(provider: Any, query: str, max_queries: int = 3) -> tuple[list[str], dict[str, Any]]:
    """(the provider's sub-queries, at most ``max_queries``, deduplicated, without the question itself;
    what happened: ``fallback`` is None or the ProviderError's reason, ``seconds`` the round trip)."""
    started = time.perf_counter()
    info: dict[str, Any] = {"fallback": None, "model": provider.model}
    try:
        data = provider.complete(query, system=SYSTEM.format(n=max_queries), json_schema=SCHEMA, temperature=0.0,
                                 max_tokens=200).data
    except ProviderError as exc:
        info["fallback"] = str(exc.data.get("reason") or "provider_error")
        info["error"] = str(exc)[:200]
        data = {"queries": []}
    info["seconds"] = round(time.perf_counter() - started, 4)
    seen = {query.strip().casefold()}
    out: list[str] = []
    for q in data["queries"]:
        key = q.strip().casefold()
        if key and key not in seen and len(out) < max_queries:
            seen.add(key)
            out.append(q.strip())
    return out, info


def retrieve_rewritten(memory: Any, provider: Any, query: str, max_results: int = 5, max_queries: int = 3,
                       **retrieve_options: Any) -> list[dict[str, Any]]:
    """``memory.retrieve`` for ``query`` and each of the provider's sub-queries, merged by best score, best first.

    ``retrieve_options`` are ``retrieve``'s (``min_score``, ``conversation_id``, ``filters``, ``count_use`` ...).
    Each result's ``signals["rewrite"]``: the ``queries`` searched, the ``query`` that found it best,
    ``fallback`` and ``provider_ms`` (the provider's round trip)."""
    memory.check("read", "memory.retrieve")  # before the provider sees the question
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("retrieve_rewritten needs a non-empty query text")
    if not isinstance(max_queries, int) or max_queries < 0:
        raise ValidationError(f"max_queries must be a whole number >= 0, got {max_queries!r}")
    count_use = retrieve_options.pop("count_use", True)
    extra, info = sub_queries(provider, query, max_queries) if max_queries else ([], {"fallback": None})
    queries = [query, *extra]
    provider_ms = round(1000 * info.get("seconds", 0.0), 2)
    best: dict[str, dict[str, Any]] = {}
    for q in queries:
        for r in memory.retrieve(q, max_results=max_results, count_use=False, **retrieve_options):
            if r["id"] not in best or r["score"] > best[r["id"]]["score"]:
                best[r["id"]] = {**r, "signals": {**r.get("signals", {}), "rewrite": {"query": q}}}
    merged = sorted(best.values(), key=lambda r: -r["score"])[:max_results]
    for r in merged:
        r["signals"]["rewrite"].update(queries=queries, fallback=info["fallback"], provider_ms=provider_ms)
    if count_use:
        memory.used([r["id"] for r in merged])
    return merged
