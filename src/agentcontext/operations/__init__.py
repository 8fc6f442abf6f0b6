"""Each operation declared once (issue 27, section 2); the doors derive their forms from the declarations.

``declared()`` is the whole catalogue; ``operation(name)`` one of them. Declared so far: the knowledge tools
(``knowledge.py``) and the memory tools (``memory.py``).
"""
from __future__ import annotations

from . import knowledge, memory
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
           "operation", "knowledge", "memory"]
