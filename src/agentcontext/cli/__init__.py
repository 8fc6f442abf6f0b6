"""The ``agentcontext`` (alias ``actx``) command line: thin wrappers over the services, one module per command group;
the commands of declared operations derived from their declarations (declared.py); the root in entry.py.

Every command takes ``--json``. Any error exits non-zero with one clear line, or with
``{"error": {"type", "message", ...data}}`` on stdout under ``--json``.
"""
from typing import Any

from .entry import main


def __getattr__(name: str) -> Any:
    if name == "app":  # the commands that are not declared operations (cli/build.py's Group)
        from .root import app

        return app
    raise AttributeError(name)


__all__ = ["app", "main"]
