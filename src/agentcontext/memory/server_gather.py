"""A server-side ranking round's reads that need not wait for the text hits, started before them (issue 23 s3).

``server_search._Query.rank`` reads in a chain: the text hits, their nodes (whose speakers say which names the query
holds), then the dense pool for the query without those names, the named speakers' nearest turns and the keyword
counts. Only the names tie the second half to the first, and the names are most often those the namespace's earlier
queries heard: ``Reads`` guesses them from the speakers held per workspace (``SPEAKERS``: every speaker the text hits
of a query on the namespace showed; a new speaker joins at the first query that hears it) and starts the dense pool,
the named speakers' nearest and the keyword counts on the store's second connection (``read_ahead``,
store/pg_parallel.py) while the text search runs on the main one. Each read is taken only when what it was asked with
(the query's meaning, the named speakers, the keywords) is what the chain found; otherwise it is dropped and the chain
reads as before. So the hits, their order and their scores are those of the sequential chain exactly; a wrong guess
costs only time. A store without ``read_ahead`` (or inside a transaction) reads when the answer is asked.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable

from ..engine.fusion import mentioned, without_names
from ..store.base import Capability, Store

SPEAKERS = "memory:speakers"  # held per workspace: {namespace: the speakers its queries' text hits showed}
MAX_SPEAKERS = 4096  # past this many, a namespace's guess stops learning (``mentioned`` runs over all of them)


def meaning_of(text: str, speakers: Iterable[str]) -> str:
    """The query without the names of the ``speakers`` it names (engine/fusion.py ``without_names``)."""
    return without_names(text, sorted(named_guess(text, speakers)))


def known_speakers(ws: Any, namespace: str) -> set[str]:
    """The speakers of ``namespace`` this workspace's queries have heard so far."""
    return ws.held(SPEAKERS, dict).setdefault(namespace, set())


def hear(ws: Any, namespace: str, speakers: Iterable[str]) -> None:
    """Remember the speakers a query's text hits showed (the next queries guess their names from them)."""
    known = known_speakers(ws, namespace)
    if len(known) < MAX_SPEAKERS:
        known.update(s for s in speakers if s)


def named_guess(text: str, speakers: Iterable[str]) -> set[str]:
    """The speakers among ``speakers`` that the query names."""
    names = sorted(speakers)
    return {t for t, hit in zip(names, mentioned(text, names)) if hit}


class Reads:
    """Reads started ahead, each under a key saying what it was asked with; ``take`` gives a read's answer when
    asked with the same key, else None (the read is dropped: the caller reads now)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._started: dict[str, tuple[Hashable, Any]] = {}

    def start(self, label: str, key: Hashable, read: Callable[[Any], Any]) -> None:
        """Start ``read(store)`` (on the second connection's store where there is one, else when taken)."""
        store = self.store
        if Capability.READ_AHEAD in store.capabilities:  # store/base.py ReadAhead
            self._started[label] = (key, store.read_ahead(read))
        else:
            self._started[label] = (key, _Later(lambda: read(store)))

    def running(self, label: str) -> bool:
        """Whether the read started under ``label`` is still in flight on the second connection (so the caller's
        connection is free meanwhile)."""
        started = self._started.get(label)
        return started is not None and started[1].running()

    def take(self, label: str, key: Hashable) -> Any | None:
        started = self._started.pop(label, None)
        if started is None or started[0] != key:
            return None
        return started[1].result()


class _Later:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.result = fn

    def running(self) -> bool:  # it runs when its answer is asked
        return False
