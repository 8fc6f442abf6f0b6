"""One exception tree for the whole library.

Every error carries data (``error.data``) as well as a message that says what to do, so the
CLI (``--json``), the MCP server and Python callers can all report it without parsing text.
"""
from __future__ import annotations

import difflib
from typing import Any, Iterable


class AgentContextError(Exception):
    """Base of every error agentcontext raises on purpose."""

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    @property
    def type(self) -> str:
        return type(self).__name__

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message, **self.data}


class NotFoundError(AgentContextError, KeyError):
    """A pack, doc, node, memory or record does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class ValidationError(AgentContextError, ValueError):
    """Input is malformed; the message names what to fix."""


class CycleError(AgentContextError):
    """A dependency cycle; ``data['cycle']`` is the whole path, first node repeated at the end."""


class MissingModuleError(AgentContextError):
    """A prerequisite does not exist; ``data['missing']`` and the ``data['chain']`` that required it."""


class AccessDeniedError(AgentContextError, PermissionError):
    """The acting principal may not do this."""


class ReadOnlyError(AgentContextError):
    """A write to something read-only (a ``pkg:`` pack)."""


class BudgetExceededError(AgentContextError):
    """A bundle is larger than the token budget; carries ``needed``, ``budget`` and ``largest``."""


class ConflictError(AgentContextError):
    """An optimistic-concurrency check failed (``expected_version`` is stale)."""


class ProcessingError(AgentContextError, RuntimeError):
    """An operation could not complete (a snapshot changed under it, a backend failed)."""


class StoreError(AgentContextError):
    """The store could not be opened or written."""


class ShardUnavailableError(StoreError):
    """A shard of a sharded store (``store/pg_shards.py``) does not answer; ``data['shard']`` names it."""


class SchemaVersionError(StoreError):
    """The store's schema is newer than this version of agentcontext knows; upgrade agentcontext to open it."""


class DependencyMissingError(AgentContextError, ImportError):
    """An optional extra is not installed; the message names the extra to install."""


class ProviderError(AgentContextError):
    """An LLM provider failed: rejected the key, was unreachable, timed out, rate-limited us past the retries or
    returned malformed or empty output. ``data`` carries ``provider``, ``status`` (HTTP status or None),
    ``reason`` (``auth``, ``not_found``, ``bad_request``, ``rate_limited``, ``server_error``, ``unreachable``,
    ``timeout``, ``malformed_output``, ``empty_output``, ``refused``, ``no_api_key``...), ``model`` and
    ``attempts``; the message says what to do."""

    @property
    def provider(self) -> str | None:
        return self.data.get("provider")

    @property
    def status(self) -> int | None:
        return self.data.get("status")

    @property
    def reason(self) -> str | None:
        return self.data.get("reason")


def did_you_mean(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The ``choices`` closest to ``name`` (difflib), best first: for "did you mean" in messages."""
    return difflib.get_close_matches(name, list(choices), n=n, cutoff=0.6)


def refuse_unknown(call: str, unexpected: Iterable[str], accepted: Iterable[str], hint: str = "") -> None:
    """Raise ``ValidationError`` when ``unexpected`` names any argument: which ones, the closest accepted name
    ("did you mean"), every accepted one, and ``hint`` (what to do instead)."""
    names = sorted(unexpected)
    if not names:
        return
    allowed = sorted(set(accepted))
    guesses = [f"{n} (did you mean {close[0]}?)" if (close := did_you_mean(n, allowed, 1)) else n for n in names]
    raise ValidationError(f"{call} got unknown arguments: {', '.join(guesses)}; it accepts {', '.join(allowed)}"
                          + (f"; {hint}" if hint else ""), arguments=names, accepted=allowed)
