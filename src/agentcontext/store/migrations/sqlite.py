"""The SQLite schema, step by step. Each step runs inside the upgrade transaction; never edit a released one."""
from __future__ import annotations

from ...errors import StoreError
from . import Migrations

MIGRATIONS = Migrations("sqlite")

# The schema as it stood before migrations were numbered (workspaces of that time are version 0 and run it:
# every statement is IF NOT EXISTS, so on them it changes nothing). Frozen: change the schema in a new step.
INITIAL = [
    """CREATE TABLE IF NOT EXISTS nodes (
        rid INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL DEFAULT '',
        title TEXT NOT NULL DEFAULT '', summary TEXT NOT NULL DEFAULT '', content TEXT NOT NULL DEFAULT '',
        props TEXT, tags TEXT, valid_from TEXT, valid_until TEXT, recorded_at TEXT, retracted_at TEXT,
        version INTEGER NOT NULL, content_hash TEXT, created_by TEXT, embed_hash TEXT, tokens INTEGER,
        embed_text TEXT)""",
    "CREATE INDEX IF NOT EXISTS nodes_ns_key ON nodes(namespace, key)",
    "CREATE INDEX IF NOT EXISTS nodes_ns_kind ON nodes(namespace, kind, key)",
    "CREATE INDEX IF NOT EXISTS nodes_kind ON nodes(kind, key)",
    "CREATE INDEX IF NOT EXISTS nodes_embed ON nodes(embed_hash)",
    """CREATE TABLE IF NOT EXISTS node_versions (
        id TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL DEFAULT '',
        title TEXT, summary TEXT, content TEXT, props TEXT, tags TEXT, valid_from TEXT, valid_until TEXT,
        recorded_at TEXT, retracted_at TEXT, version INTEGER NOT NULL, content_hash TEXT, created_by TEXT,
        embed_hash TEXT, tokens INTEGER, embed_text TEXT, PRIMARY KEY (id, version)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS versions_ns ON node_versions(namespace, recorded_at)",
    "CREATE INDEX IF NOT EXISTS versions_embed ON node_versions(embed_hash)",
    """CREATE TABLE IF NOT EXISTS node_tags (rid INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (tag, rid))
        WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS node_tags_rid ON node_tags(rid)",
    """CREATE TABLE IF NOT EXISTS edges (
        rowid INTEGER PRIMARY KEY, eid TEXT NOT NULL, src TEXT NOT NULL, type TEXT NOT NULL, dst TEXT NOT NULL,
        namespace TEXT NOT NULL DEFAULT '', weight REAL NOT NULL DEFAULT 1.0, props TEXT, valid_from TEXT,
        valid_until TEXT, recorded_at TEXT NOT NULL, retracted_at TEXT, position INTEGER NOT NULL DEFAULT 0)""",
    "CREATE UNIQUE INDEX IF NOT EXISTS edges_live ON edges(eid) WHERE retracted_at IS NULL",
    "CREATE INDEX IF NOT EXISTS edges_src ON edges(src, type)",
    "CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst, type)",
    "CREATE INDEX IF NOT EXISTS edges_ns ON edges(namespace, type)",
    """CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(key, title, summary, content, tags,
        tokenize = 'porter unicode61 remove_diacritics 2')""",
    # Vectors (1.5 KB each) live in a rowid table, appended in insert order, with a small unique index: as a
    # WITHOUT ROWID table keyed by a random hash, inserts rewrote big leaf pages (3x slower to insert and commit).
    """CREATE TABLE IF NOT EXISTS vectors (hash TEXT NOT NULL, model TEXT NOT NULL, dim INTEGER NOT NULL,
        vector BLOB NOT NULL)""",
    "CREATE UNIQUE INDEX IF NOT EXISTS vectors_key ON vectors(hash, model)",
    """CREATE TABLE IF NOT EXISTS tombstones (id TEXT PRIMARY KEY, namespace TEXT, kind TEXT, purged_at TEXT,
        reason TEXT, actor TEXT)""",
    """CREATE TABLE IF NOT EXISTS records (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
        updated_at TEXT NOT NULL, PRIMARY KEY (kind, key)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL,
        principal TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT)""",
    "CREATE INDEX IF NOT EXISTS audit_principal ON audit(principal, at)",
    """CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL,
        actor TEXT, op TEXT NOT NULL, target TEXT NOT NULL, namespace TEXT, detail TEXT)""",
]


