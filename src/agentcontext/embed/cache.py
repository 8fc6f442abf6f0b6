"""Embedding through the store's cache: text is keyed by content hash, so it is embedded once.

Large jobs are embedded in chunks on a producer thread while the calling thread writes the previous chunk's
vectors (``stream_vectors``); texts of similar length are chunked together so the model pads little."""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import ValidationError
from ..model import content_hash
from ..store.base import Store
from .base import Embedder

Progress = Callable[[int, int], None]
CHUNK = 512  # texts per producer step: enough batches to keep every model thread busy, small enough to show progress
AHEAD = 64  # chunks computed ahead of a caller still in its transaction (64 x 512 x 384 float32 = 48 MB at most)


def _check(embedder: Embedder, vectors: np.ndarray, count: int) -> None:
    if vectors.shape != (count, embedder.dimension):
        raise ValidationError(
            f"embedder {embedder.name!r} returned shape {vectors.shape}, expected ({count}, {embedder.dimension})",
            model=embedder.name)


class VectorStream:
    """Vectors of ``texts`` computed on a producer thread, chunk by chunk, ahead of the consumer.

    Iterate it for ``(start, vectors)`` pairs in order (``vectors`` are the rows of ``texts[start:start+n]``);
    ``ahead`` bounds how many chunks wait unread (``None``: no bound, for a caller that reads only later).
    The producer's exception is raised to the consumer; ``close()`` (or leaving the ``with``) stops it."""

    def __init__(self, embedder: Embedder, texts: Sequence[str], chunk: int = CHUNK, ahead: int | None = 2) -> None:
        self.embedder, self.texts, self.chunk = embedder, list(texts), max(1, chunk)
        self._queue: queue.Queue = queue.Queue(maxsize=ahead or 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name="agentcontext-embed-stream", daemon=True)
        self._thread.start()

    def _produce(self) -> None:
        """One chunk is kept in flight ahead of the one being waited for when the embedder can ``submit`` (the
        next chunk is tokenized while the model threads run this one, and they never wait between chunks)."""
        submit = getattr(self.embedder, "submit", None)  # kept: submit() is an optional part of the Embedder protocol
        flight: list[tuple[int, int, Any]] = []
        try:
            for start in range(0, len(self.texts), self.chunk):
                if self._stop.is_set():
                    return
                part = self.texts[start: start + self.chunk]
                flight.append((start, len(part), submit(part) if submit else _Done(self.embedder.embed(part))))
                if len(flight) > 1:
                    self._deliver(*flight.pop(0))
            while flight:
                self._deliver(*flight.pop(0))
            self._put(None)
        except BaseException as exc:  # handed to the consumer, which raises it
            self._put(exc)
        finally:  # stopped or failed: what is still queued on the model threads is not needed
            for _, _, pending in flight:
                pending.cancel()

    def _deliver(self, start: int, count: int, pending: Any) -> None:
        vecs = np.asarray(pending.result(), dtype=np.float32)
        _check(self.embedder, vecs, count)
        self._put((start, vecs))

    def _put(self, item: object) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self, wait: bool = True) -> None:
        """Stop the producer; ``wait`` for it to finish its current chunk (not on an error path)."""
        self._stop.set()
        if wait:
            self._thread.join()

    def __enter__(self) -> "VectorStream":
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self.close(wait=kind is None)


class _Done:
    """The result of an embedder without ``submit``, computed already."""

    def __init__(self, vectors: Any) -> None:
        self._vectors = vectors

    def result(self) -> Any:
        return self._vectors

    def cancel(self) -> None:
        """Nothing is queued: the vectors are computed already."""


def by_length(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(hash, text)`` pairs with texts of similar length next to each other (so chunks batch well)."""
    return sorted(pairs, key=lambda p: len(p[1]))


def write_stream(store: Store, embedder: Embedder, todo: Sequence[tuple[str, str]], stream: VectorStream,
                 progress: Progress | None = None, known: dict[str, np.ndarray] | None = None) -> int:
    """Write each chunk of ``stream`` (over the texts of ``todo``) to the store's vector cache as it comes."""
    total = len(todo)
    for start, vecs in stream:
        fresh = {h: v for (h, _), v in zip(todo[start: start + len(vecs)], vecs)}
        store.put_vectors(fresh, embedder.name)
        if known is not None:
            known.update(fresh)
        if progress:
            progress(min(start + len(vecs), total), total)
    return total


def embed_texts(store: Store, embedder: Embedder, texts: Sequence[str], chunk: int = CHUNK) -> np.ndarray:
    """Vectors for ``texts``, computing (and caching in the store) only the ones not seen before."""
    hashes = [content_hash(t) for t in texts]
    known = store.get_vectors(list(dict.fromkeys(hashes)), embedder.name)
    todo = by_length([(h, t) for h, t in dict(zip(hashes, texts)).items() if h not in known])
    if todo:
        with VectorStream(embedder, [t for _, t in todo], chunk) as stream:
            write_stream(store, embedder, todo, stream, known=known)
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    return np.stack([known[h] for h in hashes]).astype(np.float32, copy=False)


class PendingVectors:
    """Vectors being computed now for the ``texts`` the store has none for, for a caller that writes them after
    its own transaction (``write``), so embedding overlaps that transaction; ``cancel`` drops them unwritten."""

    def __init__(self, store: Store, embedder: Embedder, texts: Sequence[str]) -> None:
        self.store, self.embedder = store, embedder
        hashes = [content_hash(t) for t in texts]
        known = store.get_vectors(list(dict.fromkeys(hashes)), embedder.name)
        self.todo = by_length([(h, t) for h, t in dict(zip(hashes, texts)).items() if h not in known])
        self.stream = VectorStream(embedder, [t for _, t in self.todo], ahead=AHEAD) if self.todo else None

    def write(self, progress: Progress | None = None) -> int:
        if self.stream is None:
            return 0
        with self.stream:
            return write_stream(self.store, self.embedder, self.todo, self.stream, progress)

    def cancel(self) -> None:
        if self.stream is not None:
            self.stream.close(wait=False)


def new_vectors(store: Store, embedder: Embedder, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Vectors (by content hash) of the ``texts`` the store has none for, computed now and not written (the
    caller writes them with what it stores)."""
    hashes = list(dict.fromkeys(content_hash(t) for t in texts))
    known = store.get_vectors(hashes, embedder.name)
    todo = {h: t for h, t in zip((content_hash(t) for t in texts), texts) if h not in known}
    if not todo:
        return {}
    vecs = embedder.embed(list(todo.values()))
    _check(embedder, vecs, len(todo))
    return dict(zip(todo, vecs))


def embed_missing(store: Store, embedder: Embedder, namespace: str | Sequence[str] | None = None,
                  progress: Progress | None = None, chunk: int = CHUNK) -> int:
    """Compute vectors for every active node in ``namespace`` whose text has none yet (each distinct text once)."""
    missing = by_length(store.missing_vectors(embedder.name, namespace))
    if not missing:
        return 0
    with VectorStream(embedder, [t for _, t in missing], chunk) as stream:
        return write_stream(store, embedder, missing, stream, progress)
