"""The commands that are not declared operations, in plain click: ``init`` and the command groups mounted from their
modules (one per group), each module's functions built into click commands by ``build.py``. ``entry.py`` is the root
that runs them (it loads this module only when one of these commands runs or help lists them); the commands derived
from declared operations (``declared.py``) are not here.

``command()`` is this tree as a click group, every command taking ``--home`` and ``--as`` after the subcommand as
well as before it.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Optional

import click

from ..config import HOME_DIR
from . import checkpoints, decisions, doc, erasure, evaluation, graph, history, knowledge, mcp_config, \
    memory, migrate, pack, policies, serve, store, token
from .build import Argument, Group
from .common import JSON_OPTION, emit, out

app = Group(help="The context layer for AI agents: knowledge packs, flash, memory, decisions, the graph, erasure.")


@lru_cache(maxsize=1)
def command() -> click.Group:
    """The whole tree of these commands as click commands, ready to run (built once)."""
    return app.click("agentcontext")


@app.command()
def init(ctx: click.Context,
         path: Optional[Path] = Argument(None, help="Folder to create .agentcontext/ in (default: "
                                         "AGENTCONTEXT_URL, AGENTCONTEXT_HOME or here)."),
         json_out: bool = JSON_OPTION) -> None:
    """Create a workspace: .agentcontext/ with its store (or the store AGENTCONTEXT_URL names)."""
    from ..workspace import Workspace

    home = (ctx.find_root().obj or {}).get("home") or (path / HOME_DIR if path is not None else None)
    if home is None and not os.environ.get("AGENTCONTEXT_URL"):
        home = Path(os.environ.get("AGENTCONTEXT_HOME") or Path.cwd() / HOME_DIR)
    ws = Workspace.open(home=home, create=True)
    emit({"home": str(Path(home).resolve()) if home else None, "store": ws.store.url}, json_out,
         lambda d: out.print(f"workspace ready: {d['store']}"))


app.add_group(pack.pack_app, "pack")
app.add_group(doc.doc_app, "doc")
for _command in knowledge.COMMANDS:
    app.command()(_command)
app.add_group(memory.memory_app, "memory")
app.add_group(decisions.decision_app, "decision")
app.add_group(policies.policy_app, "policy")
app.add_group(graph.graph_app, "graph")
app.add_group(checkpoints.checkpoint_app, "checkpoint")
for _command in erasure.COMMANDS:
    app.command()(_command)
app.add_group(evaluation.eval_app, "eval")
app.add_group(serve.serve_app, "serve")
app.add_group(mcp_config.mcp_app, "mcp")
app.add_group(token.token_app, "token")
app.add_group(store.store_app, "store")
for _command in migrate.COMMANDS:
    app.command()(_command)
for _command in history.COMMANDS:
    app.command()(_command)
