"""The text index's pending list stays small (issue 23 s3, migration 12): GIN keeps a row's new entries in a pending
list that every search of the index reads whole, up to ``gin_pending_list_limit`` (4 MB by default: ~450 pages
read by every text statement of the 200,000 and 1,000,000-memory stores, 1.3-2 ms each, three to five a query).
The text index now holds at most ``pg_text.PENDING_KB`` there, whichever path writes the rows (the row path, a
batch, an import into an empty store that builds the index again); a store at schema 11 upgrades keeping every
search's hits and scores, and a SIGKILL mid-upgrade leaves it at schema 11, whole and usable."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentcontext.model import Node
from agentcontext.store import open_store, pg_text, transfer
from agentcontext.store.migrations import Migrations
from agentcontext.store.postgres import PostgresStore

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parent.parent
STEP = 12  # the migration that bounds the pending list
WORDS = ("harbour walrus otter lantern meadow quarry violin saffron glacier pepper orchard ember falcon marble "
         "thistle copper canyon willow beacon cobalt").split()


KB = getattr(pg_text, "PENDING_KB", 256)  # (the code before had no limit)
PENDING_PAGES = KB // 8 + 8  # the list's pages at most, and the tree's path


class Step11(PostgresStore):
    """The store as the code before the step wrote it."""

    MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:STEP - 1])


def nodes(n: int, start: int = 0, namespace: str = "ns") -> list[Node]:
    """Rows of many distinct words (each adds ~25 entries to the text index)."""
    return [Node(id=f"{namespace}-{i}", kind="doc", namespace=namespace, title=f"note {i}",
                 content=" ".join(f"{WORDS[(i * 7 + j) % len(WORDS)]}{(i + j) % 97} w{i}x{j}" for j in range(12)))
            for i in range(start, start + n)]


def pending_pages(store) -> int:
    """The pages a search of a word no row holds reads in the text index: its pending list and one path of its
    tree."""
    with store.transaction():
        store._db.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r[0] for r in store._db.execute(
            "EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM nodes WHERE tsv @@ 'zzqqxx'::tsquery").fetchall())
    index = plan[plan.index("Bitmap Index Scan on nodes_tsv"):]
    buffers = re.search(r"Buffers: shared ([^\n]*)", index).group(1)
    return sum(int(x) for x in re.findall(r"(?:hit|read)=(\d+)", buffers))


def searches(store) -> dict:
    return {q: store.text_search(q, namespace="ns", limit=20) for q in
            ("harbour", "walrus otter", "note 7", "lantern12 meadow", "w5x3")}


def limit_of(store) -> str | None:
    (options,) = store._read("SELECT reloptions FROM pg_class WHERE oid = 'nodes_tsv'::regclass")[0]
    return next((o for o in options or [] if o.startswith("gin_pending_list_limit=")), None)


def test_writes_leave_the_pending_list_small_on_every_path(pg_url):
    store = open_store(pg_url)
    assert limit_of(store) == f"gin_pending_list_limit={KB}"
    for start in range(0, 1200, 100):  # the row path, a batch at a time
        store.put_nodes(nodes(100, start))
    store.put_nodes(nodes(1500, 0, namespace="big"))  # one large write
    # 2,700 rows of ~25 entries: the default limit (4 MB) would hold them all in ~300 pages, read by every search
    assert pending_pages(store) <= PENDING_PAGES
    assert store.text_search("w5x3", namespace="ns", limit=3)  # and searches find the rows
    store.close()


def test_an_import_into_an_empty_store_keeps_the_limit(pg_server):
    source = open_store(pg_server.url())
    source.put_nodes(nodes(300))
    target = open_store(pg_server.url())
    target.import_rows("nodes", transfer.pages(source, "nodes"))
    assert limit_of(target) == f"gin_pending_list_limit={KB}"  # the index built again kept it
    assert searches(target) == searches(source)
    source.close()
    target.close()


def test_an_upgrade_from_schema_11_keeps_every_search(pg_url):
    old = Step11(pg_url)
    old.put_nodes(nodes(400))
    old.retract_nodes(["ns-3"])
    assert old.schema_version() == STEP - 1 and limit_of(old) is None
    for start in range(1000, 1300, 50):  # a full pending list as a store of the code before holds
        old.put_nodes(nodes(50, start))
    before = searches(old)
    assert pending_pages(old) > PENDING_PAGES
    old.close()
    store = open_store(pg_url)
    assert store.schema_version() >= STEP and limit_of(store) is not None  # and the steps after it
    assert pending_pages(store) <= PENDING_PAGES  # emptied by the upgrade
    assert searches(store) == before  # the same ids, order and scores
    assert store.check_integrity() == "ok"
    store.close()


KILLED = """
import sys, time
from agentcontext.store.migrations import Migration, Migrations
from agentcontext.store.postgres import PostgresStore
steps = list(PostgresStore.MIGRATIONS)
before = int(sys.argv[2])
def step_then_wait(db):
    steps[before].apply(db)  # the whole step ran, inside the upgrade's transaction, which has not committed
    print("applied", flush=True)
    time.sleep(60)
class Killed(PostgresStore):
    MIGRATIONS = Migrations("postgresql", [*steps[:before], Migration(before + 1, steps[before].name, step_then_wait)])
Killed(sys.argv[1])
"""


def test_a_sigkill_mid_upgrade_leaves_schema_11_whole_and_usable(pg_url):
    old = Step11(pg_url)
    old.put_nodes(nodes(200))
    before = searches(old)
    old.close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, pg_url, str(STEP - 1)], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)
    try:
        assert proc.stdout.readline().strip() == "applied"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    again = Step11(pg_url)  # the code before the step opens it as it was
    assert again.schema_version() == STEP - 1 and limit_of(again) is None
    assert searches(again) == before
    again.put_nodes(nodes(10, 5000))
    written = searches(again)
    again.close()
    store = open_store(pg_url)  # and today's code upgrades it
    assert store.schema_version() >= STEP and limit_of(store) is not None  # and the steps after it
    assert searches(store) == written
    store.close()
