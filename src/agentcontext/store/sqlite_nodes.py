"""How the SQLite store writes a batch of changed nodes (``SQLiteStore._write_nodes``): their live rows (new ones
appended under row ids given inside the write transaction, rewritten ones updated after their superseded version is
kept), their text-index rows and their tag rows."""
from __future__ import annotations

import functools
import json
from typing import Any

from ..model import Node
from .rows import NODE_COLS


@functools.lru_cache(maxsize=4096)  # memories share a few tag sets (a conversation, a user, a type): encode each once
def tags_json(tags: tuple[str, ...]) -> str:
    return json.dumps(list(tags))


# A node's tags as the text index takes them (space-joined), cut from the row's JSON (``["a", "b"]`` -> ``a b``): exact
# when the JSON holds no escape (no quote, backslash, control or non-ASCII character in a tag), which the writer checks
FTS_TAGS = "CASE tags WHEN '[]' THEN '' ELSE replace(substr(tags, 3, length(tags) - 4), '\", \"', ' ') END"
# A batch of new nodes into the text index, read back from their rows (rid above the one bound) in row order, as the
# rows a statement step each would give it: the same terms, positions and segments
FTS_FROM_NODES = ("INSERT INTO fts(rowid, key, title, summary, content, tags) "
                  f"SELECT rid, key, title, summary, content, {FTS_TAGS} FROM nodes WHERE rid > ? ORDER BY rid")


def write_nodes(store: Any, changed: list[tuple[Node, tuple | None, str]]) -> None:
    """``changed``: (node, its live row or None, its props JSON) for each node that gets a new version."""
    db = store._db
    store._batch_cache(len(changed))
    # Row ids are ours to give inside the write transaction (BEGIN IMMEDIATE holds the lock), so the
    # text index and tag rows need no second lookup.
    top = 0
    if any(old is None for _, old, _ in changed):
        top = db.execute("SELECT coalesce(max(rid), 0) FROM nodes").fetchone()[0]
        seq = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'nodes'").fetchone()
        top = max(top, seq[0] if seq else 0)  # AUTOINCREMENT never reuses a purged node's rid
    inserts, updates, version_rows, tag_rows, rewritten, rids = [], [], [], [], [], []
    twice = store.CURRENT_IN_VERSIONS  # schema 5 and before: the current version was a version row too
    plain = True  # every tag list's JSON without escapes: the text index can take the tags from the rows
    for node, old, props_json in changed:  # one pass: every row of every table, in the order given
        tags = node.tags
        tags_text = tags_json(tuple(tags))
        row = (
            node.id, node.kind, node.namespace, node.key, node.title, node.summary, node.content,
            props_json, tags_text,
            node.valid_from, node.valid_until, node.recorded_at, None, node.version,
            node.content_hash, node.created_by, node.embed_hash, node.tokens,
        )
        embed_text = node.embed_text
        if embed_text == node.content:  # held once (migration 5): readers coalesce(embed_text, content)
            embed_text = None
        if old is None:
            top += 1
            rid = top
            inserts.append((rid, *row, embed_text))
        else:
            rid = old[1]
            rewritten.append(rid)
            updates.append((*row[1:], embed_text, node.id))
        if twice:
            version_rows.append((*row, None))  # the text to embed is only ever read from the live row
        rids.append(rid)
        if tags:
            " ".join(tags)  # what the text index holds of them (a tag that is not text fails here, as before)
            plain = plain and "\\" not in tags_text
            tag_rows.extend((rid, t) for t in set(tags))
    if rewritten:
        store._unindex(rewritten, purge=True)
        for chunk in [] if twice else store._chunks(rewritten):  # the versions they held are superseded
            db.execute(f"INSERT INTO node_versions({NODE_COLS}, embed_text) SELECT {NODE_COLS}, NULL FROM nodes "
                       f"WHERE rid IN ({','.join('?' * len(chunk))})", chunk)
        db.executemany(
            "UPDATE nodes SET kind=?, namespace=?, key=?, title=?, summary=?, content=?, props=?, tags=?, "
            "valid_from=?, valid_until=?, recorded_at=?, retracted_at=?, version=?, content_hash=?, "
            "created_by=?, embed_hash=?, tokens=?, embed_text=? WHERE id=?", updates)
    if inserts:
        store._insert_rows(f"INSERT INTO nodes(rid, {NODE_COLS}, embed_text)", inserts)
    if version_rows:
        db.executemany(f"INSERT INTO node_versions({NODE_COLS}, embed_text) VALUES ({','.join('?' * 19)})",
                       version_rows)
    if plain and not rewritten and store.FTS_FROM_ROWS:  # all new, in row order: read back in one statement
        db.execute(FTS_FROM_NODES, (top - len(inserts),))
    else:
        db.executemany("INSERT INTO fts(rowid, key, title, summary, content, tags) VALUES (?,?,?,?,?,?)",
                       [(rid, node.key, node.title, node.summary, node.content, " ".join(node.tags))
                        for rid, (node, _, _) in zip(rids, changed)])
    db.executemany("INSERT OR IGNORE INTO node_tags(rid, tag) VALUES (?,?)", tag_rows)
