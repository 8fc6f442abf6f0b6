"""The PostgreSQL schema, step by step. Each step runs inside the upgrade transaction (PostgreSQL DDL is
transactional, and the schema's writer lock is held); never edit a released one.

Text columns use the "C" collation so ordering and prefix ranges match SQLite's binary order exactly.
Timestamps stay sortable ISO-8601 text, as in SQLite, so ``as_of`` compares the same way on both backends.
"""
from __future__ import annotations

from . import Migrations

MIGRATIONS = Migrations("postgresql")

T = 'TEXT COLLATE "C"'
# Split what the default parser would keep whole (hosts, paths, selectors like design.agents, tags like
# intent:design) so single words match, as SQLite's unicode61 tokenizer does.
_SPLIT = "translate({col}, '._/:@-', '      ')"


def _tsv(col: str, weight: str) -> str:
    return f"setweight(to_tsvector('english'::regconfig, {_SPLIT.format(col=col)}), '{weight}')"


# A tsvector holds at most 1 MB: random text of 500k+ characters can exceed it and fail the insert, so only the
# first INDEXED_CHARS characters of a body are text-searchable (the whole body is still stored and returned).
INDEXED_CHARS = 300_000
# key A, title B, summary and tags C, content D (pg_text.py weighs them 4:3:2:1, like SQLite's bm25).
TSV = " || ".join([_tsv("key", "A"), _tsv("title", "B"), _tsv("summary", "C"), _tsv("tag_text", "C"),
                   _tsv(f"left(content, {INDEXED_CHARS})", "D")])

NODE_FIELDS = f"""kind {T} NOT NULL, namespace {T} NOT NULL, key {T} NOT NULL DEFAULT '',
        title {T} NOT NULL DEFAULT '', summary {T} NOT NULL DEFAULT '', content {T} NOT NULL DEFAULT '',
        props {T}, tags TEXT[] COLLATE "C", valid_from {T}, valid_until {T}, recorded_at {T}, retracted_at {T},
        version INTEGER NOT NULL, content_hash {T}, created_by {T}, embed_hash {T}, tokens INTEGER,
        embed_text {T}"""

# The schema as it stood before migrations were numbered (schemas of that time are version 0 and run it:
# every statement is IF NOT EXISTS, so on them it changes nothing). Frozen: change the schema in a new step.
INITIAL = [
    f"""CREATE TABLE IF NOT EXISTS nodes (
        rid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id {T} NOT NULL UNIQUE, {NODE_FIELDS},
        tag_text {T} NOT NULL DEFAULT '',
        tsv tsvector GENERATED ALWAYS AS ({TSV}) STORED)""",
    "CREATE INDEX IF NOT EXISTS nodes_ns_key ON nodes(namespace, key)",
    "CREATE INDEX IF NOT EXISTS nodes_ns_kind ON nodes(namespace, kind, key)",
    "CREATE INDEX IF NOT EXISTS nodes_kind ON nodes(kind, key)",
    "CREATE INDEX IF NOT EXISTS nodes_embed ON nodes(embed_hash)",
    "CREATE INDEX IF NOT EXISTS nodes_tags ON nodes USING gin(tags)",
    "CREATE INDEX IF NOT EXISTS nodes_tsv ON nodes USING gin(tsv)",
    f"""CREATE TABLE IF NOT EXISTS node_versions (
        id {T} NOT NULL, {NODE_FIELDS}, PRIMARY KEY (id, version))""",
    "CREATE INDEX IF NOT EXISTS versions_ns ON node_versions(namespace, recorded_at)",
    "CREATE INDEX IF NOT EXISTS versions_embed ON node_versions(embed_hash)",
    f"""CREATE TABLE IF NOT EXISTS edges (
        rid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, eid {T} NOT NULL, src {T} NOT NULL,
        type {T} NOT NULL, dst {T} NOT NULL, namespace {T} NOT NULL DEFAULT '',
        weight DOUBLE PRECISION NOT NULL DEFAULT 1.0, props {T}, valid_from {T}, valid_until {T},
        recorded_at {T} NOT NULL, retracted_at {T}, position BIGINT NOT NULL DEFAULT 0)""",
    "CREATE UNIQUE INDEX IF NOT EXISTS edges_live ON edges(eid) WHERE retracted_at IS NULL",
    "CREATE INDEX IF NOT EXISTS edges_src ON edges(src, type)",
    "CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst, type)",
    "CREATE INDEX IF NOT EXISTS edges_ns ON edges(namespace, type)",
    f"""CREATE TABLE IF NOT EXISTS vectors (hash {T} NOT NULL, model {T} NOT NULL, dim INTEGER NOT NULL,
        vector vector NOT NULL, PRIMARY KEY (hash, model))""",
    f"""CREATE TABLE IF NOT EXISTS tombstones (id {T} PRIMARY KEY, namespace {T}, kind {T}, purged_at {T},
        reason {T}, actor {T})""",
    f"""CREATE TABLE IF NOT EXISTS records (kind {T} NOT NULL, key {T} NOT NULL, value {T} NOT NULL,
        updated_at {T} NOT NULL, PRIMARY KEY (kind, key))""",
    f"""CREATE TABLE IF NOT EXISTS audit (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at {T} NOT NULL,
        principal {T} NOT NULL, action {T} NOT NULL, target {T} NOT NULL, outcome {T} NOT NULL, detail {T})""",
    "CREATE INDEX IF NOT EXISTS audit_principal ON audit(principal, at)",
    f"""CREATE TABLE IF NOT EXISTS changes (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at {T} NOT NULL,
        actor {T}, op {T} NOT NULL, target {T} NOT NULL, namespace {T}, detail {T})""",
]


