"""``AgentContext``: the facade of seed 003. It holds its services and delegates to them, one line a method.

- ``memory``: ``AgentMemory`` (memory/service.py), given the knowledge graph for entity links;
- ``retriever``: ``ContextRetriever`` (retrieval.py), memory and graph retrieval with proximity;
- ``decisions``: ``DecisionService`` (decisions/service.py), decisions, policies and checkpoints;
- ``reasoning``: ``ReasoningService`` (reasoning/), cited context, grounded answers and ``store(infer=True)``;
- ``knowledge_graph``: the ``ContextGraph`` (graph/), or None for memory alone.

Setting ``knowledge_graph`` (``load`` and ``load_graph`` do when there is none) hands the graph to
every service. Reports and persistence of memory + graph are plain functions in ``state.py``.

``config``: the one ``RetrievalConfig`` (engine/retrieval_config.py) built here from the constructor's retrieval
arguments (or given whole as ``retrieval_config=``) and handed to memory, the retriever, decisions and reasoning;
a call's keywords override it for that call, and each result echoes what ran (``config``).

``principal``: who the context acts for. Every service it holds acts as that principal, so each read and
write is checked and audited exactly as the CLI and MCP check them (access.py); without one, the context
acts as the workspace's owner. In a single-user workspace (no grant or token was ever issued) every
principal may do everything, as before.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from . import state
from .decisions import Decision, PolicyEngine
from .decisions.service import DecisionService
from .engine import rerank as reranking
from .engine.fusion import FusionWeights
from .engine.retrieval_config import FROM_CONFIG, RetrievalConfig
from .errors import ValidationError
from .graph import ContextGraph
from .graph.protocol import GraphLike
from .memory import AgentMemory
from .reasoning import ContextBundle, ReasoningService
from .reasoning.service import check_infer, check_provider
from .retrieval import ContextRetriever
from .seams import Completes, Scope
from .vector_store import VectorStore


def _vector_store_for(vector_store: Any, graph: Any) -> VectorStore:
    """The given VectorStore; without one, the graph's workspace (one graph) or the default VectorStore
    (the workspace found like git, or .agentcontext/ created in the current directory)."""
    if vector_store is None:
        ws = graph.workspace if isinstance(graph, ContextGraph) else None
        if ws is None:
            return VectorStore()
        return VectorStore(backend="inmemory" if str(ws.store.url).endswith(":memory:") else "sqlite", workspace=ws)
    if not isinstance(vector_store, VectorStore):
        raise ValidationError("vector_store must be an agentcontext VectorStore (backend='sqlite', 'inmemory' "
                              "or 'faiss')", got=type(vector_store).__name__)
    return vector_store


def graph_flags(graph: Any, **given: bool | None) -> dict[str, bool]:
    """The graph feature flags an AgentContext builds its graph with: each given one, else the given graph's,
    else True. A flag given here that disagrees with the given graph's own is a ValidationError."""
    out = {}
    held = graph.flags if isinstance(graph, ContextGraph) else {}
    for flag, value in given.items():
        has = held.get(flag)
        if value is not None and has is not None and bool(has) != bool(value):
            raise ValidationError(f"AgentContext({flag}={value}) disagrees with the knowledge_graph, which was built "
                                  f"with {flag}={has}; set it on the ContextGraph (ContextGraph({flag}={value}))",
                                  flag=flag)
        out[flag] = bool(value if value is not None else (has if has is not None else True))
    return out


def _acting(graph: Any, principal: str | None) -> Any:
    """``graph`` as ``principal`` uses it; a graph that cannot act for someone is refused when one is named."""
    if graph is None or principal is None:
        return graph
    if not isinstance(graph, ContextGraph):
        raise ValidationError("AgentContext(principal=...) needs a knowledge_graph that checks access (a "
                              "ContextGraph)", got=type(graph).__name__)
    return graph.acting_as(principal)