@MIGRATIONS.step(1, "initial schema")
def initial(db) -> None:
    for statement in INITIAL:
        db.execute(statement)


@MIGRATIONS.step(2, "edges.rowid is named rid, as on PostgreSQL")
def edges_rid(db) -> None:
    db.execute("ALTER TABLE edges RENAME COLUMN rowid TO rid")


@MIGRATIONS.step(3, "FTS5 secure-delete: a deleted or replaced row leaves no term in the text index")
def fts_secure_delete(db) -> None:
    # Without it, DELETE FROM fts only appends delete markers: the row's terms and positions stay in fts_data
    # segments until a merge happens to combine both. 'optimize' merges everything once, so what deletes before
    # this step left behind goes too (a one-time rewrite of the index).
    db.execute("INSERT INTO fts(fts, rank) VALUES ('secure-delete', 1)")
    db.execute("INSERT INTO fts(fts) VALUES ('optimize')")


@MIGRATIONS.step(4, "tombstones name the erasure that made them (no import brings an erased id back)")
def tombstone_erasure(db) -> None:
    db.execute("ALTER TABLE tombstones ADD COLUMN erasure TEXT")



FTS_COLUMNS = "key, title, summary, content, tags"


@MIGRATIONS.step(5, "text held once, hashes indexed by a prefix: a contentless text index, no embed_text equal to "
                    "content, no nodes_embed index, 16-character hash indexes on vectors and versions")
def text_once(db) -> None:
    # A memory's text was held four times (nodes.content, nodes.embed_text, node_versions.content and the text
    # index's own copy in fts_content). From here the text index keeps only its terms (contentless: nothing reads
    # its columns back, the text is in nodes); a row leaves it by FTS5's 'delete' command given the values it was
    # indexed with, read from the live node row (SQLiteStore._unindex), and secure-delete still removes its terms.
    # nodes.embed_text is NULL where it equals content (readers take coalesce(embed_text, content) when embed_hash
    # is set); old rows keep theirs: both forms read the same. nodes_embed (a random-hash index no query uses)
    # goes: every batch dirtied most of its pages as the store grew. The index is rebuilt from the live rows, so
    # what it holds is exactly what a later 'delete' will name.
    db.execute(f"""CREATE VIRTUAL TABLE fts_terms USING fts5({FTS_COLUMNS}, content = '',
        tokenize = 'porter unicode61 remove_diacritics 2')""")
    db.execute("INSERT INTO fts_terms(fts_terms, rank) VALUES ('secure-delete', 1)")
    db.execute(f"INSERT INTO fts_terms(rowid, {FTS_COLUMNS}) SELECT rid, key, title, summary, content, "
               "coalesce((SELECT group_concat(j.value, ' ') FROM json_each(n.tags) j), '') "
               "FROM nodes n WHERE retracted_at IS NULL ORDER BY rid")
    db.execute("DROP TABLE fts")  # secure_delete zeroes the old copy's pages as they are freed
    db.execute("ALTER TABLE fts_terms RENAME TO fts")
    db.execute("DROP INDEX IF EXISTS nodes_embed")
    # The two other indexes keyed by random content hashes keep only the first 16 characters (64 bits) of the hash:
    # entries a fifth to a tenth of the size, so the pages a batch of new hashes dirties (most of each index, once
    # the store is large) are that much fewer. Lookups compare the full hash as well (SQLiteStore.VECTOR_JOIN,
    # VERSION_USES, _hash_in); (hash, model) stays unique because the one writer replaces a held row
    # (SQLiteStore._upsert_vectors).
    db.execute("DROP INDEX IF EXISTS vectors_key")
    db.execute("CREATE INDEX vectors_hash16 ON vectors(substr(hash, 1, 16))")
    db.execute("DROP INDEX IF EXISTS versions_embed")
    db.execute("CREATE INDEX versions_hash16 ON node_versions(substr(embed_hash, 1, 16))")


