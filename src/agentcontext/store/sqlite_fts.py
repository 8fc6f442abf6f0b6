"""The text-index part of ``SQLiteStore`` (``sql_part.Part``): FTS5 searches, ranked by BM25 with the statistics of
the namespaces searched (``sqlite_text``), and phrase search; and how the SQLite dialect spells its conditions
(``SqlWhere``) and a safe ``MATCH`` (``fts_match``)."""
from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager
from typing import Any, Iterator, Sequence

from ..model import Change
from ..text import informative, query_terms
from . import sqlite_text
from .rows import Where, as_list
from .sql_part import Part


def fts_match(terms: list[str]) -> str:
    """A safe FTS5 MATCH expression: quoted terms joined by OR."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in terms)


class SqlWhere(Where):
    """``column IN (?, ?, ...)``; callers slice long lists (``SQLiteStore.CHUNK``)."""

    def eq_any(self, column: str, values: list[str] | None) -> None:
        if values is None:
            return
        if len(values) == 1:
            self.parts.append(f"{column} = ?")
        else:
            self.parts.append(f"{column} IN ({','.join('?' * len(values))})")
        self.params.extend(values)


class SQLiteText(Part):
    """Text search over the FTS5 index (the writes keep it: ``SQLiteStore._write_nodes``, ``_unindex``)."""

    __slots__ = ()

    @property
    def _lock(self) -> AbstractContextManager[Any]:
        return self.store._lock

    @property
    def _depth(self) -> int:
        return self.store._depth

    @property
    def _scope_stats(self) -> sqlite_text.ScopeStats:
        return self.store._scope_stats

    def change_counter(self) -> int:
        return self.store.change_counter()

    def changes_since(self, seq: int, limit: int | None = None) -> list[Change]:
        return self.store.changes_since(seq, limit)

    def text_search(self, query: str, namespace=None, kind=None, limit: int = 50, common: float | None = None,
                    ids: Sequence[str] | None = None,
                    within: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """Rows ranked by BM25 with the statistics of the namespaces searched, or of the ``within`` rows alone
        (``sqlite_text``): what other namespaces (or rows) hold never moves a score."""
        terms = query_terms(query)
        if not terms or (ids is not None and not ids) or (within is not None and not within):
            return []
        namespaces = as_list(namespace)
        with self._lock, self._one_read():  # the statistics and the rows they rank from one state of the store
            if within is not None:
                def scope(totals):
                    return sqlite_text.rows_of_ids(self._read, list(within), namespaces)
            elif namespaces is None or sqlite_text.alone(self._read, namespaces):
                return self._table_search(self._informative_terms(terms, common), namespaces, kind, limit, ids)
            else:
                names = list(dict.fromkeys(namespaces))
                counter = self.change_counter()

                def scope(totals):
                    return self._scope_stats.get(self._read, names, (counter, *totals), self._changes_after)
            return sqlite_text.scoped_search(self._read, terms, lambda t: fts_match([t]), scope, as_list(kind),
                                             None if ids is None else list(ids), limit, common)

    @contextmanager
    def _one_read(self) -> Iterator[None]:
        """Several reads that must see one state of the file (a read transaction: another process's commit in
        between is not seen); inside a write transaction they already do."""
        if self._depth or self._db.in_transaction:
            yield
            return
        self._db.execute("BEGIN")  # deferred: the first read fixes the snapshot; takes no lock
        try:
            yield
        finally:
            self._db.execute("COMMIT")

    def _changes_after(self, seq: int) -> list | None:
        """The changes after ``seq`` that text statistics follow (``sqlite_text.ScopeStats``), None if too many."""
        found = self.changes_since(seq, limit=sqlite_text.ScopeStats.FOLLOW + 1)
        return None if len(found) > sqlite_text.ScopeStats.FOLLOW else found

    def _table_search(self, terms: list[str], namespace: list[str] | None, kind, limit: int,
                      ids: Sequence[str] | None) -> list[tuple[str, float]]:
        """FTS5's own ranking: the whole table's statistics, which are the namespaces' when nothing lies outside."""
        if not terms:
            return []
        out: list[tuple[str, float]] = []
        for chunk in [None] if ids is None else self._chunks(list(dict.fromkeys(ids))):
            where = SqlWhere()
            where.add("fts MATCH ?", fts_match(terms))
            where.eq_any("n.namespace", namespace)
            where.eq_any("n.kind", as_list(kind))
            where.eq_any("n.id", None if chunk is None else list(chunk))
            where.add("n.retracted_at IS NULL")
            sql = (f"SELECT n.id, -{sqlite_text.BM25} AS score FROM fts JOIN nodes n ON n.rid = fts.rowid"
                   f"{where.sql()} ORDER BY {sqlite_text.BM25}, n.rid LIMIT {int(limit)}")
            out.extend((r[0], float(r[1])) for r in self._read(sql, where.params))
        if ids is not None:
            out.sort(key=lambda hit: -hit[1])
        return out[: int(limit)]

    def phrase_search(self, phrase: str, namespace=None, kind=None, limit: int | None = None) -> list[str]:
        if not query_terms(phrase):
            return []
        where = SqlWhere()
        where.add("fts MATCH ?", '"' + phrase.replace('"', '""') + '"')  # one FTS5 phrase: the words in a row
        where.eq_any("n.namespace", as_list(namespace))
        where.eq_any("n.kind", as_list(kind))
        where.add("n.retracted_at IS NULL")
        page = f" LIMIT {int(limit)}" if limit is not None else ""
        return [r[0] for r in self._read(f"SELECT n.id FROM fts JOIN nodes n ON n.rid = fts.rowid{where.sql()} "
                                         f"ORDER BY n.rid{page}", where.params)]

    def _informative_terms(self, terms: list[str], common: float | None) -> list[str]:
        """``terms`` but those too common in the whole table (``_table_search``'s: nothing lies outside)."""
        if len(terms) < 2:
            return terms
        total = self._read("SELECT count(*) FROM fts_docsize")[0][0]
        counts = {t: self._read("SELECT count(*) FROM fts WHERE fts MATCH ?", (fts_match([t]),))[0][0]
                  for t in terms} if total >= 1000 else {}
        return informative(terms, counts, total, common)