class AgentContext:
    """Memory, retrieval, decisions, graph traversal and checkpoints behind one API (seed 003)."""

    def __init__(
        self,
        vector_store: VectorStore | None = None,
        knowledge_graph: GraphLike | None = None,
        decision_tracking: bool = False,
        retention_days: int | None = 30,
        max_memories: int = 10000,
        graph_expansion: bool = True,
        max_expansion_hops: int = 2,
        hybrid_alpha: float = 0.5,
        advanced_analytics: bool | None = None,
        kg_algorithms: bool | None = None,
        proximity_weight: float = 0.0,
        principal: str | None = None,
        llm_provider: Completes | None = None,
        infer: bool = False,
        node_embeddings: bool | None = None,
        retrieval_config: RetrievalConfig | None = None,
    ) -> None:
        # What retrieval reads, validated once: the given configuration, else one from the arguments above.
        if retrieval_config is not None and not isinstance(retrieval_config, RetrievalConfig):
            raise ValidationError("retrieval_config must be an agentcontext RetrievalConfig",
                                  got=type(retrieval_config).__name__)
        self.config = retrieval_config or RetrievalConfig(
            graph_expansion=graph_expansion, max_expansion_hops=max_expansion_hops, hybrid_alpha=hybrid_alpha,
            proximity_weight=proximity_weight, rerank=reranking.enabled(None), weights=FusionWeights())
        self.decision_tracking = decision_tracking
        self.retention_days = retention_days
        self.max_memories = max_memories
        self.graph_expansion = self.config.graph_expansion
        self.max_expansion_hops = self.config.max_expansion_hops
        self.hybrid_alpha = self.config.hybrid_alpha
        # The graph flags (default True) go to the graph this context builds; a given graph keeps its own,
        # and a flag given here that contradicts it is refused rather than silently ignored.
        self.graph_flags = graph_flags(knowledge_graph, advanced_analytics=advanced_analytics,
                                       kg_algorithms=kg_algorithms, node_embeddings=node_embeddings)
        self.advanced_analytics = self.graph_flags["advanced_analytics"]
        self.kg_algorithms = self.graph_flags["kg_algorithms"]
        self.node_embeddings = self.graph_flags["node_embeddings"]
        self.proximity_weight = self.config.proximity_weight
        self.principal = principal
        self.llm_provider = check_provider(llm_provider)
        self.infer = check_infer(infer, llm_provider)
        self.vector_store = _vector_store_for(vector_store, knowledge_graph)
        # One scope (where and for whom), handed to every service with the collaborators it needs.
        self.scope = Scope(self.vector_store.workspace, principal)
        self.memory = AgentMemory(self.vector_store, max_memory_size=max_memories, retention_policy=retention_days,
                                  scope=self.scope, config=self.config)
        self.retriever = ContextRetriever(memory_store=self.memory, scope=self.scope, config=self.config)
        self.retriever.llm_provider = self.llm_provider
        self.decisions = DecisionService(tracking=decision_tracking, scope=self.scope, config=self.config)
        self.reasoning = ReasoningService(self.retriever, decisions=self.decisions, scope=self.scope,
                                          config=self.config)
        self.knowledge_graph = knowledge_graph

    # --- the graph every service works on ----------------------------------------------------
    @property
    def knowledge_graph(self) -> Any:
        return self._knowledge_graph

    @knowledge_graph.setter
    def knowledge_graph(self, graph: Any) -> None:
        self._knowledge_graph = graph
        acting = _acting(graph, self.principal)  # the services use the graph as the context's principal
        self.memory.entity_graph = acting if self.graph_expansion else None  # graph_expansion: link entities
        self.retriever.knowledge_graph = acting
        self.decisions.graph = acting
        self.reasoning.graph = acting

    def _new_graph(self) -> ContextGraph:
        self.knowledge_graph = ContextGraph(**self.graph_flags)
        return self.knowledge_graph

    def _graph_or_new(self) -> Any:
        return self.knowledge_graph if self.knowledge_graph is not None else self._new_graph()

    # --- memory ----------------------------------------------------------------------------
    def store(self, content: str | Sequence[Any], metadata: dict[str, Any] | None = None,
              conversation_id: str | None = None, user_id: str | None = None, infer: bool | None = None,
              llm_provider: Any = None, **kwargs: Any) -> str | dict[str, Any]:
        """Store a fact (text -> memory id) or a list of documents (-> stats dict). With ``infer=True`` (or
        ``AgentContext(infer=True)``) the model extracts facts and resolves them against similar memories
        (-> what it added, updated, deleted; see reasoning/facts.py)."""
        if self.infer if infer is None else infer:
            return self.reasoning.store_facts(content, llm_provider or self.llm_provider, metadata=metadata,
                                              conversation_id=conversation_id, user_id=user_id, **kwargs)
        return self.memory.store(content, metadata=metadata, conversation_id=conversation_id, user_id=user_id,
                                 **kwargs)

    def batch_store(self, items: Sequence[Any], **kwargs: Any) -> list[str]:
        return self.memory.batch_store(items, **kwargs)

    def retrieve(self, query: str, max_results: int = 5, min_score: float | None = None,
                 use_graph: bool | None = None,
                 conversation_id: str | None = None, user_id: str | None = None,
                 filters: dict[str, Any] | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        """Hybrid retrieval; GraphRAG expansion when a knowledge_graph is set (or ``use_graph=True``)."""
        return self.retriever.retrieve_blended(query, max_results, min_score, use_graph,
                                               conversation_id=conversation_id, user_id=user_id, filters=filters,
                                               **kwargs)

    def context_for(self, query: str, max_results: int = 10, max_hops: int = 2, budget_tokens: Any = FROM_CONFIG,
                    **kwargs: Any) -> ContextBundle:
        """The cited context query_with_reasoning would send a model (include=, conversation_id=, user_id=,
        min_score=; see reasoning/service.py)."""
        return self.reasoning.context_for(query, max_results, max_hops, budget_tokens, **kwargs)

    def query_with_reasoning(self, query: str, llm_provider: Any = None, max_hops: int = 2, max_results: int = 10,
                             **kwargs: Any) -> dict[str, Any]:
        """Answer from a cited context with the model (``llm_provider``, else the one given at construction):
        response, confidence, num_sources, sources, citations, reasoning_path, usage."""
        return self.reasoning.query_with_reasoning(query, llm_provider or self.llm_provider, max_hops, max_results,
                                                   **kwargs)

    def forget(self, memory_id: str | None = None, conversation_id: str | None = None,
               days_old: int | float | None = None, user_id: str | None = None) -> int:
        return self.memory.forget(memory_id, conversation_id, days_old, user_id)

    def update(self, memory_id: str, content: str | None = None, metadata: dict[str, Any] | None = None) -> bool:
        return self.memory.update(memory_id, content, metadata)

    def get_memory(self, memory_id: str) -> dict[str, Any] | None:
        return self.memory.get_memory(memory_id)

    def conversation(self, conversation_id: str, max_items: int = 50) -> list[dict[str, Any]]:
        return self.memory.get_conversation_history(conversation_id, max_items)

    def stats(self) -> dict[str, Any]:
        return state.stats(self.memory, self.decisions.graph)

    def health(self) -> dict[str, Any]:
        return state.health(self.memory, self.decisions.graph)

    # --- persistence -----------------------------------------------------------------------
    def export(self, conversation_id: str | None = None, format: str = "json", **kwargs: Any) -> Any:
        return self.memory.export(conversation_id=conversation_id, format=format, **kwargs)

    def import_data(self, data: Any, format: str = "json") -> int:
        return self.memory.import_data(data, format=format)

    def save(self, path: str | Path) -> None:
        """Write memory (ids, metadata, timestamps) and the knowledge graph to the folder ``path``."""
        state.save(path, self.memory, self.decisions.graph)

    def load(self, path: str | Path) -> None:
        """Restore what ``save`` wrote: memories keep their ids; the graph is replaced from the file."""
        had = self.knowledge_graph is not None
        graph = state.load(path, self.memory, self.decisions.graph, self._new_graph)
        if not had:
            self.knowledge_graph = graph

    def load_graph(self, path: str, format: str | None = None) -> dict[str, Any]:
        """Replace the knowledge graph's state from a file: a saved graph (JSON, Markdown directory), networkx
        node-link JSON, plain {"nodes", "edges"} JSON or GraphML (see ContextGraph.load_from_file)."""
        return state.load_graph(_acting(self._graph_or_new(), self.principal), path, format)

    # --- decisions -------------------------------------------------------------------------
    def record_decision(self, category: str, scenario: str, reasoning: str, outcome: str, confidence: float,
                        entities: Sequence[str] | None = None, decision_maker: str = "",
                        valid_from: str | datetime | None = None, valid_until: str | datetime | None = None,
                        **kwargs: Any) -> str:
        """Record a decision (see DecisionRecorder.record_decision for caused_by=, informed_by=, policies=)."""
        return self.decisions.record_decision(category, scenario, reasoning, outcome, confidence, entities,
                                              decision_maker, valid_from, valid_until, **kwargs)

    def record_decisions(self, items: Iterable[dict[str, Any] | Decision]) -> list[str]:
        """Record many decisions at once (embedded in batches)."""
        return self.decisions.record_decisions(items)

    def link_decisions(self, cause_id: str, effect_id: str, relationship: str = "caused", **kwargs: Any) -> str:
        """Say that one decision caused (or ``relationship="informed"``) another."""
        return self.decisions.link_decisions(cause_id, effect_id, relationship, **kwargs)

    def get_decision(self, decision_id: str, **kwargs: Any) -> Decision:
        return self.decisions.get_decision(decision_id, **kwargs)

    def find_precedents(self, scenario: str, category: str | None = None, limit: int = 5,
                        use_hybrid_search: bool = True, max_hops: int = 2, as_of: str | datetime | None = None,
                        proximity_weight: float | None = None, **kwargs: Any) -> list[Decision]:
        """Similar past decisions, best first (scores in each decision's ``metadata``)."""
        return self.decisions.find_precedents(scenario, category, limit, use_hybrid_search, max_hops, as_of,
                                              proximity_weight, **kwargs)

    def query_decisions(self, query: str, max_hops: int = 2, use_hybrid_search: bool = True,
                        **kwargs: Any) -> list[Decision]:
        """Broad decision search: meaning, keywords, then causal neighbours."""
        return self.decisions.query_decisions(query, max_hops, use_hybrid_search, **kwargs)

    def get_causal_chain(self, decision_id: str, direction: str = "upstream", max_depth: int = 10) -> list[Decision]:
        """Upstream causes or downstream effects, each once, with ``metadata['causal_distance']``."""
        return self.decisions.get_causal_chain(decision_id, direction, max_depth)

    def trace_decision_explainability(self, decision_id: str, max_depth: int = 10) -> dict[str, Any]:
        return self.decisions.trace_decision_explainability(decision_id, max_depth)

    def get_policy_engine(self) -> PolicyEngine:
        return self.decisions.get_policy_engine()

    # --- checkpoints -----------------------------------------------------------------------
    def checkpoint(self, label: str) -> dict[str, Any]:
        """Snapshot the graph's decisions, nodes and relationships under ``label`` (held in memory)."""
        return self.decisions.checkpoint(label)

    def diff_checkpoints(self, label_a: str, label_b: str) -> dict[str, Any]:
        """decisions_/relationships_/nodes_ added, removed and modified from ``label_a`` to ``label_b``."""
        return self.decisions.diff_checkpoints(label_a, label_b)

    def flush_checkpoint(self, label: str) -> dict[str, Any]:
        """Persist a checkpoint in the store, so it survives a restart and save/load."""
        return self.decisions.flush_checkpoint(label)

    def list_checkpoints(self) -> list[str]:
        return self.decisions.list_checkpoints()
