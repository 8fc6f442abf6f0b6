"""The SQL of erasure that both backends share: which ids an erasure removed, dropping the history of a
rewritten node, and redacting the audit entries about erased records.

``SQLStore`` delegates to these functions (one line each) so the shared base stays about records. What only one
backend can do (SQLite's WAL checkpoint, PostgreSQL's VACUUM FULL) is its ``scrub()``.
"""
from __future__ import annotations

import json
import re
from typing import Any, Sequence

from ..errors import ValidationError
from .pg_hash import text as hash_text

ERASE_ACTION = "erase_entity"  # the receipts themselves are never redacted
TABLES = ("nodes", "node_versions", "edges", "vectors", "tombstones", "records", "audit", "changes", "text_counts")
CONTENT_TABLES = ("nodes", "node_versions", "edges", "vectors", "records", "audit", "text_counts")
"""The tables whose rows an erasure deletes or rewrites (tombstones and the change log only gain rows that hold ids,
never content, so their files need no rewrite; but for the change log's rows about records whose key names the
subject, which ``erase_records`` rewrites: then the change log is scrubbed too, ``LOG_TABLES``)."""
LOG_TABLES = ("changes",)
ERASED_KEY = "(erased)"  # what the change log's rows about an erased record name instead of its key


def key_path(path: Sequence[str]) -> list[str]:
    """A props key path of plain names (what ``find_by_props`` accepts)."""
    keys = [str(k) for k in path]
    if not keys or not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) for k in keys):
        raise ValidationError(f"a props path is one or more plain names, got {list(path)!r}", path=list(path))
    return keys


def erased(store: Any, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` (node ids, or the entity ids erasures were asked for) an erasure removed."""
    out: set[str] = set()
    for chunk in store._chunks(list(dict.fromkeys(ids)), per_statement=2):
        by_id, id_params = store._in("id", chunk)
        by_entity, entity_params = store._in("erasure", chunk)
        out.update(r[0] for r in store._read(
            store._q(f"SELECT id FROM tombstones WHERE erasure IS NOT NULL AND {by_id} "
                     f"UNION SELECT erasure FROM tombstones WHERE {by_entity}"), [*id_params, *entity_params]))
    return out


HELD_COLUMNS = ("key", "title", "summary", "content", "CAST(props AS TEXT)")


def nodes_holding(store: Any, needles: Sequence[str]) -> list[str]:
    """Ids of nodes any version of which (live, superseded or retracted) holds one of ``needles`` in its text or
    props (its words in order, anything between them), in the order the store recorded the first version
    holding one: one scan of every version (case folded: ASCII letters on SQLite, every letter on PostgreSQL)."""
    wanted = ["%".join(n.lower().split()) for n in dict.fromkeys(needles)]
    wanted = [w for w in wanted if w]
    if not wanted:
        return []
    out: dict[str, None] = {}
    like = store.LIKE_ANY_CASE
    per_needle = len(HELD_COLUMNS)
    for chunk in store._chunks(wanted, per_statement=per_needle):
        # each needle goes in as a parameter, never as SQL; a '_' in it matches any character: the caller confirms.
        # Column by column (no concatenation, no lower()): the scan reads each value once and stops at a match.
        test = " OR ".join(f"{col} {like} ?" for _ in chunk for col in HELD_COLUMNS)
        rows = store._read(store._q(f"SELECT id, min(recorded_at) FROM {store.VERSIONS} WHERE {test} GROUP BY id "
                                    "ORDER BY 2, 1"), [f"%{n}%" for n in chunk for _ in HELD_COLUMNS])
        out.update((r[0], None) for r in rows)
    return list(out)


def purge_history(store: Any, ids: Sequence[str], actor: str = "") -> dict[str, int]:
    """Delete every version of these nodes but the live one, and the embeddings no remaining version uses."""
    totals = {"versions": 0, "vectors": 0}
    with store.transaction():
        for chunk in store._chunks(list(dict.fromkeys(ids))):
            clause, params = store._in("v.id", chunk)
            old = (f"FROM node_versions v WHERE {clause} AND v.version < "
                   "(SELECT n.version FROM nodes n WHERE n.id = v.id AND n.namespace = v.namespace)")
            hashes = [hash_text(h) for (h,) in store._db.execute(
                store._q(f"SELECT DISTINCT v.embed_hash {old} AND v.embed_hash IS NOT NULL"), params)]
            live, live_params = store._in("id", chunk)
            totals["versions"] += store._exec(store._q(
                f"DELETE FROM node_versions WHERE {live} AND version < (SELECT n.version FROM nodes n WHERE "
                "n.id = node_versions.id AND n.namespace = node_versions.namespace)"), live_params)
            for part in store._chunks(hashes):
                used, used_params = store._hash_in("hash", part)
                totals["vectors"] += store._exec(store._q(
                    f"DELETE FROM vectors WHERE {used} AND {store._vectors_unused()}"), used_params)
        if totals["versions"]:
            store._log(store._now(), actor, "history.purge", "*", "", {"count": totals["versions"]})
    return totals


def redact_audit(store: Any, targets: Sequence[str], note: dict[str, Any]) -> int:
    """Replace the detail of the audit entries about ``targets`` by ``note``: who did what to which id and when
    stays, what the entry carried about the record goes. Erasure receipts are left as they are."""
    count = 0
    detail = json.dumps(note, sort_keys=True, default=str)
    with store.transaction():
        for chunk in store._chunks(list(dict.fromkeys(targets))):
            clause, params = store._in("target", chunk)
            count += store._exec(store._q(f"UPDATE audit SET detail = ? WHERE {clause} AND action <> ? "
                                          "AND (detail IS NULL OR detail <> ?)"),  # one redacted before: not again
                                 [detail, *params, ERASE_ACTION, detail])
    return count


def erase_records(store: Any, kind: str, keys: Sequence[str], actor: str = "") -> int:
    """Delete these records of ``kind`` and take their keys out of the change log (a key may name the subject: a
    conversation's head record is keyed by the conversation id, memory/chain.py): the rows about them keep what
    was done when by whom, their target becomes ``kind/(erased)``; one ``record.erase`` row says how many went.
    Returns how many rows changed (records and change log rows: scrub ``LOG_TABLES`` too when any did)."""
    keys = list(dict.fromkeys(keys))
    changed = 0
    with store.transaction():
        for chunk in store._chunks(keys, per_statement=2):
            clause, params = store._in("key", chunk)
            gone = store._exec(store._q(f"DELETE FROM records WHERE kind = ? AND {clause}"), [kind, *params])
            named, named_params = store._in("target", [f"{kind}/{k}" for k in chunk])
            changed += gone + store._exec(store._q(f"UPDATE changes SET target = ? WHERE {named}"),
                                          [f"{kind}/{ERASED_KEY}", *named_params])
        if changed:
            store._log(store._now(), actor, "record.erase", f"{kind}/{ERASED_KEY}", "", {"keys": len(keys)})
    return changed