@MIGRATIONS.step(1, "initial schema")
def initial(db) -> None:
    for statement in INITIAL:
        db.execute(statement)


@MIGRATIONS.step(2, "tombstones name the erasure that made them (no import brings an erased id back)")
def tombstone_erasure(db) -> None:
    db.execute("ALTER TABLE tombstones ADD COLUMN IF NOT EXISTS erasure TEXT COLLATE \"C\"")


@MIGRATIONS.step(3, "search in the server: props containment (GIN), links by prev, memory titles, one HNSW index "
                    "per model")
def server_search(db) -> None:
    from ..pg_vectors import create_ann_index

    db.execute("CREATE INDEX IF NOT EXISTS nodes_props ON nodes USING gin ((props::jsonb) jsonb_path_ops)")
    db.execute("CREATE INDEX IF NOT EXISTS nodes_ns_kind_title ON nodes(namespace, kind, title)")
    db.execute("CREATE INDEX IF NOT EXISTS nodes_prev ON nodes (((props::jsonb) ->> 'prev')) "
               "WHERE ((props::jsonb) ->> 'prev') IS NOT NULL")  # nodes_naming('prev'): a turn's followers
    for model, dim in db.execute("SELECT DISTINCT model, dim FROM vectors ORDER BY model, dim").fetchall():
        create_ann_index(db, model, dim)


# The columns of a version row (the view ``versions`` reads the superseded rows and the live ones under them).
VERSION_COLS = ("id, kind, namespace, key, title, summary, content, props, tags, valid_from, valid_until, recorded_at, "
                "retracted_at, version, content_hash, created_by, embed_hash, tokens")


@MIGRATIONS.step(4, "a compact layout for bulk loads: the HNSW index holds only the vectors nodes' texts have, a "
                    "node's current version held once (node_versions keeps the superseded ones; the view versions "
                    "reads both)")
def compact_layout(db) -> None:
    from ..pg_vectors import create_ann_index

    # Vectors stayed float32 here (migration 5 holds them as halfvec). The HNSW indexes are partial indexes
    # whose predicate gains ``searched``: dropped first, built again after the column is filled.
    for (index,) in db.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND "
                               "tablename = 'vectors' AND indexname LIKE 'vectors\\_ann\\_%'").fetchall():
        db.execute(f'DROP INDEX "{index}"')
    db.execute("ALTER TABLE vectors ADD COLUMN IF NOT EXISTS searched BOOLEAN NOT NULL DEFAULT false")
    # Only the vectors of live nodes' texts are searched (the HNSW index holds them alone): a conversation turn's
    # context vector (its pair with the turn before) is read by hash, never searched, and was half the index.
    # (the casts: the identity on the text keys of that time; on a schema adopted after step 10 keyed vectors by
    # bytes, or step 13 the nodes' hashes too, it matches nothing, and the step changes no row, as every step run
    # again on an adopted schema)
    db.execute("UPDATE vectors v SET searched = true WHERE pg_typeof(v.hash) = 'text'::regtype AND EXISTS (SELECT 1 "
               "FROM nodes n WHERE n.embed_hash::text = v.hash::text)")
    # Versions: every write held the current version twice (the live row and the same row in node_versions, its
    # content included: about a third of a memory's bytes). From here node_versions keeps only superseded versions;
    # a write that replaces a live row first moves it there (PostgresStore._write_nodes, SQLStore.retract_nodes).
    # The indexes go first and come back after the delete (most rows go: cheaper to build them again).
    for index in ("versions_ns", "versions_embed"):
        db.execute(f"DROP INDEX IF EXISTS {index}")
    db.execute("DELETE FROM node_versions v USING nodes n WHERE n.id = v.id AND n.version = v.version")
    db.execute("CREATE INDEX versions_ns ON node_versions(namespace, recorded_at)")
    db.execute("CREATE INDEX versions_embed ON node_versions(embed_hash)")
    from ..pg_recorded import has_times  # a schema adopted from step 18 on: the view stands as that step made it
    if not has_times(db):  # (its nodes' recorded time a timestamp, which this view cannot union with the text)
        db.execute(f"CREATE OR REPLACE VIEW versions AS SELECT {VERSION_COLS}, embed_text FROM node_versions "
                   f"UNION ALL SELECT {VERSION_COLS}, NULL AS embed_text FROM nodes")
    for model, dim in db.execute("SELECT DISTINCT model, dim FROM vectors ORDER BY model, dim").fetchall():
        create_ann_index(db, model, dim)


