"""``RetrievedContext``: the one result type of retrieval, from candidate to output (issue 27 s5).

Memory recall (memory/recall.py) builds one per hit; the retriever (retrieval.py) adds its vector rows and graph
nodes as the same type, expands, blends and ranks them; the public doors turn them into the dicts seed 003 returns
at the very end (``to_dict`` for ``AgentContext.retrieve``, ``as_memory`` for ``AgentMemory.retrieve``). ``config``
is the echo of the ``RetrievalConfig`` that ran (engine/retrieval_config.py), beside ``signals``.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Iterable

# A memory's fields besides content, metadata and score, in the order seed 003's memory dict lists them.
MEMORY_FIELDS = ("memory_id", "conversation_id", "user_id", "timestamp", "created_at", "updated_at", "version")


@dataclass
class RetrievedContext:
    content: str
    score: float
    source: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    signals: dict[str, float] = field(default_factory=dict)
    related_entities: list[dict[str, Any]] = field(default_factory=list)
    related_relationships: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The result as the dict ``AgentContext.retrieve`` returns: every field (``extra``'s keys in its place, the
        ``config`` echo when there is one), nested values copied (as ``dataclasses.asdict`` would, at a fraction of
        its cost)."""
        out: dict[str, Any] = {"content": self.content, "score": self.score, "source": self.source,
                               "metadata": _copied(self.metadata), "id": self.id, "signals": dict(self.signals),
                               "related_entities": _copied(self.related_entities),
                               "related_relationships": _copied(self.related_relationships)}
        if self.config:
            out["config"] = {**self.config, "sources": list(self.config["sources"])}
        out.update(_copied(self.extra))
        return out

    @classmethod
    def from_memory(cls, item: dict[str, Any]) -> "RetrievedContext":
        """A memory dict (``AgentMemory.retrieve``'s shape, from a caller's own memory object) as a result."""
        return cls(content=item["content"], score=float(item["score"]), source="memory",
                   metadata=dict(item.get("metadata") or {}), id=item["id"], signals=dict(item.get("signals") or {}),
                   extra={k: item[k] for k in MEMORY_FIELDS if k in item})

    def as_memory(self) -> dict[str, Any]:
        """The memory dict seed 003's ``AgentMemory.retrieve`` returns (id, memory fields, score, signals, source,
        and the config echo when there is one)."""
        extra = self.extra
        out: dict[str, Any] = {"id": self.id, "memory_id": extra.get("memory_id", self.id), "content": self.content,
                               "metadata": self.metadata}
        for name in MEMORY_FIELDS[1:]:
            out[name] = extra.get(name)
        out["score"] = self.score
        out["signals"] = self.signals
        out["source"] = self.source
        if self.config:
            out["config"] = dict(self.config)
        return out


def _copied(value: Any) -> Any:
    """A deep copy of ``value``, without ``copy.deepcopy``'s cost on what needs none (empty or flat containers)."""
    if not value:
        return type(value)()
    if isinstance(value, dict) and all(isinstance(v, _FLAT) for v in value.values()):
        return dict(value)
    return copy.deepcopy(value)


_FLAT = (str, int, float, bool, type(None))


def as_dicts(results: Iterable[RetrievedContext]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in results]
