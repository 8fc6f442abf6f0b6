"""The optional dependencies behind ``ContextGraph``'s feature flags, checked when the graph is built.

A flag that is on and whose library is missing fails at construction with a ``DependencyMissingError``
naming the extra to install (or the flag to turn off), never later in the middle of a call.
"""
from __future__ import annotations

import importlib.util

from ..errors import DependencyMissingError


def _igraph() -> None:
    """Whether igraph can be found, without importing it (that costs ~0.1 CPU s, paid by every process that builds
    a graph, most of which never run an algorithm); engine/analytics.py imports it when one runs."""
    if importlib.util.find_spec("igraph") is None:
        raise ImportError("No module named 'igraph'")


# flag -> (what it needs, the extra that installs it, a check that imports it)
FLAG_EXTRAS = {
    "advanced_analytics": ("python-igraph", "analytics", _igraph),
    "centrality_analysis": ("python-igraph", "analytics", _igraph),
    "community_detection": ("python-igraph", "analytics", _igraph),
}


def require_extras(flags: dict[str, bool]) -> None:
    """Raise for the first flag that is on and whose optional dependency cannot be imported."""
    for flag, on in flags.items():
        if not on or flag not in FLAG_EXTRAS:
            continue
        package, extra, check = FLAG_EXTRAS[flag]
        try:
            check()
        except ImportError as exc:
            raise DependencyMissingError(
                f"{flag}=True needs {package}, which is not installed: pip install 'agentcontext[{extra}]' "
                f"(or construct the graph with {flag}=False)", flag=flag, package=package, extra=extra) from exc