VERSION_COLS = ("id, kind, namespace, key, title, summary, content, props, tags, valid_from, valid_until, recorded_at, "
                "retracted_at, version, content_hash, created_by, embed_hash, tokens")


@MIGRATIONS.step(6, "a node's current version is held once: node_versions keeps the superseded versions, the live "
                    "row is the current one (the view versions reads both); hashes indexed by 8 characters")
def current_version_once(db) -> None:
    # Every write held the current version twice: the live row in nodes and the same row in node_versions (about
    # 600 bytes and 11 us of a memory's insert, with two index entries, one of them keyed by a random hash). From
    # here node_versions holds only superseded versions: a write that replaces a live row first moves that row into
    # node_versions (SQLiteStore._write_nodes, and retract in SQLStore.retract_nodes). Every version reads from the
    # view below, the superseded rows and the live ones; a version row's embed_text was always NULL (the text to
    # embed is only read from the live row), so the view gives NULL for the live arm too and reads as before.
    # The version table's indexes go first and come back after the delete (most of its rows go: cheaper to build
    # them again over what is left than to delete every entry one by one; the upgrade of a 100,000-memory store
    # took 6.7 s with the indexes kept).
    for index in ("versions_ns", "versions_hash16", "vectors_hash16"):
        db.execute(f"DROP INDEX IF EXISTS {index}")
    db.execute("DELETE FROM node_versions WHERE EXISTS (SELECT 1 FROM nodes n WHERE n.id = node_versions.id "
               "AND n.version = node_versions.version)")
    db.execute("CREATE INDEX versions_ns ON node_versions(namespace, recorded_at)")
    db.execute(f"CREATE VIEW versions AS SELECT {VERSION_COLS}, embed_text FROM node_versions "
               f"UNION ALL SELECT {VERSION_COLS}, NULL AS embed_text FROM nodes")
    # The random-hash indexes keep 8 characters (32 bits) of the hash, not 16: entries about a third smaller, so the
    # pages a batch of new hashes dirties (most of each such index once the store is large) are a third fewer. A
    # shared prefix only costs reading one more row: lookups compare the full hash (SQLiteStore.HASH_PREFIX).
    # Which vectors a purge may drop asks whether any version still uses a hash: the superseded ones through
    # versions_hash8, the current ones through nodes_hash8 (it replaces what versions_hash16 held of them).
    db.execute("CREATE INDEX vectors_hash8 ON vectors(substr(hash, 1, 8))")
    db.execute("CREATE INDEX versions_hash8 ON node_versions(substr(embed_hash, 1, 8))")
    db.execute("CREATE INDEX nodes_hash8 ON nodes(substr(embed_hash, 1, 8))")


@MIGRATIONS.step(7, "live rows' hashes indexed by 256 buckets in row order: nodes_hash2 replaces nodes_hash8")
def hash_buckets(db) -> None:
    # nodes_hash8 was keyed by 8 characters of a random hash, so each batch of new rows dirtied most of its pages once
    # the store was large (about half of the per-memory cost's growth between 0 and 300,000 memories). It answers only
    # one question, for a purge: does any live row still use this vector's hash. nodes_hash2 is keyed by the first 2
    # characters (256 buckets), then the row id, then the next 8 characters: within a bucket the entries are in row
    # order and a new row has the highest rid, so every insert appends at the end of its bucket (a batch touches at
    # most ~256 leaf pages, whatever the store's size). A purge's lookup reads one bucket (a 256th of the index) and
    # compares the 8 characters in the index itself (covering), reading the row only for a match
    # (SQLiteStore.LIVE_USES).
    db.execute("DROP INDEX IF EXISTS nodes_hash8")
    db.execute("CREATE INDEX nodes_hash2 ON nodes(substr(embed_hash, 1, 2), rid, substr(embed_hash, 3, 8))")