@MIGRATIONS.step(5, "vectors held as halfvec (float16: 2 bytes a dimension), their HNSW indexes over halfvec")
def half_vectors(db) -> None:
    """A 384-d float32 row (~1,690 bytes) fits 4 to a page, a halfvec one 8: the table and its HNSW index take about
    half (issue 23 s2; recall and score figures in pg_vectors.py). The table is rewritten once, its indexes built
    again; a value beyond float16's range refuses the step (the store stays at step 4)."""
    import psycopg

    from ...errors import StoreError
    from ..pg_vectors import HALF_MAX, create_ann_index

    for (index,) in db.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND "
                               "tablename = 'vectors' AND indexname LIKE 'vectors\\_ann\\_%'").fetchall():
        db.execute(f'DROP INDEX "{index}"')
    try:  # the error is named here; the upgrade's transaction rolls back whole
        db.execute("ALTER TABLE vectors ALTER COLUMN vector TYPE halfvec USING vector::halfvec")
    except psycopg.errors.NumericValueOutOfRange as exc:
        raise StoreError(f"this store holds a vector with a value beyond +-{HALF_MAX:.0f} ({exc}), which migration 5 "
                         "cannot convert to halfvec; delete or rescale that vector (SELECT hash, model FROM vectors "
                         "WHERE ...), then open the store again") from exc
    for model, dim in db.execute("SELECT DISTINCT model, dim FROM vectors ORDER BY model, dim").fetchall():
        create_ann_index(db, model, dim)


@MIGRATIONS.step(6, "a node's text to embed held once: NULL when it is the content or the content after the title")
def embed_text_once(db) -> None:
    """A memory embeds ``title: content`` (its speaker, then what was said) and a document often its content: about
    240 bytes a memory held twice (rows.held_embed_text; read back by rows.whole_embed_text and PostgresStore.
    EMBED_TEXT). Rewritten by ALTER ... TYPE ... USING, one pass that leaves the table compact (an UPDATE of every row
    would leave each old row version dead until a VACUUM FULL); its indexes are built again."""
    db.execute(f"""ALTER TABLE nodes ALTER COLUMN embed_text TYPE {T} USING CASE WHEN embed_text <> '' AND
        (embed_text = content OR (title <> '' AND embed_text = title || ': ' || content)) THEN NULL ELSE embed_text
        END""")


# The tenant tables (the namespace is the tenant: docs/SHARDING.md) and their primary keys from step 7 on: each holds
# the tenant column, so the same tables distribute on Citus by it (create_distributed_table(t, 'namespace')). The
# namespace comes last where callers look rows up by id alone (a node, its versions, a tombstone), so those lookups
# still seek the key's prefix; edges are never looked up by rid, so theirs leads with it.
TENANT_KEYS = {"nodes": ("rid", "namespace"), "node_versions": ("id", "version", "namespace"),
               "edges": ("namespace", "rid"), "tombstones": ("id", "namespace")}


@MIGRATIONS.step(7, "the tenant (namespace) in every tenant table's primary key: nodes (rid, namespace), node_versions "
                    "(id, version, namespace), edges (namespace, rid), tombstones (id, namespace) with a namespace "
                    "never NULL")
def tenant_keys(db) -> None:
    # Citus requires the distribution column in every primary key and unique constraint of a distributed table,
    # and an ON CONFLICT target must name a unique index: the tombstones' upsert now names (id, namespace)
    # (PostgresStore.TOMBSTONE_KEY). Kept on one server and dropped by the Citus profile (docs/SHARDING.md): the
    # unique ids across namespaces nodes_id_key UNIQUE(id) and the live-edge index edges_live (eid), which no
    # ON CONFLICT names (a node never changes namespace: one server still refuses a second namespace for an id).
    # A tombstone's namespace was NULL only when a restored one named none; '' says the same and can be a key.
    db.execute("UPDATE tombstones SET namespace = '' WHERE namespace IS NULL")
    db.execute("ALTER TABLE tombstones ALTER COLUMN namespace SET DEFAULT '', ALTER COLUMN namespace SET NOT NULL")
    for table, key in TENANT_KEYS.items():
        (name,) = db.execute("SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(%s) AND contype = 'p'",
                             (table,)).fetchone()
        db.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}", ADD CONSTRAINT {table}_pkey PRIMARY KEY '
                   f"({', '.join(key)})")


