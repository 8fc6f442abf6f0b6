"""The tool registry every capability plugs into, and the one place MCP calls become service calls.

A capability describes each tool as a ``ToolSpec`` (name, description, a strict pydantic model of its
arguments, a function over the ``CallContext``) and registers a provider with ``register_tools``. The
server turns every spec into an MCP tool whose input schema forbids unknown properties, validates the
arguments itself, and turns any failure into an MCP tool error carrying our error type and message:
never a traceback, never a crashed server.

A tool error is ``isError: true`` with ``<Type>: <message>`` as its text and no structured content (clients
such as the TypeScript SDK validate any structured content against the tool's output schema, which
describes a success); the error's data (``{type, message, ...}``) travels in the result's ``_meta`` under
``agentcontext/error``.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Callable

import pydantic
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict

from ..errors import AgentContextError, NotFoundError, ValidationError
from ..operations import Args, Caller, Operation, describe_validation
from ..workspace import Workspace
from .hints import mcp_message

log = logging.getLogger("agentcontext.mcp")


ERROR_META = "agentcontext/error"  # the _meta key of a tool error's data


StrictArgs = Args  # base of every tool's argument model: unknown keys, type coercions, NaN and infinities refused


@dataclass
class CallContext:
    """What a tool call runs against: the workspace and the acting principal (None = the owner)."""

    ws: Workspace
    principal_of: Callable[[], str | None]

    @property
    def principal(self) -> str | None:
        return self.principal_of()


@dataclass
class ToolSpec:
    name: str
    description: str
    args: type[StrictArgs]
    run: Callable[[CallContext, Any], dict[str, Any]]
    output_schema: dict[str, Any] | None = None  # what a success's structured content holds (schemas.obj)
    read_only: bool = True
    destructive: bool = False
    title: str | None = None


def spec_for(op: Operation) -> ToolSpec:
    """The MCP tool of a declared operation: its input model, its output schema (derived through pydantic), its
    flags and help, and a run that calls the operation as the session's principal."""

    def run(ctx: CallContext, args: Any) -> Any:
        return op.run(Caller(ctx.ws, ctx.principal), args)

    return ToolSpec(op.name, op.help, op.input, run, op.output_schema(), read_only=op.read_only,
                    destructive=op.destructive, title=op.title)


def specs_for(operations: list[Operation]) -> list[ToolSpec]:
    """The MCP tools of ``operations``, leaving out those that skip this door (each says why)."""
    return [spec_for(op) for op in operations if "mcp" not in op.skips]


Provider = Callable[[], list[ToolSpec]]
_PROVIDERS: dict[str, Provider] = {}


def register_tools(capability: str, provider: Provider) -> None:
    """Register (or replace) the tools of one capability; ``build_server`` serves every registered one."""
    _PROVIDERS[capability] = provider


def registered_capabilities() -> list[str]:
    return list(_PROVIDERS)


def tool_specs(capabilities: list[str] | None = None) -> list[ToolSpec]:
    names = capabilities if capabilities is not None else list(_PROVIDERS)
    specs: list[ToolSpec] = []
    for name in names:
        if name not in _PROVIDERS:
            raise ValidationError(f"no MCP capability {name!r}; registered: {', '.join(_PROVIDERS)}")
        specs.extend(_PROVIDERS[name]())
    return specs


# --- errors ----------------------------------------------------------------------------------------


def jsonable(data: Any) -> Any:
    return json.loads(json.dumps(data, default=str))


def error_result(exc: AgentContextError) -> CallToolResult:
    """An MCP tool error: ``Type: message`` as text, ``{type, message, ...data}`` in ``_meta``, no structure; the
    message's hints in MCP terms (tool names: ``hints.py``)."""
    message = mcp_message(exc.message)
    return tool_error(exc.type, message, jsonable({**exc.to_dict(), "message": message}))


def tool_error(kind: str, message: str, data: dict[str, Any] | None = None) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=f"{kind}: {message}")], is_error=True,
                          _meta={ERROR_META: data or {"type": kind, "message": message}})


def protocol_error(exc: AgentContextError) -> MCPError:
    """For resources and prompts (which have no tool-error result): a JSON-RPC error with our type and data."""
    code = INVALID_PARAMS if isinstance(exc, (NotFoundError, ValidationError)) else INTERNAL_ERROR
    message = mcp_message(exc.message)
    return MCPError(code=code, message=f"{exc.type}: {message}",
                    data={"error": jsonable({**exc.to_dict(), "message": message})})


def call_spec(spec: ToolSpec, ctx: CallContext, raw: dict[str, Any]) -> CallToolResult:
    """Validate ``raw`` against the spec's model, run it, and wrap the answer or the failure."""
    try:
        if not isinstance(raw, dict):
            raise ValidationError("arguments must be a JSON object")
        try:
            args = spec.args.model_validate(raw)
        except pydantic.ValidationError as exc:
            raise describe_validation(exc, spec.args) from None
        data = jsonable(spec.run(ctx, args))
    except AgentContextError as exc:
        return error_result(exc)
    except RecursionError:
        return error_result(ValidationError("arguments are nested too deeply"))
    except Exception:  # a bug of ours: logged on stderr, reported without internals, the server keeps going
        log.exception("tool %s failed unexpectedly", spec.name)
        return tool_error("InternalError", f"{spec.name} failed unexpectedly; the server log has the details")
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
                          structured_content=data)


class _RawArgs(ArgModelBase):
    """Accepts any object; the spec's strict model validates inside ``call_spec`` so errors are ours."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    schema = spec.args.model_json_schema(by_alias=True)
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


def as_mcp_tool(spec: ToolSpec, ctx: CallContext) -> Tool:
    """The SDK tool for ``spec``: our schema, our validation, structured results."""

    def run(arguments: dict[str, Any]) -> CallToolResult:
        return call_spec(spec, ctx, arguments)

    return Tool(fn=run, name=spec.name, title=spec.title, description=spec.description,
                parameters=input_schema(spec), fn_metadata=FuncMetadata(arg_model=_RawArgs,
                                                                        output_schema=spec.output_schema),
                is_async=False,
                annotations=ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                                            idempotent_hint=spec.read_only, open_world_hint=False))
