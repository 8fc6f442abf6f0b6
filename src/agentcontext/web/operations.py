"""The console's side of the declared operations (``agentcontext.operations``): a page that runs one parses its
form through the operation's input model (lax: form values are text) and calls it as the signed-in principal.

``SERVED`` maps each operation the console runs to the route that runs it; tests/test_operations.py checks that
every declared operation is served here or says why the console skips it.
"""
from __future__ import annotations

from typing import Any, Mapping

from starlette.requests import Request

from ..operations import Args, Caller, Operation
from .requests import console, principal

NAMESPACE = "default"  # the memory store the console shows, the one MCP and the CLI use by default
SERVED: dict[str, str] = {}


def serves(op: Operation, route: str) -> Operation:
    """Record that ``route`` runs ``op``; returns ``op``."""
    SERVED[op.name] = route
    return op


def form_input(op: Operation, form: Mapping[str, Any], names: Mapping[str, str] | None = None,
               **values: Any) -> Args:
    """``op``'s input from a form: each of its fields read from the form field of the same name (or the one
    ``names`` maps it from), blank fields left out so the operation's defaults hold, then ``values`` on top."""
    names = names or {}
    found: dict[str, Any] = {}
    for field in op.input.model_fields:
        raw = form.get(names.get(field, field))
        if raw is not None and str(raw).strip() != "":
            found[field] = str(raw).strip()
    found.update({k: v for k, v in values.items() if v is not None})
    return op.parse(found, strict=False)


def run(request: Request, op: Operation, args: Args) -> Any:
    """Run ``op`` as the signed-in principal on the console's workspace."""
    return op.run(Caller(console(request).ws, principal(request), NAMESPACE), args)