@MIGRATIONS.step(8, "a delta of unindexed vectors: new vectors land pending (outside the HNSW index), nearest scores "
                    "them exactly, a fold moves them into the index (store/pg_delta.py)")
def vector_delta(db) -> None:
    # No row is rewritten and no index rebuilt: the column's default is a constant (a catalog change), the partial
    # btree starts empty and the constraint holds for every row there is (NOT VALID skips scanning them).
    db.execute("ALTER TABLE vectors ADD COLUMN IF NOT EXISTS pending BOOLEAN NOT NULL DEFAULT false")
    db.execute("CREATE INDEX IF NOT EXISTS vectors_pending ON vectors (model, dim) WHERE pending")
    db.execute("ALTER TABLE vectors DROP CONSTRAINT IF EXISTS vectors_one_state")
    db.execute("ALTER TABLE vectors ADD CONSTRAINT vectors_one_state CHECK (NOT (searched AND pending)) NOT VALID")
    # Statistics for the new column (all false): without them the planner takes half the rows for pending and
    # scores the delta by a parallel scan of the whole table (measured at 200,000 memories: 440-640 ms where the
    # partial index takes 25 ms); ANALYZE samples 30,000 rows, a second or two at 1,000,000 memories.
    db.execute("ANALYZE vectors")


@MIGRATIONS.step(9, "a conversation turn's context vector held as int8 (vectors.q8, q8_scale): the rows no index "
                    "walks, one byte a dimension instead of two (store/pg_q8.py)")
def int8_context_vectors(db) -> None:
    """The context rows (neither searched nor pending) read, quantized in the client and written back (pg_q8.
    pack_rows, 20,000 rows a statement), then ``vectors`` rewritten once (an ALTER ... USING that is no plain column
    reference rewrites the table: only the live row versions are copied, so the table is as compact as a fresh
    load) and its indexes, the HNSW ones included, built again (time at 200,000 memories: docs/POSTGRES_SCALE.md).
    Run again on a schema it already changed (an adopted one), it changes no row."""
    from ..pg_q8 import UNPACKED, UNPACKED_INDEX, pack_rows

    db.execute("ALTER TABLE vectors ADD COLUMN IF NOT EXISTS q8 BYTEA, ADD COLUMN IF NOT EXISTS q8_scale REAL, "
               "ALTER COLUMN vector DROP NOT NULL")
    while pack_rows(db, f"(hash, model) IN (SELECT hash, model FROM vectors WHERE {UNPACKED} LIMIT 20000)", ()):
        pass
    db.execute("ALTER TABLE vectors ALTER COLUMN q8_scale TYPE REAL USING q8_scale + 0")  # the rewrite
    db.execute("ALTER TABLE vectors DROP CONSTRAINT IF EXISTS vectors_held")
    db.execute("ALTER TABLE vectors ADD CONSTRAINT vectors_held CHECK (CASE WHEN vector IS NULL THEN q8 IS NOT NULL "
               "AND q8_scale IS NOT NULL AND NOT searched AND NOT pending ELSE q8 IS NULL END)")
    db.execute(UNPACKED_INDEX)  # empty now: the context rows written from here on, until a pack
    db.execute("ANALYZE vectors")


@MIGRATIONS.step(10, "vectors keyed by the hash's bytes: vectors.hash bytea (a SHA-256 digest's 32 bytes, not 64 hex "
                     "characters), through actx_hash / actx_hex (store/pg_hash.py)")
def hash_bytes(db) -> None:
    """One rewrite of ``vectors`` (ALTER ... TYPE ... USING: only the live row versions are copied) and every index
    of it built again, the key and the HNSW ones included (``maintenance_work_mem`` raised for the builds, as a bulk
    load does). The API keeps text hashes (pg_hash: lossless for any text). Run again on a schema it already changed
    (an adopted one), it changes no row."""
    from ..pg_hash import FUNCTIONS, has_bytes
    from ..pg_vectors import HNSW_EF_CONSTRUCTION, HNSW_M, ann_graph, ann_index_name, create_ann_index
    from ..pg_vectors import raise_build_settings

    for statement in FUNCTIONS:
        db.execute(statement)
    if has_bytes(db):
        return
    raise_build_settings(db)  # the builds' memory and workers raised until the upgrade commits, as a load's
    # an HNSW index of an older graph is dropped before the rewrite and built once after it with the graph a store
    # now builds (step 11 then finds it current): the rewrite would otherwise build it, and step 11 build it again
    graphs = {(model, int(dim)): ann_graph(db, model, dim)
              for model, dim in db.execute("SELECT DISTINCT model, dim FROM vectors").fetchall()}
    stale = [key for key, graph in graphs.items() if graph not in (None, (HNSW_M, HNSW_EF_CONSTRUCTION))]
    for model, dim in stale:
        db.execute(f"DROP INDEX {ann_index_name(model, dim)}")
    db.execute("ALTER TABLE vectors ALTER COLUMN hash TYPE bytea USING actx_hash(hash)")
    for model, dim in stale:
        create_ann_index(db, model, dim)
    db.execute("ANALYZE vectors")


