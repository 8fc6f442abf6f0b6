"""Error hints in MCP terms: what an agent calls next is a tool, not a CLI command or a Python method.

Services name Python methods and parameters (``list_knowledge_packs() lists the packs``, ``pass
degrade='summaries'``); the CLI rewrites them as commands and flags (``cli/hints.py``). Here each method or
command that has a tool becomes that tool's name, and a parameter that is an argument of the tool being called
is spelled as its JSON argument (``"degrade": "summaries"``). Admin actions no tool does (``agentcontext grant``,
``pack add``) stay as the command a person runs.
"""
from __future__ import annotations

import re
from typing import Iterable

TOOLS = {  # what a service's message names -> the tool that does it
    "list_knowledge_packs()": "the list_knowledge_packs tool",
    "`agentcontext pack list`": "the list_knowledge_packs tool",
    "search_knowledge finds selectors": "the search_knowledge tool finds selectors",
    "clear_memory()": "forget_memories (one condition at a time)",
}
_PARAM = re.compile(r"(?<![\w.-])([a-z][a-z_]*)=('[^']*'|\"[^\"]*\"|<[^>]*>|\.\.\.|[\w.:*-]+)?")


def mcp_message(message: str, arguments: Iterable[str] = ()) -> str:
    """``message`` with the methods and commands it names as MCP tools, and ``arguments`` as JSON arguments."""
    for said, tool in TOOLS.items():
        message = message.replace(said, tool)
    names = set(arguments)

    def argument(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        if name not in names:
            return match.group(0)
        if not value or value == "...":
            return f'"{name}"'
        if value[0] in "'\"":
            value = f'"{value[1:-1]}"'
        return f'"{name}": {value}'

    return _PARAM.sub(argument, message)
