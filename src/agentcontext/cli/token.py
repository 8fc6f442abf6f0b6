"""``agentcontext token ...``: bearer tokens for the MCP HTTP server. Its commands (``create``, ``list``,
``revoke``) are derived from their declared operations (``agentcontext.operations.access``); this group gives them
their help."""
from __future__ import annotations

from .build import Group

token_app = Group(help="Issue, list and revoke bearer tokens for the MCP HTTP server.", no_args_is_help=True)