@MIGRATIONS.step(11, "a denser HNSW graph (pg_vectors.HNSW_M, HNSW_EF_CONSTRUCTION): the vectors' HNSW indexes built "
                     "again, recall@10 of the dense search at 1,000,000 memories >= 0.98 (docs/POSTGRES_SCALE.md)")
def denser_graph(db) -> None:
    """Each HNSW index built again with the graph a store now builds (no row changes; the build's memory and worker
    settings raised for this transaction, as a bulk load's build). Time: the index's build, minutes at 1,000,000
    memories (docs/POSTGRES_SCALE.md). An index already of that graph (an adopted schema) is left alone."""
    from ..pg_vectors import raise_build_settings, rebuild_ann_indexes

    raise_build_settings(db)
    rebuild_ann_indexes(db)


@MIGRATIONS.step(12, "the text index's pending list kept small (pg_text.PENDING_KB): every search of the index reads "
                     "it whole")
def small_text_pending_list(db) -> None:
    """GIN adds a row's entries to a pending list, merged into the index when it outgrows ``gin_pending_list_limit``
    (4 MB by default: ~450 pages, read by every text statement of a large store: 1.3-2 ms each, issue 23 s3). The
    index's own limit is set (a catalog change: no row or index page is rewritten; kept when an import builds the
    index again, whose definition carries it) and the list there is merged now (a second or less: at most 4 MB)."""
    from ..pg_text import PENDING_KB

    if db.execute("SELECT to_regclass('nodes_tsv') IS NOT NULL").fetchone()[0]:
        db.execute(f"ALTER INDEX nodes_tsv SET (gin_pending_list_limit = {int(PENDING_KB)})")
        db.execute("SELECT gin_clean_pending_list('nodes_tsv'::regclass)")


@MIGRATIONS.step(13, "the nodes' hashes held as bytes: content_hash and embed_hash bytea in nodes and node_versions (a "
                     "SHA-256 digest's 32 bytes, not 64 hex characters; store/pg_hash.py), and a memory's updated_at "
                     "held once while it equals its created_at (store/pg_props.py)")
def node_hash_bytes(db) -> None:
    """One rewrite of ``nodes`` and one of ``node_versions`` (ALTER ... TYPE ... USING ``actx_hash``: only the live
    row versions are copied) and their indexes built again (``maintenance_work_mem`` raised for the builds, as a bulk
    load does); the view ``versions`` made again over the new types. The API keeps text hashes (``pg_hash.text``).
    The same rewrite leaves a memory's ``updated_at`` out of its props text while it equals its ``created_at``
    (``pg_props``: marked by the text's second character; reads give it back). Run again on a schema it already
    changed (an adopted one), it changes no row."""
    from ..pg_hash import FUNCTIONS, nodes_bytes
    from ..pg_props import HELD_SQL
    from ..pg_vectors import raise_build_settings

    for statement in (*FUNCTIONS, HELD_SQL):
        db.execute(statement)
    if nodes_bytes(db):
        return
    raise_build_settings(db)
    db.execute("DROP VIEW IF EXISTS versions")  # a view's column types cannot change under it
    for table in ("nodes", "node_versions"):  # one rewrite each: the hashes and the props (pg_props) with them
        db.execute(f"ALTER TABLE {table} ALTER COLUMN content_hash TYPE bytea USING actx_hash(content_hash), "
                   "ALTER COLUMN embed_hash TYPE bytea USING actx_hash(embed_hash), "
                   f"ALTER COLUMN props TYPE {T} USING actx_props_held(props)")
    db.execute(f"CREATE VIEW versions AS SELECT {VERSION_COLS}, embed_text FROM node_versions "
               f"UNION ALL SELECT {VERSION_COLS}, NULL AS embed_text FROM nodes")
    db.execute("ANALYZE nodes")
    db.execute("ANALYZE node_versions")


@MIGRATIONS.step(14, "BM25's counts exact: text_counts (live rows per lexeme and namespace) and text_totals (live rows "
                     "and their lexemes per namespace), kept by triggers on nodes in every write's transaction "
                     "(store/pg_text_counts.py)")
def exact_text_counts(db) -> None:
    """Two tables, three statement-level triggers and one pass over the live rows' tsvectors to fill them (200,000
    memories: see docs/POSTGRES_SCALE.md). Run again on a schema that has them, it counts them again."""
    from ..pg_text_counts import install

    install(db)


@MIGRATIONS.step(15, "the context vectors a bulk load wrote whole held as int8 now, and vectors rewritten compact "
                     "when they were many (store/pg_q8.py)")
