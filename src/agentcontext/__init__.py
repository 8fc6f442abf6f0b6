"""agentcontext: the context layer for AI agents.

Knowledge packs and flash live in ``agentcontext.knowledge``; the seed-003 classes are exported here.
"""
from __future__ import annotations

from .context import AgentContext
from .decisions import CausalChainAnalyzer, DecisionRecorder, PolicyEngine
from .entities import EntityLink, EntityLinker, LinkedEntity
from .erasure import ErasureCoordinator, ErasureReceipt
from .errors import (AccessDeniedError, AgentContextError, BudgetExceededError, ConflictError, CycleError,
                     MissingModuleError, NotFoundError, ProcessingError, ProviderError, ReadOnlyError, ValidationError)
from .graph import ContextGraph
from .memory import AgentMemory
from .retrieval import ContextRetriever, RetrievedContext
from .truth import TruthMaintenanceContextFilter
from .vector_store import VectorStore
from .workspace import Workspace

__version__ = "0.1.0"

__all__ = [
    "AgentContext", "AgentMemory", "CausalChainAnalyzer", "ContextGraph", "ContextRetriever", "DecisionRecorder",
    "EntityLink", "EntityLinker", "ErasureCoordinator", "ErasureReceipt", "LinkedEntity", "PolicyEngine",
    "RetrievedContext", "TruthMaintenanceContextFilter", "VectorStore", "Workspace",
    "AgentContextError", "AccessDeniedError", "BudgetExceededError", "ConflictError", "CycleError",
    "MissingModuleError", "NotFoundError", "ProcessingError", "ProviderError", "ReadOnlyError", "ValidationError",
]
