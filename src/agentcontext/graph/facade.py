"""AgentContext graph methods (load_graph, proximity blending...)."""
from __future__ import annotations


class GraphMethods:
    def _init_graph(self) -> None:
        pass