def packed_context_vectors(db) -> None:
    """The context rows still holding a ``halfvec`` (a bulk load before this step wrote them whole; a pack held them
    as int8 only after a fold) read in key order, quantized in the client and written back (``pg_q8.pack_rows``,
    ``PACK_ROWS`` a statement), then, when they were a tenth of the table or more, ``vectors`` rewritten once (only
    the live row versions copied, as migration 9 does) and its indexes built again, the HNSW ones included, with a
    bulk load's build settings. Fewer are left as space the table reuses. Run again, it finds nothing to pack."""
    from ..pg_q8 import PACK_ROWS, UNPACKED, pack_rows
    from ..pg_vectors import raise_build_settings

    rows = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    packed, after = 0, None
    while True:  # key ranges of PACK_ROWS rows (one pass over the key; a LIMIT on the unpacked index would
        # walk the rows packed before it again, dead to this transaction, every round)
        keys = "" if after is None else "AND (hash, model) > (%s, %s) "
        last = db.execute(f"SELECT hash, model FROM (SELECT hash, model FROM vectors WHERE {UNPACKED} {keys}ORDER BY "
                          "hash, model LIMIT %s) k ORDER BY hash DESC, model DESC LIMIT 1",
                          (*(after or ()), PACK_ROWS)).fetchone()
        if last is None:
            break
        packed += pack_rows(db, f"{UNPACKED} {keys}AND (hash, model) <= (%s, %s)", (*(after or ()), *last))
        after = tuple(last)
    if packed and packed * 10 >= rows:
        raise_build_settings(db)
        db.execute("ALTER TABLE vectors ALTER COLUMN q8_scale TYPE REAL USING q8_scale + 0")  # the rewrite
    if packed:
        db.execute("ANALYZE vectors")


@MIGRATIONS.step(16, "the props a ranking reads held as columns of nodes: conversation_id, created_at, pair_hash "
                     "(bytes), prev, user_id when their value is a string, cut from the props text; nodes_prev a "
                     "plain btree of the prev column (store/pg_props.py)")
def props_columns(db) -> None:
    """One rewrite of ``nodes`` (five columns added, then filled and the props text cut in one ALTER ... TYPE ...
    USING: every USING reads the row as it was) and its indexes built again (``maintenance_work_mem`` raised, as a
    bulk load does); ``nodes_prev`` made again over the column, the view ``versions`` made again with the nodes' props
    whole (``actx_props``). ``node_versions`` keeps whole texts. A text the cut would not give back exactly stays whole
    (``actx_props_split``), its columns filled all the same. Run again on a schema it already changed (an adopted one),
    it changes no row."""
    from ..pg_props import READ_SQL, SPLIT_SQL, read_sql
    from ..pg_vectors import raise_build_settings

    db.execute(SPLIT_SQL)
    db.execute(READ_SQL)
    if db.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = "
                  "'nodes' AND column_name = 'pair_hash'").fetchone():
        return
    raise_build_settings(db)
    db.execute("DROP VIEW IF EXISTS versions")
    db.execute("DROP INDEX IF EXISTS nodes_prev")
    db.execute(f"ALTER TABLE nodes ADD COLUMN conversation_id {T}, ADD COLUMN created_at {T}, "
               f"ADD COLUMN pair_hash bytea, ADD COLUMN prev {T}, ADD COLUMN user_id {T}")
    # each column a string value of the props (a jsonb read: every props text parses, the GIN index nodes_props
    # reads each so), the props text cut where that gives it back exactly (actx_props_split)
    moved = {k: f"CASE WHEN jsonb_typeof(props::jsonb -> '{k}') = 'string' THEN props::jsonb ->> '{k}' END"
             for k in ("conversation_id", "created_at", "pair_hash", "prev", "user_id")}
    db.execute("ALTER TABLE nodes " + ", ".join(
        f"ALTER COLUMN {k} TYPE bytea USING actx_hash({v})" if k == "pair_hash" else f"ALTER COLUMN {k} TYPE {T} "
        f"USING {v}" for k, v in moved.items()) + f", ALTER COLUMN props TYPE {T} USING (actx_props_split(props))[1]")
    db.execute("CREATE INDEX nodes_prev ON nodes (prev) WHERE prev IS NOT NULL")  # a turn's followers
    live = VERSION_COLS.replace(" props,", f" {read_sql()} AS props,")
    db.execute(f"CREATE VIEW versions AS SELECT {VERSION_COLS}, embed_text FROM node_versions "
               f"UNION ALL SELECT {live}, NULL AS embed_text FROM nodes")
    db.execute("ANALYZE nodes")


@MIGRATIONS.step(17, "the change log's time held as a timestamp: changes.at timestamptz, changes.at_text the text only "
                     "where a timestamp would not give it back exactly (store/pg_changes.py)")
