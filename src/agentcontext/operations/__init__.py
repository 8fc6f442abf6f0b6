"""Each operation declared once (issue 27, section 2); the doors derive their forms from the declarations.

``declared()`` is the whole catalogue; ``operation(name)`` one of them. Declared: the knowledge tools
(``knowledge.py``), the memory tools (``memory.py``), the decision tools (``decisions.py``), ``get_context``
(``context.py``) and the graph algorithms (``graph.py``): every MCP tool; and the tokens and grants (``access.py``),
which MCP skips.
"""
from __future__ import annotations

from . import access, context, decisions, graph, knowledge, memory
from .base import DOORS, Args, Caller, Cli, NoArgs, Operation, declare, describe_validation, registered
from ..errors import ValidationError


def declared() -> dict[str, Operation]:
    """Every declared operation by name, in declaration order."""
    return registered()


def operation(name: str) -> Operation:
    ops = registered()
    if name not in ops:
        raise ValidationError(f"no operation {name!r}; declared: {', '.join(sorted(ops))}")
    return ops[name]


__all__ = ["DOORS", "Args", "Caller", "Cli", "NoArgs", "Operation", "declare", "declared", "describe_validation",
           "operation", "access", "context", "decisions", "graph", "knowledge", "memory"]
