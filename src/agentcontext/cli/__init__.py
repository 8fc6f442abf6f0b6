"""The ``agentcontext`` (alias ``actx``) command line: thin wrappers over the services, one module per command group.

Every command takes ``--json``. Any error exits non-zero with one clear line, or with
``{"error": {"type", "message", ...data}}`` on stdout under ``--json``.
"""
from .root import app, main

__all__ = ["app", "main"]
