"""agentcontext: the context layer for AI agents."""
from __future__ import annotations

from .context import AgentContext
from .decisions import CausalChainAnalyzer, DecisionRecorder, PolicyEngine
from .errors import (AccessDeniedError, AgentContextError, BudgetExceededError, ConflictError, CycleError,
                     MissingModuleError, NotFoundError, ProcessingError, ReadOnlyError, ValidationError)
from .workspace import Workspace

__version__ = "0.1.0"

__all__ = [
    "AgentContext", "Workspace", "AgentContextError", "AccessDeniedError", "BudgetExceededError",
    "ConflictError", "CycleError", "MissingModuleError", "NotFoundError", "ProcessingError", "ReadOnlyError",
    "ValidationError",
]
__all__ += ["DecisionRecorder", "PolicyEngine", "CausalChainAnalyzer"]

from .entities import EntityLink, EntityLinker, LinkedEntity  # noqa: E402
from .erasure import ErasureCoordinator, ErasureReceipt  # noqa: E402
from .graph import ContextGraph  # noqa: E402

__all__ += ["ContextGraph", "EntityLinker", "LinkedEntity", "EntityLink", "ErasureCoordinator", "ErasureReceipt"]

from .memory import AgentMemory  # noqa: E402
from .retrieval import ContextRetriever, RetrievedContext  # noqa: E402
from .vector_store import VectorStore  # noqa: E402

__all__ += ["AgentMemory", "ContextRetriever", "RetrievedContext", "VectorStore"]

from .truth import TruthMaintenanceContextFilter  # noqa: E402

__all__ += ["TruthMaintenanceContextFilter"]
