"""One table of MCP tool calls for every tool the server serves: a success each and the error paths a client
meets (unknown pack or doc, cycle, missing prerequisite, read-only pack, access denied, bad argument type).

Shared by the in-process schema tests (test_mcp_schemas.py) and the MCP Inspector CLI tests
(test_mcp_inspector.py). Every call is independent of the others (the workspace is seeded first), so the
Inspector runs them concurrently.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentcontext.decisions.models import Policy
from agentcontext.decisions.policy import PolicyEngine
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.graph.context_graph import ContextGraph
from agentcontext.knowledge import packs
from agentcontext.memory.service import workspace_memory

from .test_access import build_workspace

KNOWLEDGE_TOOLS = {"list_knowledge_packs", "search_knowledge", "list_knowledge_neighbors", "read_knowledge_doc",
                   "flash_knowledge", "create_knowledge_doc", "update_knowledge_doc", "delete_knowledge_doc"}
MEMORY_TOOLS = {"store_memory", "retrieve_memories", "forget_memories", "get_memory", "conversation_history",
                "edit_memory", "memory_versions"}
DECISION_TOOLS = {"record_decision", "find_precedents", "get_causal_chain", "check_compliance"}
CONTEXT_TOOLS = {"get_context"}
GRAPH_TOOLS = {"predict_links", "find_paths"}
ALL_TOOLS = KNOWLEDGE_TOOLS | MEMORY_TOOLS | DECISION_TOOLS | CONTEXT_TOOLS | GRAPH_TOOLS
PKG = "pkg:acme.tools.knowledge.core"
REFUND = {"category": "refund", "reasoning": "Outside the 30-day window.", "outcome": "denied", "confidence": 0.9}


@dataclass
class Case:
    tool: str
    args: dict[str, Any]
    expect: str | None = None  # None = success, else our error type
    principal: str | None = None  # None = the owner
    label: str = ""

    @property
    def name(self) -> str:
        return f"{self.tool}-{self.label or ('ok' if self.expect is None else self.expect)}"


def seed(ws, write_pack) -> dict[str, str]:
    """build_workspace's packs plus a cyclic pack, a read-only pkg: pack, docs to update and delete, memories,
    decisions and a policy; returns the ids the cases need."""
    build_workspace(ws)
    packs.install_folder(ws, write_pack("cyc", {"a": (["b"], "A"), "b": (["c"], "B"), "c": (["a"], "C"),
                                                "m": (["ghost"], "M")}), defer_embeddings=True)
    packs.install_folder(ws, write_pack("core", {"p": ([], "P")}, selector=PKG), defer_embeddings=True)
    for selector in ("mcp.update_me", "mcp.delete_me"):
        packs.put_doc(ws, "lib:open", selector, title=selector, summary="Seeded for the MCP cases.", embed=False)
    mem = workspace_memory(ws)
    ids = {"memory": mem.store("Ann is vegetarian and avoids mushrooms.", conversation_id="c1", user_id="ann"),
           "forget": mem.store("A memory the forget case deletes.", conversation_id="c2")}
    graph = ContextGraph(workspace=ws)
    graph.add_edges([{"source": "bob", "target": "alice", "type": "knows"},
                     {"source": "carol", "target": "alice", "type": "knows"},
                     {"source": "alice", "target": "berlin", "type": "lives_in"}])
    ContextGraph(workspace=ws, name="secret").add_edge("x", "y", "knows")
    recorder = DecisionRecorder(graph)
    ids["decision"] = recorder.record_decision(scenario="Customer asks a refund 45 days after purchase", **REFUND)
    ids["effect"] = recorder.record_decision(scenario="Customer escalates the denied refund", **{**REFUND,
                                             "outcome": "escalated"}, caused_by=[ids["decision"]])
    PolicyEngine(graph_store=graph).add_policy(Policy("refund-v1", "Refunds", "Refunds need high confidence.",
                                                      {"min_confidence": 0.95}, "refund"))
    return ids


def cases(ids: dict[str, str]) -> list[Case]:
    """A success for every tool, then its error paths."""
    dec, eff = ids["decision"], ids["effect"]
    ok = [
        Case("list_knowledge_packs", {}),
        Case("search_knowledge", {"pack": "lib:open", "query": "onboarding guide", "limit": 5}),
        Case("list_knowledge_neighbors", {"pack": "lib:open", "selector": "guide"}),
        Case("read_knowledge_doc", {"pack": "lib:open", "selector": "guide"}),
        Case("flash_knowledge", {"pack": "lib:open", "selectors": ["guide"]}),
        Case("create_knowledge_doc", {"pack": "lib:open", "selector": "mcp.created", "title": "Created",
                                      "summary": "Through MCP.", "tags": ["origin:mcp"], "content": "Body.",
                                      "related": [{"type": "depends_on", "target": "basics"}]}),
        Case("update_knowledge_doc", {"pack": "lib:open", "selector": "mcp.update_me", "content": "Rewritten.",
                                      "expected_version": 1}),
        Case("delete_knowledge_doc", {"pack": "lib:open", "selector": "mcp.delete_me"}),
        Case("store_memory", {"content": "Bob's laptop is a 2019 ThinkPad.", "user_id": "bob",
                              "metadata": {"type": "fact", "tags": ["hardware"], "nested": {"n": 1, "x": None}}}),
        Case("retrieve_memories", {"query": "what food does Ann avoid", "max_results": 3}),
        Case("forget_memories", {"memory_id": ids["forget"]}),
        Case("get_memory", {"memory_id": ids["memory"]}),
        Case("conversation_history", {"conversation_id": "c1"}),
        Case("edit_memory", {"memory_id": ids["memory"], "content": "Ann avoids peanuts and shellfish.",
                             "metadata": {"edited": True}}),
        Case("memory_versions", {"memory_id": ids["memory"]}),
        Case("record_decision", {**REFUND, "scenario": "Another late refund", "entities": ["acme"],
                                 "metadata": {"ticket": "T-9"}, "caused_by": [dec]}),
        Case("find_precedents", {"scenario": "refund two months after buying", "limit": 3}),
        Case("get_causal_chain", {"decision_id": eff}),
        Case("check_compliance", {"decision_id": dec, "policy_id": "refund-v1"}),
        Case("get_context", {"query": "Which refund did the customer ask for?", "max_results": 5}),
        Case("predict_links", {"node_id": "bob", "top_k": 3}),
        Case("find_paths", {"source": "bob", "target": "berlin", "k": 2}),
    ]
    bad = [
        Case("list_knowledge_packs", {"bogus": 1}, "ValidationError", label="unknown-argument"),
        Case("search_knowledge", {"pack": "lib:ghost", "query": "x"}, "NotFoundError", label="unknown-pack"),
        Case("search_knowledge", {"pack": "lib:open", "limit": True}, "ValidationError", label="bad-type"),
        Case("search_knowledge", {"pack": "lib:secret", "query": "salary"}, "AccessDeniedError", "reader"),
        Case("list_knowledge_neighbors", {"pack": "lib:open", "selector": "ghost"}, "NotFoundError"),
        Case("read_knowledge_doc", {"pack": "lib:open", "selector": "ghost"}, "NotFoundError", label="unknown-doc"),
        Case("read_knowledge_doc", {"pack": "lib:open", "selector": 42}, "ValidationError", label="bad-type"),
        Case("read_knowledge_doc", {"pack": "lib:open", "selector": "guide", "version": 2**70}, "ValidationError",
             label="huge-version"),
        Case("read_knowledge_doc", {"pack": "lib:secret", "selector": "salaries"}, "AccessDeniedError", "reader"),
        Case("flash_knowledge", {"pack": "lib:cyc", "selectors": ["a"]}, "CycleError"),
        Case("flash_knowledge", {"pack": "lib:cyc", "selectors": ["m"]}, "MissingModuleError"),
        Case("flash_knowledge", {"pack": "lib:open", "selectors": ["guide"], "budget_tokens": 1},
             "BudgetExceededError"),
        Case("create_knowledge_doc", {"pack": PKG, "selector": "q", "title": "Q"}, "ReadOnlyError"),
        Case("create_knowledge_doc", {"pack": "lib:open", "selector": "guide", "title": "Dup"}, "ConflictError"),
        Case("update_knowledge_doc", {"pack": "lib:open", "selector": "ghost", "title": "X"}, "NotFoundError"),
        Case("update_knowledge_doc", {"pack": "lib:open", "selector": "guide", "title": "X"}, "AccessDeniedError",
             "reader"),
        Case("delete_knowledge_doc", {"pack": PKG, "selector": "p"}, "ReadOnlyError"),
        Case("store_memory", {"content": 5}, "ValidationError", label="bad-type"),
        Case("store_memory", {"content": "sneaky"}, "AccessDeniedError", "reader"),
        Case("retrieve_memories", {"query": "x", "max_results": 0}, "ValidationError"),
        Case("forget_memories", {}, "ValidationError"),
        Case("get_memory", {"memory_id": "mem_nope"}, "NotFoundError"),
        Case("conversation_history", {}, "ValidationError"),
        Case("edit_memory", {"memory_id": "mem_nope", "content": "x"}, "NotFoundError"),
        Case("memory_versions", {}, "ValidationError"),
        Case("record_decision", {**REFUND, "scenario": "x", "caused_by": ["dec_missing"]}, "NotFoundError"),
        Case("record_decision", {**REFUND, "scenario": "x", "confidence": "high"}, "ValidationError",
             label="bad-type"),
        Case("find_precedents", {"scenario": "late refund"}, "AccessDeniedError", "reader"),
        Case("get_causal_chain", {"decision_id": "dec_missing"}, "NotFoundError"),
        Case("check_compliance", {"decision_id": dec, "policy_id": "no-such-policy"}, "NotFoundError"),
        Case("get_context", {"query": "refund", "budget_tokens": 5}, "BudgetExceededError"),
        Case("get_context", {"query": "refund", "include": ["everything"]}, "ValidationError", label="bad-value"),
        Case("predict_links", {"node_id": "ghost"}, "NotFoundError"),
        Case("predict_links", {"node_id": "bob", "method": "nope"}, "ValidationError", label="bad-value"),
        Case("predict_links", {"node_id": "x", "graph": "secret"}, "AccessDeniedError", "reader"),
        Case("find_paths", {"source": "bob", "target": "ghost"}, "NotFoundError"),
        Case("find_paths", {"source": "bob", "target": "alice", "k": 0}, "ValidationError"),
        Case("find_paths", {"source": "bob", "target": "alice"}, "AccessDeniedError", "reader"),
    ]
    return ok + bad


def pack_writer(root):
    """Write a pack folder from {selector: (deps, body)} (tests/conftest.py's write_pack, usable outside a
    function-scoped fixture); returns its path."""
    import yaml

    def write(slug: str, docs: dict, selector: str | None = None):
        folder = root / f"pack-{slug}"
        (folder / "docs").mkdir(parents=True, exist_ok=True)
        entries = []
        for sel, (deps, body) in docs.items():
            (folder / "docs" / f"{sel}.md").write_text(body, encoding="utf-8")
            entries.append({"selector": sel, "source_path": f"docs/{sel}.md", "title": sel.title(),
                            "summary": f"About {sel}.",
                            "related": [{"type": "depends_on", "target": d} for d in deps]})
        manifest = {"name": slug, "pack_id": slug, "docs": entries}
        if selector:
            manifest["selector"] = selector
        (folder / "manifest.yaml").write_text(yaml.safe_dump({"schema": "nenjo.knowledge.v1", "slug": slug,
                                                              "manifest": manifest}, sort_keys=False),
                                              encoding="utf-8")
        return folder

    return write