def change_times(db) -> None:
    """One rewrite of ``changes`` (a column added, then it and ``at`` filled in one ALTER ... TYPE ... USING: every
    USING reads the row as it was) and its key built again; each row's text is kept (``actx_at``: the canonical ones
    as timestamps, any other in ``at_text``), and a row holds one or the other (``changes_at_held``). Run again on a
    schema it already changed (an adopted one), it changes no row."""
    from ..pg_changes import AT_SQL, has_times

    db.execute(AT_SQL)
    if has_times(db):
        return
    db.execute(f"ALTER TABLE changes ADD COLUMN at_text {T}")
    db.execute(f"ALTER TABLE changes ALTER COLUMN at_text TYPE {T} USING CASE WHEN actx_at(at) IS NULL THEN at END, "
               "ALTER COLUMN at TYPE timestamptz USING actx_at(at), ALTER COLUMN at DROP NOT NULL, "
               "ADD CONSTRAINT changes_at_held CHECK (at IS NOT NULL OR at_text IS NOT NULL)")


@MIGRATIONS.step(18, "small columns: the change log's operation held as a one-character code (changes.op, the names "
                     "pg_changes.OPS numbered, any other name as it is) and a node's recorded time as a timestamp "
                     "(nodes.recorded_at timestamptz, nodes.recorded_text the text only where a timestamp would not "
                     "give it back exactly: store/pg_changes.py, pg_recorded.py)")
def small_columns(db) -> None:
    """One rewrite of ``changes`` (``op`` through ``pg_changes.OP_HOLD_SQL``: the store's own names as their codes,
    any other kept, behind the escape where it would read as a code) and one of ``nodes`` (a column added, then it
    and ``recorded_at`` filled in one ALTER ... TYPE ... USING: every USING reads the row as it was: a canonical time
    as a timestamp, ``actx_at`` of migration 17, any other in ``recorded_text``), their indexes built again
    (``maintenance_work_mem`` raised, as a bulk load does), and the view ``versions`` made again with the live rows'
    time read back as text (``pg_recorded.read_sql``). Run again on a schema it already changed (an adopted one: the
    nodes' ``recorded_text`` says so, both rewrites being one transaction), it changes no row."""
    from ..pg_changes import AT_SQL, OP_HOLD_SQL
    from ..pg_props import read_sql
    from ..pg_recorded import has_times, reads
    from ..pg_vectors import raise_build_settings

    if has_times(db):
        return
    raise_build_settings(db)
    db.execute(f"ALTER TABLE changes ALTER COLUMN op TYPE {T} USING {OP_HOLD_SQL.format(col='op')}")
    db.execute(AT_SQL)  # (migration 17 made it: the same function)
    db.execute("DROP VIEW IF EXISTS versions")  # a view's column types cannot change under it
    db.execute(f"ALTER TABLE nodes ADD COLUMN recorded_text {T}")
    db.execute(f"ALTER TABLE nodes ALTER COLUMN recorded_text TYPE {T} USING CASE WHEN actx_at(recorded_at) IS NULL "
               "THEN recorded_at END, ALTER COLUMN recorded_at TYPE timestamptz USING actx_at(recorded_at)")
    live = reads(VERSION_COLS.replace(" props,", f" {read_sql()} AS props,"))
    db.execute(f"CREATE VIEW versions AS SELECT {VERSION_COLS}, embed_text FROM node_versions "
               f"UNION ALL SELECT {live}, NULL AS embed_text FROM nodes")
    db.execute("ANALYZE nodes")


# --- a new store: the schema at the latest version in one step ---------------------------------------------------

# The node columns as steps 13 and 16 left them (the hashes bytea since step 13), in the order the steps added them
# (nodes.recorded_at a timestamp since step 18; node_versions' a text).
_NODE_FIELDS_NOW = NODE_FIELDS.replace(f"content_hash {T}", "content_hash bytea").replace(f"embed_hash {T}",
                                                                                          "embed_hash bytea")


