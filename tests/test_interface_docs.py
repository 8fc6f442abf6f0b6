"""Every CLI command and every MCP tool has help text and appears in the docs (the README or the docs pack).

A command counts as documented when the docs show it run (``agentcontext pack list``) or name it in code
(`` `pack list` ``); a tool when the docs name it (`` `search_knowledge` `` or ``search_knowledge(``).
"""
from __future__ import annotations

import re
from typing import Any, Iterator

import anyio
from mcp import Client

from agentcontext.cli.entry import command as full_command
from agentcontext.mcp_server import build_server

from .conftest import PACKS, ROOT

DOCS = [ROOT / "README.md", *sorted((PACKS / "agentcontext-docs").rglob("*.md"))]


def docs_text() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in DOCS)


def leaf_commands(root: Any = None) -> Iterator[tuple[str, Any]]:
    """(path, click command) for every runnable command, e.g. ("graph node add", <Command>)."""
    def walk(command: Any, path: list[str]) -> Iterator[tuple[str, Any]]:
        children = getattr(command, "commands", None)
        if children:
            for name, child in children.items():
                yield from walk(child, [*path, name])
        else:
            yield " ".join(path), command

    yield from walk(root if root is not None else full_command(), [])


def documented(path: str, text: str) -> bool:
    words = r"\s+".join(re.escape(w) for w in path.split())
    run = rf"(?:agentcontext|actx)(?:\s+--?[a-z-]+(?:\s+[^\s-]\S*)?)*\s+{words}(?![\w-])"  # global options first
    return re.search(run, text) is not None or re.search(rf"`{words}(?![\w-])", text) is not None


def test_every_cli_command_has_help_and_is_documented():
    text = docs_text()
    commands = dict(leaf_commands())
    assert {"pack list", "decision record", "policy check", "graph node add", "erase", "checkpoint diff"} <= \
        set(commands)
    for path, command in commands.items():
        assert (command.help or "").strip(), f"`agentcontext {path}` has no help text"
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                assert (param.help or "").strip(), f"`agentcontext {path}` option {param.opts[0]} has no help text"
    missing = [path for path in commands if not documented(path, text)]
    assert not missing, f"commands missing from the README and the docs pack: {missing}"


def test_every_mcp_tool_has_a_description_and_is_documented(ws):
    async def listed():
        async with Client(build_server(ws)) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(listed)
    text = docs_text()
    assert len(tools) >= 17
    for tool in tools:
        assert len((tool.description or "").strip()) > 60, tool.name
    missing = [t.name for t in tools if f"`{t.name}`" not in text and f"{t.name}(" not in text]
    assert not missing, f"MCP tools missing from the README and the docs pack: {missing}"
    guide = (PACKS / "agentcontext-docs" / "guide" / "docs" / "guide" / "mcp.md").read_text(encoding="utf-8")
    assert f"{len(tools)} tools" in guide, "the MCP guide must say how many tools the server serves"
    assert not [t.name for t in tools if f"`{t.name}`" not in guide], "the MCP guide must name every tool"
