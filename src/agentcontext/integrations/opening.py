"""How an adapter gets its workspace: the one it is given, one opened from a store URL (which the adapter then
owns and closes), or a new in-memory one. Shared by the OpenAI Agents, LlamaIndex and LangChain adapters."""
from __future__ import annotations

from ..errors import ValidationError
from ..workspace import Workspace


def open_workspace(workspace: Workspace | None = None, url: str | None = None) -> tuple[Workspace, bool]:
    """``(workspace, owned)``: ``owned`` is True when the adapter opened it and must close it."""
    if workspace is not None and url is not None:
        raise ValidationError("pass a workspace or a store url, not both", url=url)
    if workspace is not None:
        if not isinstance(workspace, Workspace):
            raise ValidationError(f"workspace must be an agentcontext Workspace, got {type(workspace).__name__}; "
                                  "open one with Workspace.open(home) or pass url='sqlite:///path'")
        return workspace, False
    if url is not None:
        if not isinstance(url, str) or not url.strip():
            raise ValidationError("url must be a store URL: sqlite:///path/to/store.db or postgresql://...",
                                  url=str(url))
        return Workspace.open(url=url), True
    return Workspace.in_memory(), True
