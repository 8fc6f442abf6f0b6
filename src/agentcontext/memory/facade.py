"""AgentContext memory methods (store, retrieve, forget, conversation, save/load...)."""
from __future__ import annotations

from typing import Any


class MemoryMethods:
    def _init_memory(self, vector_store: Any) -> None:
        self.vector_store = vector_store
