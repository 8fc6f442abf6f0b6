"""``query_with_reasoning`` and ``context_for``: a cited context from memories, docs, decisions and the graph,
and an answer grounded in it.

1. Seeds: the memory retriever's hits, the best docs of the packs the principal may read, decisions by
   meaning and keywords, and graph nodes the query names (gather.py; each with a score in [0, 1]).
2. Expansion: up to ``max_hops`` edges from every seed, with the path that reached each node (expand.py).
3. The best ``max_results`` of all of them, numbered, within ``budget_tokens`` (bundle.py).
4. ``query_with_reasoning`` sends ``bundle.messages()`` to the provider and reads the citations and the
   confidence of its answer (answer.py). With no source at all, the model is not called.

``truth_filter`` is refused here, as seed 003 says: build verified context with
``ContextRetriever.retrieve(..., truth_filter=...)`` and give it to the model yourself.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence, Union

from .. import access
from ..engine.retrieval_config import FROM_CONFIG, RetrievalConfig
from ..errors import ValidationError
from ..graph.protocol import GraphLike
from ..model import CONTEXT_KINDS as KINDS
from ..seams import Completes, Configured, Generates, MemoryLike, NamesModel, RetrieverLike, Scope, conforms
from ..workspace import Workspace
from .answer import result
from .bundle import ContextBundle, assemble
from .expand import expand
from .facts import infer_and_store
from .gather import Readable, decision_sources, doc_sources, graph_sources, memory_sources
from .sources import Source

if TYPE_CHECKING:
    from ..decisions.recorder import DecisionRecorder
    from ..decisions.service import DecisionService
    from ..llms.base import Completion

SOURCE_OF_KIND = {"memories": "memory", "docs": "docs", "decisions": "decisions", "graph": "graph"}
Decisions = Union["DecisionRecorder", "DecisionService"]  # what reasoning reads decisions through
NO_SOURCES = "I found nothing in the stored context about this question, so I cannot answer it from there."
TRUTH_FILTER = ("truth_filter is not accepted by {where}; assemble support-checked context with "
                "ContextRetriever.retrieve(..., truth_filter=...) and give it to the model yourself")


def check_provider(llm_provider: Any) -> Any:
    """``llm_provider`` as given, if it can answer (``complete(messages, ...)``); ValidationError otherwise."""
    if llm_provider is not None and not isinstance(llm_provider, Completes):
        raise ValidationError("llm_provider must be an agentcontext.llms provider (anything with complete(messages, "
                              "...)), e.g. Groq(model=...) or OpenAICompatible(base_url=..., model=...)",
                              got=type(llm_provider).__name__)
    return llm_provider


def check_infer(infer: Any, llm_provider: Any) -> bool:
    """``AgentContext(infer=...)``: a bool, and only with a provider to infer with."""
    if not isinstance(infer, bool):
        raise ValidationError(f"infer must be True or False, got {infer!r}")
    if infer and llm_provider is None:
        raise ValidationError("AgentContext(infer=True) needs llm_provider=... to extract facts with")
    return infer


def model_name(llm: Any) -> str:
    """The model a provider names (``model``), or "" for one that names none."""
    return str(llm.model) if isinstance(llm, NamesModel) else ""


def refuse_truth_filter(where: str, kwargs: dict[str, Any]) -> None:
    if "truth_filter" in kwargs:
        raise ValidationError(TRUTH_FILTER.format(where=where), argument="truth_filter")


class ReasoningService:
    """Cited context and grounded answers over the services it is given (any of them may be None)."""

    def __init__(self, retriever: RetrieverLike | None = None, *, graph: GraphLike | None = None,
                 workspace: Workspace | None = None, decisions: Decisions | None = None,
                 principal: str | None = None, scope: Scope | None = None,
                 config: RetrievalConfig | None = None) -> None:
        """``scope`` (the facade's) gives the workspace (for packs) and the principal at once; ``workspace=`` and
        ``principal=`` say the same one at a time. ``config`` (the facade's ``RetrievalConfig``, else the
        retriever's) gives the sources, ``min_score``, the token budget and the answer stage a call does not name."""
        self.retriever = retriever
        self.graph = graph
        self.workspace = scope.workspace if scope is not None else workspace
        self.decisions = decisions
        self.principal = scope.principal if scope is not None else principal
        if config is None:
            config = retriever.config if conforms(retriever, Configured) else RetrievalConfig()
        self.config = config

    @classmethod
    def for_retriever(cls, retriever: RetrieverLike, principal: str | None = None) -> "ReasoningService":
        """Everything a ContextRetriever reaches: its memory (and that memory's workspace for packs), its
        knowledge graph and the decisions recorded there."""
        graph = retriever.knowledge_graph
        decisions = None
        if graph is not None:
            from ..decisions.recorder import DecisionRecorder

            decisions = DecisionRecorder(graph)
        memory = retriever.memory_store
        ws = memory.workspace if memory is not None else None
        return cls(retriever, graph=graph, workspace=ws, decisions=decisions, principal=principal)

    @property
    def memory(self) -> MemoryLike | None:
        """The memory the retriever reads (None without a retriever or a memory)."""
        return self.retriever.memory_store if self.retriever is not None else None

    # --- the cited context -----------------------------------------------------------------
    def context_for(self, query: str, max_results: int = 10, max_hops: int = 2, budget_tokens: Any = FROM_CONFIG,
                    include: Sequence[str] | None = None, conversation_id: str | None = None,
                    user_id: str | None = None, min_score: float | None = None, **unexpected: Any) -> ContextBundle:
        """The numbered, cited sources for ``query`` within ``budget_tokens`` (see the module docstring); what the
        call does not name (``budget_tokens``, ``include``, ``min_score``) is the configuration's."""
        refuse_truth_filter("context_for", unexpected)
        if unexpected:
            raise ValidationError(f"context_for got unknown arguments: {', '.join(sorted(unexpected))}",
                                  arguments=sorted(unexpected))
        config = self.config.override(budget_tokens=budget_tokens, min_score=min_score)
        kinds = _check(query, max_results, max_hops, include, config)
        stores, ws_of = self._stores()
        readable = Readable(ws_of, self.principal, conversation_id, user_id)
        seeds: list[Source] = []
        skipped: dict[str, str] = {}
        memory = self.memory
        if "memories" in kinds and self.retriever is not None:
            if memory is not None and not access.can(memory.workspace, self.principal, memory.namespace, "read"):
                skipped["memories"] = f"no read access to {memory.namespace}"
            else:
                seeds += memory_sources(self.retriever, query, max_results, conversation_id=conversation_id,
                                        user_id=user_id)
        if "docs" in kinds and self.workspace is not None:
            seeds += doc_sources(self.workspace, query, max_results, self.principal)
        graph_ok = self.graph is not None and access.can(self.graph.workspace, self.principal,
                                                         self.graph.namespace, "read")
        if self.graph is not None and not graph_ok:
            for kind in ("decisions", "graph"):
                if kind in kinds:
                    skipped[kind] = f"no read access to {self.graph.namespace}"
        if "decisions" in kinds and graph_ok and self.decisions is not None:
            seeds += decision_sources(self.decisions, query, max_results)
        if "graph" in kinds and graph_ok:
            seeds += graph_sources(self.graph, query, max_results, readable.for_store(self.graph.store))
        seeds = config.keep(_best_by_id(seeds))  # min_score, once for each source: the seeds here,
        reached = expand(seeds, stores, max_hops, readable, max_results)
        ids = {s.id for s in seeds}
        pool = seeds + config.keep(s for s in reached if s.id not in ids)  # what expansion adds, here
        ranked = sorted(pool, key=lambda s: (-s.score, s.hops, s.id))[:max_results]
        bundle = assemble(query, ranked, config.budget_tokens, skipped)
        bundle.config = config.summary()
        return bundle

    # --- the grounded answer ---------------------------------------------------------------
    def query_with_reasoning(self, query: str, llm_provider: Any = None, max_hops: int = 2, max_results: int = 10,
                             budget_tokens: Any = FROM_CONFIG, max_tokens: Any = FROM_CONFIG,
                             temperature: Any = FROM_CONFIG, **context: Any) -> dict[str, Any]:
        """Answer ``query`` from its cited context with ``llm_provider``; returns ``response``, ``confidence``,
        ``num_sources``, ``sources``, ``citations``, ``reasoning_path``, ``usage``, ``config`` (the echo of the
        retrieval configuration that ran) and more (answer.py). ``max_tokens`` and ``temperature`` (the answer
        stage; None: the provider's default) are the configuration's unless the call names them."""
        refuse_truth_filter("query_with_reasoning", context)
        if llm_provider is None:
            raise ValidationError("query_with_reasoning needs llm_provider=..., e.g. agentcontext.llms.Groq(model=...)"
                                  " or OpenAICompatible(base_url=..., model=...); context_for(query) gives the "
                                  "cited context without a model")
        if not isinstance(llm_provider, (Completes, Generates)):
            raise ValidationError("llm_provider must have complete(messages, ...) (an agentcontext.llms provider) "
                                  "or generate(prompt)", got=type(llm_provider).__name__)
        bundle = self.context_for(query, max_results=max_results, max_hops=max_hops, budget_tokens=budget_tokens,
                                  **context)
        if not bundle.num_sources:
            return result(bundle, NO_SOURCES)
        answer = self.config.override(answer_max_tokens=max_tokens, answer_temperature=temperature)
        completion = _ask(llm_provider, bundle, answer.answer_max_tokens, answer.answer_temperature)
        return result(bundle, completion.text.strip(), completion)

    # --- facts from text --------------------------------------------------------------------
    def store_facts(self, text: Any, llm_provider: Any, metadata: dict[str, Any] | None = None,
                    conversation_id: str | None = None, user_id: str | None = None,
                    **unexpected: Any) -> dict[str, Any]:
        """``store(text, infer=True)``: extract facts, resolve them against similar memories, apply (facts.py)."""
        if unexpected:
            raise ValidationError(f"store(..., infer=True) got unknown arguments: {', '.join(sorted(unexpected))}",
                                  arguments=sorted(unexpected))
        memory = self.memory
        if memory is None:
            raise ValidationError("store(..., infer=True) needs a memory to store into")
        return infer_and_store(memory, check_provider(llm_provider), text, metadata=metadata,
                               conversation_id=conversation_id, user_id=user_id)

    # --- wiring ----------------------------------------------------------------------------
    def _stores(self) -> tuple[list[Any], dict[int, Workspace]]:
        """Every store the context reads, once each, with the workspace that holds its access rules."""
        owners = []
        memory = self.memory
        if memory is not None:
            owners.append(memory.workspace)
        if self.graph is not None:
            owners.append(self.graph.workspace)
        if self.workspace is not None:
            owners.append(self.workspace)
        stores: list[Any] = []
        ws_of: dict[int, Workspace] = {}
        for ws in owners:
            if id(ws.store) not in ws_of:
                stores.append(ws.store)
                ws_of[id(ws.store)] = ws
        return stores, ws_of


def _ask(llm: Completes | Generates, bundle: ContextBundle, max_tokens: int | None,
         temperature: float | None) -> Completion:
    options: dict[str, Any] = {}
    if max_tokens is not None:
        options["max_tokens"] = max_tokens
    if temperature is not None:
        options["temperature"] = temperature
    if isinstance(llm, Completes):
        return llm.complete(bundle.messages(), **options)
    from ..llms.base import Completion, Usage  # a generate(prompt)-only provider (semantica's shape)

    text = llm.generate(f"{bundle.instructions}\n\n{bundle.text}", **options)
    if not isinstance(text, str) or not text.strip():
        from ..errors import ProviderError

        raise ProviderError(f"{type(llm).__name__}.generate returned no text", provider=type(llm).__name__,
                            status=None, reason="empty_output")
    return Completion(text=text, usage=Usage(), raw={}, provider=type(llm).__name__,
                      model=model_name(llm))


def _check(query: Any, max_results: Any, max_hops: Any, include: Any, config: RetrievalConfig) -> tuple[str, ...]:
    """The kinds of source to gather (``include``, else the configuration's sources), once the arguments are
    checked (``budget_tokens`` and ``min_score`` are, in the configuration)."""
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("the query must be non-empty text")
    for name, value, low, high in (("max_results", max_results, 1, 100), ("max_hops", max_hops, 0, 5)):
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ValidationError(f"{name} must be an integer from {low} to {high}, got {value!r}", **{name: value})
    if include is None:
        return tuple(k for k in KINDS if config.uses(SOURCE_OF_KIND[k]))
    kinds = tuple(include)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or isinstance(include, str):
        raise ValidationError(f"include takes a list of {', '.join(KINDS)}; got {include!r}")
    return kinds


def _best_by_id(sources: Any) -> list[Source]:
    best: dict[str, Source] = {}
    for s in sources:
        if s.id not in best or s.score > best[s.id].score:
            best[s.id] = s
    return list(best.values())
