"""The MCP interface: one server for every capability (knowledge packs, memory and decisions).

A capability registers its tools with ``register_tools(name, provider)``; ``build_server`` serves them
all with strict input schemas, structured results and our errors as MCP tool errors.
"""
from .registry import CallContext, StrictArgs, ToolSpec, register_tools, tool_specs
from .server import build_server, http_app, serve_http, serve_stdio

__all__ = ["CallContext", "StrictArgs", "ToolSpec", "build_server", "http_app", "register_tools", "serve_http",
           "serve_stdio", "tool_specs"]
