"""``--home`` and ``--as``, the root's options, also taken after a subcommand (by the Typer commands of root.py and
the commands derived from declared operations in declared.py): their help, and where a later one is kept. Imports
neither click nor Typer, so both kinds of command share it without loading the other."""
from __future__ import annotations

from typing import Any

HOME_HELP = "Workspace folder (default: .agentcontext/ found upward, or AGENTCONTEXT_HOME)."
AS_HELP = "Act as this principal (or AGENTCONTEXT_PRINCIPAL)."


def remember_on_root(ctx: Any, name: str, value: Any) -> Any:
    """Keep ``--home`` / ``--as`` given after the subcommand on the root context: set later, so they win."""
    if value is not None:
        root = ctx.find_root()
        if not isinstance(root.obj, dict):
            root.obj = {}
        root.obj[name] = value
    return value
