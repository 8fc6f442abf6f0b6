"""A listing in recorded order on PostgreSQL (schema 18: a node's time a timestamp, its text kept only where the
timestamp would not give it back; store/pg_recorded.py): a page of it (``limit``) is sorted by the timestamp and its
texts rendered after the page where every matched row's text is canonical, and by the texts where one is not; the
order is SQLite's in every case (the same nodes written at the same times in both), in both directions, for every
page size, whole and light, with non-canonical texts mixed in or not."""
from __future__ import annotations

import pytest

from agentcontext.model import Node
from agentcontext.store import SQLiteStore, open_store

from .test_pg_change_times import GOOD, ODD

pytestmark = pytest.mark.postgres


def write(store, namespace: str, times: list[str]) -> None:
    """A node at each time, two at some (ties go by id), one retracted, one of another kind."""
    for i, at in enumerate(times):
        store.put_nodes([Node(id=f"{namespace}-{(2 * i) % len(times):02d}", kind="memory", namespace=namespace,
                              content=f"v {i}")], at=at)
    store.put_nodes([Node(id=f"{namespace}-tie-a", kind="memory", namespace=namespace, content="a"),
                     Node(id=f"{namespace}-tie-b", kind="memory", namespace=namespace, content="b")], at=times[0])
    store.put_nodes([Node(id=f"{namespace}-other", kind="note", namespace=namespace, content="n")], at=times[1])
    store.retract_nodes([f"{namespace}-03"])


def listing(store, namespace: str, **kwargs) -> list[tuple[str, str]]:
    return [(n.id, n.recorded_at) for n in store.find_nodes(namespace=namespace, kind="memory", **kwargs)]


def test_a_page_in_recorded_order_is_sqlites_with_or_without_kept_texts(pg_url, tmp_path, monkeypatch):
    pg, lite = open_store(pg_url), SQLiteStore(tmp_path / "s.db")
    canonical = [*GOOD, "2025-06-01T12:00:00.000000+00:00", GOOD[2]]  # (two nodes at one time: by id)
    for store in (pg, lite):
        write(store, "plain", canonical)
        write(store, "mixed", [*GOOD, *(t for t in ODD if t)])  # ("": the write's own time, not the same in both)
    assert pg.TIMED_PAGES and pg._read("SELECT count(*) FROM nodes WHERE namespace = 'mixed' AND recorded_text IS "
                                       "NOT NULL")[0][0] >= 4
    statements = []
    real = pg._read
    monkeypatch.setattr(pg, "_read", lambda sql, params=(): statements.append(sql) or real(sql, params))
    try:
        for namespace in ("plain", "mixed"):
            for order in ("recorded", "recorded_desc"):
                whole = listing(lite, namespace, order=order)
                assert listing(pg, namespace, order=order) == whole
                for limit in range(len(whole) + 2):
                    for light in (False, True):
                        statements.clear()
                        got = listing(pg, namespace, order=order, limit=limit, with_content=not light)
                        assert got == listing(lite, namespace, order=order, limit=limit, with_content=not light) \
                            == whole[:limit], (namespace, order, limit)
                        # a page: one statement by the timestamp; with a kept text among the rows, then the texts'
                        assert len(statements) == (1 if namespace == "plain" or not limit else 2), statements
                        assert "NULLS FIRST" in statements[0] and "NULLS FIRST" not in statements[-1][-60:] \
                            if len(statements) == 2 else "NULLS FIRST" in statements[0]
                assert listing(pg, namespace, order=order, limit=3, offset=2) == whole[2:5]
    finally:
        pg.close()
        lite.close()
