"""Error hints in MCP terms: what an agent calls next is a tool, not a CLI command or a Python method.

Services name Python methods and parameters (``list_knowledge_packs() lists the packs``, ``pass
degrade='summaries'``); the CLI rewrites them as commands and flags (``cli/hints.py``). Here each method or
command that has a tool becomes that tool's name; parameters stay as they are (they are the tools' argument
names, tests/test_cli_habits.py). Admin actions no tool does (``agentcontext grant``, ``pack add``) stay as the
command a person runs.
"""
from __future__ import annotations

TOOLS = {  # what a service's message names -> the tool that does it
    "list_knowledge_packs()": "the list_knowledge_packs tool",
    "`agentcontext pack list`": "the list_knowledge_packs tool",
    "search_knowledge finds selectors": "the search_knowledge tool finds selectors",
    "clear_memory()": "forget_memories (one condition at a time)",
}


def mcp_message(message: str) -> str:
    """``message`` with the methods and commands it names as the MCP tools that do the same."""
    for said, tool in TOOLS.items():
        message = message.replace(said, tool)
    return message