def _latest_tables() -> list[str]:
    from ..pg_q8 import UNPACKED_INDEX
    from ..pg_text import PENDING_KB

    return [
        f"""CREATE TABLE nodes (rid BIGINT GENERATED ALWAYS AS IDENTITY, id {T} NOT NULL UNIQUE,
            {_NODE_FIELDS_NOW.replace(f"recorded_at {T}", "recorded_at timestamptz")},
            tag_text {T} NOT NULL DEFAULT '', tsv tsvector GENERATED ALWAYS AS ({TSV}) STORED,
            conversation_id {T}, created_at {T}, pair_hash bytea, prev {T}, user_id {T}, recorded_text {T},
            PRIMARY KEY (rid, namespace))""",
        "CREATE INDEX nodes_ns_key ON nodes(namespace, key)",
        "CREATE INDEX nodes_ns_kind ON nodes(namespace, kind, key)",
        "CREATE INDEX nodes_kind ON nodes(kind, key)",
        "CREATE INDEX nodes_embed ON nodes(embed_hash)",
        "CREATE INDEX nodes_tags ON nodes USING gin(tags)",
        f"CREATE INDEX nodes_tsv ON nodes USING gin(tsv) WITH (gin_pending_list_limit = {int(PENDING_KB)})",
        "CREATE INDEX nodes_props ON nodes USING gin ((props::jsonb) jsonb_path_ops)",
        "CREATE INDEX nodes_ns_kind_title ON nodes(namespace, kind, title)",
        "CREATE INDEX nodes_prev ON nodes (prev) WHERE prev IS NOT NULL",
        f"CREATE TABLE node_versions (id {T} NOT NULL, {_NODE_FIELDS_NOW}, PRIMARY KEY (id, version, namespace))",
        "CREATE INDEX versions_ns ON node_versions(namespace, recorded_at)",
        "CREATE INDEX versions_embed ON node_versions(embed_hash)",
        f"""CREATE TABLE edges (
            rid BIGINT GENERATED ALWAYS AS IDENTITY, eid {T} NOT NULL, src {T} NOT NULL,
            type {T} NOT NULL, dst {T} NOT NULL, namespace {T} NOT NULL DEFAULT '',
            weight DOUBLE PRECISION NOT NULL DEFAULT 1.0, props {T}, valid_from {T}, valid_until {T},
            recorded_at {T} NOT NULL, retracted_at {T}, position BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (namespace, rid))""",
        "CREATE UNIQUE INDEX edges_live ON edges(eid) WHERE retracted_at IS NULL",
        "CREATE INDEX edges_src ON edges(src, type)",
        "CREATE INDEX edges_dst ON edges(dst, type)",
        "CREATE INDEX edges_ns ON edges(namespace, type)",
        f"""CREATE TABLE vectors (hash bytea NOT NULL, model {T} NOT NULL, dim INTEGER NOT NULL, vector halfvec,
            searched BOOLEAN NOT NULL DEFAULT false, pending BOOLEAN NOT NULL DEFAULT false, q8 BYTEA, q8_scale REAL,
            PRIMARY KEY (hash, model),
            CONSTRAINT vectors_held CHECK (CASE WHEN vector IS NULL THEN q8 IS NOT NULL AND q8_scale IS NOT NULL
                AND NOT searched AND NOT pending ELSE q8 IS NULL END))""",
        "ALTER TABLE vectors ADD CONSTRAINT vectors_one_state CHECK (NOT (searched AND pending)) NOT VALID",
        "CREATE INDEX vectors_pending ON vectors (model, dim) WHERE pending",
        UNPACKED_INDEX,
        f"""CREATE TABLE tombstones (id {T}, namespace {T} NOT NULL DEFAULT '', kind {T}, purged_at {T},
            reason {T}, actor {T}, erasure {T}, PRIMARY KEY (id, namespace))""",
        *INITIAL[-4:-1],  # records, audit and its index: as step 1 made them
        f"""CREATE TABLE changes (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at timestamptz,
            actor {T}, op {T} NOT NULL, target {T} NOT NULL, namespace {T}, detail {T}, at_text {T},
            CONSTRAINT changes_at_held CHECK (at IS NOT NULL OR at_text IS NOT NULL))""",
        "REINDEX INDEX changes_pkey",  # as steps 17, 18 left it: no statistics (reltuples -1; a new index's 0)
    ]


@MIGRATIONS.create(18, "the schema at version 18 in one step (a new store)")
def latest_schema(db) -> None:
    """Every table, index, function, trigger and the view as the 18 steps leave them on an empty store, sent as one
    statement string (one round trip; the steps rewrote tables a dozen times: ~0.15 s a new store), then the same
    ANALYZEs (the planner's estimates of an empty table differ before and after one). Must stay identical to the
    replayed schema: tests/test_pg_schema_at_once.py compares their catalogs."""
    from .. import pg_text_counts
    from ..pg_changes import AT_SQL
    from ..pg_hash import FUNCTIONS
    from ..pg_props import HELD_SQL, READ_SQL, SPLIT_SQL, read_sql
    from ..pg_recorded import reads

    live = reads(VERSION_COLS.replace(" props,", f" {read_sql()} AS props,"))
    statements = [*FUNCTIONS, HELD_SQL, SPLIT_SQL, READ_SQL, AT_SQL, *_latest_tables(), *pg_text_counts.TABLES,
                  *(pg_text_counts._function(event) for event in pg_text_counts.EVENTS), *pg_text_counts.TRIGGERS,
                  f"CREATE VIEW versions AS SELECT {VERSION_COLS}, embed_text FROM node_versions "
                  f"UNION ALL SELECT {live}, NULL AS embed_text FROM nodes",
                  *(f"ANALYZE {table}" for table in ("vectors", "nodes", "node_versions", "text_counts",
                                                      "text_totals"))]
    db.execute(";\n".join(statements))
