"""agentcontext: the context layer for AI agents.

Knowledge packs and flash live in ``agentcontext.knowledge``; the seed-003 classes are exported here. The error
types are plain imports; the services load on first use of any of their names (module ``__getattr__``), so
``import agentcontext`` (and the CLI's ``--version`` and ``--help``) do not load the services, the store or the
embedding runtime, while ``from agentcontext import AgentContext`` works as before.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .errors import (AccessDeniedError, AgentContextError, BudgetExceededError, ConflictError, CycleError,
                     MissingModuleError, NotFoundError, ProcessingError, ProviderError, ReadOnlyError, ValidationError)

__version__ = "0.1.0"

# Each service name exported here and the module that defines it.
_LAZY = {
    "AgentContext": "context", "AgentMemory": "memory", "CausalChainAnalyzer": "decisions", "ContextGraph": "graph",
    "ContextRetriever": "retrieval", "DecisionRecorder": "decisions", "EntityLink": "entities",
    "EntityLinker": "entities", "ErasureCoordinator": "erasure", "ErasureReceipt": "erasure",
    "LinkedEntity": "entities", "PolicyEngine": "decisions", "RetrievalConfig": "retrieval",
    "RetrievedContext": "retrieval",
    "TruthMaintenanceContextFilter": "truth", "VectorStore": "vector_store", "Workspace": "workspace",
}

__all__ = [
    "AgentContext", "AgentMemory", "CausalChainAnalyzer", "ContextGraph", "ContextRetriever", "DecisionRecorder",
    "EntityLink", "EntityLinker", "ErasureCoordinator", "ErasureReceipt", "LinkedEntity", "PolicyEngine",
    "RetrievalConfig", "RetrievedContext", "TruthMaintenanceContextFilter", "VectorStore", "Workspace",
    "AgentContextError", "AccessDeniedError", "BudgetExceededError", "ConflictError", "CycleError",
    "MissingModuleError", "NotFoundError", "ProcessingError", "ProviderError", "ReadOnlyError", "ValidationError",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Static imports (tests/test_layers.py follows them); the first name asked for loads them all, as
    # ``import agentcontext`` used to.
    from . import context, decisions, entities, erasure, graph, memory, retrieval, truth, vector_store, workspace  # noqa: F401
    for export, module in _LAZY.items():
        globals()[export] = getattr(sys.modules[f"{__name__}.{module}"], export)  # kept: the lazy exports, by name
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # type checkers and IDEs see the same names as plain imports
    from .context import AgentContext
    from .decisions import CausalChainAnalyzer, DecisionRecorder, PolicyEngine
    from .entities import EntityLink, EntityLinker, LinkedEntity
    from .erasure import ErasureCoordinator, ErasureReceipt
    from .graph import ContextGraph
    from .memory import AgentMemory
    from .retrieval import ContextRetriever, RetrievalConfig, RetrievedContext
    from .truth import TruthMaintenanceContextFilter
    from .vector_store import VectorStore
    from .workspace import Workspace
