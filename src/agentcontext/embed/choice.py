"""Which embedding model a workspace uses: the one it was built with, recorded in its store.

- A workspace opened without a model asked for uses the model its store records (``settings/embedding_model``);
  a store with no record was built with the default (all-MiniLM-L6-v2-int8).
- ``embedding_model=NAME`` (``Workspace.open``, ``VectorStore``) on a workspace built with another model is refused
  with a ValidationError saying how to move it (``move_model`` below); on a new workspace (no record,
  no vector yet) it is recorded. ``AGENTCONTEXT_EMBED_MODEL`` says the same for new workspaces; a workspace that
  records another model keeps its own (the variable is a preference, the record a fact about the vectors).
- ``move_model(workspace, NAME)``: embeds every active node's text with NAME (each distinct text once), then records
  NAME; the old model's vectors stay until erased or purged (a move back costs nothing).
- An embedder plugged in by the caller (``embedder=E``) is used as given: its vectors are keyed by its own name.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from ..errors import ValidationError
from ..store.base import Store
from .cache import embed_missing
from .models import ENV, MINILM, load_model, spec_of

RECORD_KIND, RECORD_KEY = "settings", "embedding_model"


def recorded_model(store: Store) -> str | None:
    """The model the store records, or None when it records none."""
    rec = store.get_record(RECORD_KIND, RECORD_KEY)
    return str(rec["name"]) if rec and rec.get("name") else None


def built_with(store: Store) -> str | None:
    """The model the workspace was built with: the recorded one, else the default when it holds default vectors,
    else None (a new workspace)."""
    recorded = recorded_model(store)
    if recorded is not None:
        return recorded
    return MINILM if store.count_vectors(MINILM) else None


def record_model(store: Store, name: str) -> None:
    spec = spec_of(name)
    store.put_record(RECORD_KIND, RECORD_KEY, {"name": spec.name, "dimension": spec.dimension})


def choose(store: Store, embedding_model: str | None = None) -> str | None:
    """The registered model a workspace on ``store`` uses (None: the default); its embedder is loaded when first
    needed (``load_model``)."""
    if embedding_model is None and not os.environ.get(ENV, "").strip() \
            and recorded_model(store) in (None, MINILM):
        return None  # the common case costs one record read
    asked = spec_of(embedding_model).name if embedding_model else None
    built = built_with(store)
    if asked is not None and built is not None and asked != built:
        raise ValidationError(
            f"this workspace was built with the embedding model {built}, not {asked}: open it without a model (it "
            f"keeps {built}), or move it to {asked} with `agentcontext reindex --model {asked}` or "
            f"agentcontext.embed.choice.move_model(workspace, {asked!r}) (every text is embedded again)",
            model=asked, built_with=built)
    name = asked or built or spec_of(os.environ[ENV].strip()).name
    if built is None and name != MINILM:
        record_model(store, name)
    return None if name == MINILM else name


def move_model(workspace: Any, name: str, progress: Callable[[int, int], None] | None = None) -> int:
    """Embed every active node's text with the model ``name`` and record it: the workspace now uses it. Returns
    how many texts were embedded."""
    spec = spec_of(name)
    embedder = load_model(spec.name)
    count = embed_missing(workspace.store, embedder, None, progress)
    record_model(workspace.store, spec.name)
    workspace.use_embedder(None, None if spec.name == MINILM else spec.name)
    return count
