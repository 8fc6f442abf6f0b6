"""``agentcontext migrate SRC_URL DST_URL``: copy a whole workspace to another store, losslessly."""
from __future__ import annotations

from typing import Any

import click

from .build import Argument
from .common import JSON_OPTION, emit, out, principal, progress_bar, table


def migrate(ctx: click.Context,
            source: str = Argument(..., metavar="SRC_URL",
                                         help="The store to copy: sqlite:///path, a file path or postgresql://..."),
            destination: str = Argument(..., metavar="DST_URL",
                                              help="An empty store to copy into (a new file, or a new "
                                                   "?schema=... on a PostgreSQL server)."),
            json_out: bool = JSON_OPTION) -> None:
    """Copy every node version, edge interval, vector, tombstone, record (grants, tokens as their hashes), audit
    and change-log row from SRC_URL into the empty store DST_URL, in one transaction there, then check that both
    stores' content digests are equal. The source is only read (a store of an older schema is upgraded first,
    as every open does)."""
    from .. import migrate as migration

    with progress_bar() as report:
        result = migration.migrate(source, destination, principal(ctx), progress=report)

    def human(data: dict[str, Any]) -> None:
        out.print(f"copied {data['source']} -> {data['destination']} in {data['seconds']} s", markup=False)
        table(("table", "rows", "sha256"), [{"table": t, "rows": n, "sha256": data["digest"][t]["sha256"][:16]}
                                            for t, n in data["rows"].items()])
        out.print("content digests equal: " + ("yes" if data["digests_equal"] else "NO"))

    emit(result, json_out, human)


COMMANDS = (migrate,)
