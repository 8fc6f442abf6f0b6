"""langchain-tests' standard suites run against our LangChain adapter: ``RetrieversIntegrationTests`` for
``AgentContextRetriever`` and ``ToolsUnitTests`` + ``ToolsIntegrationTests`` for each knowledge tool. Only the
fixtures are ours (the properties below: a workspace with memories and a pack, the example calls); nothing is skipped.
"""
from __future__ import annotations

import functools
from typing import Any

import pytest

pytest.importorskip("langchain_tests")

from langchain_tests.integration_tests import RetrieversIntegrationTests, ToolsIntegrationTests  # noqa: E402
from langchain_tests.unit_tests import ToolsUnitTests  # noqa: E402

from agentcontext.integrations.langchain import AgentContextRetriever, agentcontext_tools  # noqa: E402
from agentcontext.knowledge import packs  # noqa: E402
from agentcontext.memory.service import workspace_memory  # noqa: E402
from agentcontext.workspace import Workspace  # noqa: E402


@functools.cache
def workspace() -> Workspace:
    """An in-memory workspace: four memories and a four-doc pack about onboarding (built once per process)."""
    ws = Workspace.in_memory()
    packs.create_pack(ws, "handbook")
    docs = [("basics", [], "Onboarding basics: accounts, badges and the first day."),
            ("guide", ["basics"], "The onboarding guide builds on the basics: the first week."),
            ("teams", ["guide"], "How onboarding teams pair new people with a buddy."),
            ("leave", [], "Leave policy: holidays and sick days.")]
    for selector, deps, body in docs:
        packs.put_doc(ws, "lib:handbook", selector, title=selector.title(), summary=body[:40], content=body,
                      related=[{"type": "depends_on", "target": d} for d in deps])
    workspace_memory(ws).store([
        "Ana started onboarding on Monday and got her badge.",
        "The onboarding buddy for Ana is Ravi.",
        "Ravi prefers onboarding sessions in the morning.",
        "The office coffee machine is broken again.",
    ], conversation_id="hr-1")
    return ws


class TestAgentContextRetriever(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[AgentContextRetriever]:
        return AgentContextRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"workspace": workspace()}

    @property
    def retriever_query_example(self) -> str:
        return "how does onboarding work?"


def _tool(name: str):
    return next(t for t in agentcontext_tools(workspace()) if t.name == name)


class _ToolCase:
    name = ""
    example: dict[str, Any] = {}

    @property
    def tool_constructor(self):
        return _tool(self.name)

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return self.example


CASES = {
    "list_knowledge_packs": {},
    "search_knowledge": {"pack": "lib:handbook", "query": "onboarding", "limit": 3},
    "list_knowledge_neighbors": {"pack": "lib:handbook", "selector": "guide"},
    "read_knowledge_doc": {"pack": "lib:handbook", "selector": "guide"},
    "flash": {"pack": "lib:handbook", "selector": "teams", "budget_tokens": 0},
}


class TestListKnowledgePacksUnit(_ToolCase, ToolsUnitTests):
    name, example = "list_knowledge_packs", CASES["list_knowledge_packs"]


class TestListKnowledgePacks(_ToolCase, ToolsIntegrationTests):
    name, example = "list_knowledge_packs", CASES["list_knowledge_packs"]


class TestSearchKnowledgeUnit(_ToolCase, ToolsUnitTests):
    name, example = "search_knowledge", CASES["search_knowledge"]


class TestSearchKnowledge(_ToolCase, ToolsIntegrationTests):
    name, example = "search_knowledge", CASES["search_knowledge"]


class TestListKnowledgeNeighborsUnit(_ToolCase, ToolsUnitTests):
    name, example = "list_knowledge_neighbors", CASES["list_knowledge_neighbors"]


class TestListKnowledgeNeighbors(_ToolCase, ToolsIntegrationTests):
    name, example = "list_knowledge_neighbors", CASES["list_knowledge_neighbors"]


class TestReadKnowledgeDocUnit(_ToolCase, ToolsUnitTests):
    name, example = "read_knowledge_doc", CASES["read_knowledge_doc"]


class TestReadKnowledgeDoc(_ToolCase, ToolsIntegrationTests):
    name, example = "read_knowledge_doc", CASES["read_knowledge_doc"]


class TestFlashUnit(_ToolCase, ToolsUnitTests):
    name, example = "flash", CASES["flash"]


class TestFlash(_ToolCase, ToolsIntegrationTests):
    name, example = "flash", CASES["flash"]
