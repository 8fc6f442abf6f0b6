"""The MCP interface: one server for every capability (knowledge packs, memory and decisions).

A capability registers its tools with ``register_tools(name, provider)``; ``build_server`` serves them
all with strict input schemas, structured results that match declared output schemas, and our errors as MCP
tool errors (``isError``, ``<Type>: <message>`` as text, the error's data in ``_meta["agentcontext/error"]``).
"""
from .registry import ERROR_META, CallContext, StrictArgs, ToolSpec, register_tools, tool_specs
from .server import build_server, http_app, serve_http, serve_stdio

__all__ = ["ERROR_META", "CallContext", "StrictArgs", "ToolSpec", "build_server", "http_app", "register_tools",
           "serve_http", "serve_stdio", "tool_specs"]