@MIGRATIONS.step(8, "vectors keyed by their row: vid INTEGER PRIMARY KEY, found by hash through vector_keys (two "
                    "tiers: new keys in a small fresh tier, merged in key order into the settled one) instead of "
                    "vectors_hash8")
def vectors_by_row(db) -> None:
    # vectors_hash8 was keyed by 8 characters of a random hash, so once it had fewer pages than a batch had rows every
    # batch dirtied nearly all of them (4,590 pages at 1,000,000 memories with 4 KiB pages: three quarters of what a
    # batch wrote to the WAL grew by between 30,000 and 1,000,000 memories). The rows were already appended in rowid
    # order; from here that order is the table's key (vid, an INTEGER PRIMARY KEY: a VACUUM keeps it, as it may not a
    # bare rowid) and the hash lookup is a WITHOUT ROWID table of (tier, 8 characters of the hash, vid). A new vector's
    # key lands in tier 1, small (SQLiteStore.FRESH_KEYS): a batch dirties only its pages. When tier 1 has grown to an
    # eighth of tier 0 it is moved into tier 0 in one statement, in key order (each page of tier 0 rewritten once per
    # merge, not once per batch). Lookups seek both tiers (two seeks instead of one) and compare the full hash.
    # New rows' keys are written by the store after the rows, in one statement in key order (SQLiteStore: a batch's
    # writes and an import's); a trigger deletes a row's key with the row on every path (deletes, purges, erasure:
    # secure_delete zeroes its cell). (A trigger for the inserts cost 5 us a row and left the appended vector pages
    # 2-9% emptier.)
    # dim is derived from the float32 bytes (a virtual column, not stored): the row key's column costs a byte of each
    # row's header, and a 384-d row with a 3-byte row id filled a 16 KiB page to its last bytes (ten rows a page):
    # one byte more left nine. Without dim a row is two bytes smaller than before.
    bad = db.execute("SELECT hash, model, dim, length(vector) FROM vectors WHERE dim * 4 != length(vector) "
                     "LIMIT 1").fetchone()
    if bad:
        raise StoreError(f"cannot upgrade the store to schema 8 (nothing was changed): the vector of {bad[0]} "
                         f"({bad[1]}) holds {bad[3]} bytes, not {bad[2]} float32 values, so agentcontext did not write "
                         "it; delete that vector (or restore the file) and open the store again", hash=bad[0])
    db.execute("""CREATE TABLE vectors_by_row (vid INTEGER PRIMARY KEY, hash TEXT NOT NULL, model TEXT NOT NULL,
        vector BLOB NOT NULL, dim INTEGER GENERATED ALWAYS AS (length(vector) / 4) VIRTUAL)""")
    db.execute("INSERT INTO vectors_by_row(vid, hash, model, vector) SELECT rowid, hash, model, vector "
               "FROM vectors ORDER BY rowid")
    db.execute("DROP TABLE vectors")  # with vectors_hash8; secure_delete zeroes the old pages as they are freed
    db.execute("ALTER TABLE vectors_by_row RENAME TO vectors")
    db.execute("""CREATE TABLE vector_keys (tier INTEGER NOT NULL, k TEXT NOT NULL, vid INTEGER NOT NULL,
        PRIMARY KEY (tier, k, vid)) WITHOUT ROWID""")
    db.execute("INSERT INTO vector_keys(tier, k, vid) SELECT 0, substr(hash, 1, 8), vid FROM vectors ORDER BY 2, 3")
    db.execute("""CREATE TRIGGER vectors_unkeyed AFTER DELETE ON vectors BEGIN
        DELETE FROM vector_keys WHERE tier IN (0, 1) AND k = substr(old.hash, 1, 8) AND vid = old.vid; END""")
