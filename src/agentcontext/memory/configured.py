"""What ``AgentMemory`` reads to retrieve, as one ``RetrievalConfig`` (engine/retrieval_config.py), and its
retrieval as ``RetrievedContext`` (engine/retrieved.py): the part of the memory the retriever and the reasoning
service read (``results``), beside ``AgentMemory.retrieve``, which makes seed 003's dicts of the same results."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ..engine import rerank as reranking
from ..engine.fusion import FusionWeights, weights_for
from ..engine.retrieval_config import RetrievalConfig
from ..engine.retrieved import RetrievedContext
from ..errors import ValidationError
from ..workspace import Workspace
from .recall import recall
from .retention import Retention


def metadata_filter(filters: dict[str, Any] | None) -> Callable[[dict[str, Any]], bool] | None:
    if not filters:
        return None
    items = list(filters.items())

    def keep(props: dict[str, Any]) -> bool:
        meta = props.get("metadata") or {}
        return all(meta.get(k) == v for k, v in items)

    return keep


class ConfiguredRecall:
    """``config`` and ``results`` of a memory. ``AgentMemory`` supplies the rest: ``check`` (access), ``_index``
    (the in-process index), ``used`` (the LRU count)."""

    config: RetrievalConfig
    workspace: Workspace
    namespace: str
    retention: Retention

    def configure(self, config: RetrievalConfig | None, weights: FusionWeights | None, rerank: bool | None,
                  ranker: str | None = None) -> None:
        """The facade's configuration, else one of this memory's own; the fusion weights, the second stage over
        the first candidates (engine/rerank.py: ``rerank=True`` or AGENTCONTEXT_RERANK) and the ranker (``linear``,
        ``learned``: engine/ltr.py, or ``facets``: memory/facet_search.py), given here win over it."""
        base = config if config is not None else RetrievalConfig(rerank=reranking.enabled(None))
        self.config = dataclasses.replace(base, weights=self._fitted(weights or base.weights),
                                          rerank=base.rerank if rerank is None else bool(rerank),
                                          ranker=base.ranker if ranker is None else ranker)

    def _fitted(self, weights: FusionWeights | None) -> FusionWeights:
        """``weights``, or, when they are the defaults, the ones fitted for the workspace's embedding model
        (engine/fusion.py ``weights_for``): held in ``config`` so its echo names the weights that rank."""
        return weights_for(self.workspace.model_name, weights or FusionWeights())

    @property
    def weights(self) -> FusionWeights:
        """The fusion weights retrieval ranks with (``config``'s: ``_fitted``)."""
        return self.config.weights

    @weights.setter
    def weights(self, weights: FusionWeights) -> None:
        self.config = dataclasses.replace(self.config, weights=self._fitted(weights))

    @property
    def rerank(self) -> bool:
        return self.config.rerank

    @rerank.setter
    def rerank(self, on: bool) -> None:
        self.config = dataclasses.replace(self.config, rerank=bool(on))

    @property
    def ranker(self) -> str:
        return self.config.ranker

    @ranker.setter
    def ranker(self, name: str) -> None:
        self.config = dataclasses.replace(self.config, ranker=name)

    def results(self, query: str, max_results: int = 5, min_score: float | None = None,
                conversation_id: str | None = None, user_id: str | None = None,
                filters: dict[str, Any] | None = None, type: str | None = None,
                count_use: bool = True) -> list[RetrievedContext]:
        """``retrieve`` as ``RetrievedContext``, the type retrieval keeps to its output, each with ``config``."""
        self.check("read", "memory.retrieve")
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("retrieve needs a non-empty query text")
        config = self.config.override(min_score=min_score)
        if max_results <= 0:
            return []
        if self.retention.sweep_due():
            self.retention.expire()
        wanted = dict(filters or {})
        if type is not None:
            wanted["type"] = type
        out = recall(self.workspace, self.namespace, self._index, query, max_results, config.min_score,
                     conversation_id, user_id, wanted, metadata_filter(wanted), self.weights, config.rerank,
                     config.echo, ranker=config.ranker)
        if count_use:
            self.used([r.id for r in out])
        return out
