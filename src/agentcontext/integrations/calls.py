"""The knowledge and memory calls the framework adapters offer an agent as tools, bound to one workspace and one
principal, framework-neutral: each method is one service call and returns JSON-ready data (lists and dicts).

The OpenAI Agents SDK's function tools (``integrations.openai_agents.tools``) and the LangChain tools
(``integrations.langchain.tools``) wrap these methods; their names and docstrings are the tools' names and
descriptions, the same names the MCP server uses. Every call is checked and audited by the service for the principal,
so a tool refuses exactly what the CLI and MCP refuse.
"""
from __future__ import annotations

import functools
import json
from typing import Any, Callable

from ..knowledge import flash as flash_mod
from ..knowledge import tools
from ..memory.service import workspace_memory
from ..workspace import Workspace


class AgentCalls:
    """Tool calls over ``workspace`` acting as ``principal`` (None = the workspace owner); memories are recalled
    from ``memory:<memory_namespace>``."""

    def __init__(self, workspace: Workspace, principal: str | None = None, memory_namespace: str = "default") -> None:
        self.workspace = workspace
        self.principal = principal
        self.memory = workspace_memory(workspace, memory_namespace, principal)

    def list_knowledge_packs(self) -> list[dict[str, Any]]:
        """List the knowledge packs you may read: pack name, title, number of docs, whether it is editable. Start
        here to learn which packs exist."""
        return tools.list_knowledge_packs(self.workspace, self.principal)

    def search_knowledge(self, pack: str, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """Search one knowledge pack's docs by metadata first (selector, title, tags, summary), then body text and
        meaning. Returns selector, title, kind, summary, tags and a score in [0, 1] per doc, best first; read a doc's
        body with read_knowledge_doc.

        Args:
            pack: The pack name, e.g. lib:handbook or pkg:acme.tools.knowledge.core.
            query: What you are looking for, in words.
            limit: At most this many docs.
        """
        return tools.search_knowledge(self.workspace, pack, query, limit=limit, principal=self.principal)

    def list_knowledge_neighbors(self, pack: str, selector: str) -> list[dict[str, Any]]:
        """The docs one doc links to (its outbound typed edges: depends_on, references, part_of...), with their
        titles and summaries.

        Args:
            pack: The pack name.
            selector: The doc's dotted selector, as search_knowledge returned it.
        """
        return tools.list_knowledge_neighbors(self.workspace, pack, selector, principal=self.principal)

    def read_knowledge_doc(self, pack: str, selector: str) -> dict[str, Any]:
        """Read one doc's full body with its metadata and outbound links.

        Args:
            pack: The pack name.
            selector: The doc's dotted selector, as search_knowledge returned it.
        """
        return tools.read_knowledge_doc(self.workspace, pack, selector, principal=self.principal)

    def flash(self, pack: str, selector: str, budget_tokens: int = 0) -> dict[str, Any]:
        """Assemble a doc with every prerequisite it depends on, foundations first, each once: the reading order
        and the text to read (``text``).

        Args:
            pack: The pack name.
            selector: The doc to learn; its prerequisites come first.
            budget_tokens: Fail if the bundle needs more tokens than this (0 = no limit).
        """
        bundle = flash_mod.flash(self.workspace, pack, selector, budget_tokens=budget_tokens or None,
                                 principal=self.principal)
        return {"pack": bundle.pack, "order": bundle.order, "tokens": bundle.tokens, "digest": bundle.digest,
                "text": bundle.text}

    def recall_memory(self, query: str, max_results: int = 5) -> list[dict[str, Any]]:
        """Recall what was remembered before (earlier conversations, facts, preferences): the memories most relevant
        to the query, best first, each with its text, conversation, time and a score in [0, 1].

        Args:
            query: What you want to recall, in words.
            max_results: At most this many memories.
        """
        rows = self.memory.retrieve(query, max_results=max_results)
        keep = ("id", "content", "conversation_id", "user_id", "created_at", "score")
        return [{k: r.get(k) for k in keep} for r in rows]


def as_json(call: Callable[..., Any]) -> Callable[..., str]:
    """The call with its result as JSON text, same name, signature and docstring (a framework would otherwise hand
    the model Python's repr of a dict)."""

    @functools.wraps(call)
    def tool(*args: Any, **kwargs: Any) -> str:
        return json.dumps(call(*args, **kwargs), ensure_ascii=False, default=str)

    return tool
