"""The commands not yet declared as operations, in Typer: ``init`` and the command groups mounted from their
modules (one per group). ``entry.py`` is the root that runs them (plain click; it loads this module only when one
of these commands runs or help lists them); the commands derived from declared operations (``declared.py``) are
not here.

``command()`` is this tree as click commands: the Typer app in the usual help notation (helptext.py), with
``--home`` and ``--as`` accepted after the subcommand as well as before it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperGroup
from typer.main import get_command

from .. import __version__
from ..config import HOME_DIR
from . import access, checkpoints, decisions, doc, erasure, evaluation, graph, history, knowledge, \
    mcp_config, memory, migrate, pack, params, policies, serve, store, token
from .common import JSON_OPTION, emit, out
from .helptext import conventional
from .root_options import AS_HELP, HOME_HELP, remember_on_root

params.install()  # Typer's coercion without pydantic where it gives the same values (params.py)

app = typer.Typer(name="agentcontext", help="The context layer for AI agents: knowledge packs, flash, memory, "
                  "decisions, the graph, erasure.", no_args_is_help=True, pretty_exceptions_enable=False,
                  add_completion=False, context_settings={"help_option_names": ["-h", "--help"]})


def _show_version(value: bool) -> None:
    if value:
        out.print(f"agentcontext {__version__}", markup=False)
        raise typer.Exit()


@app.callback()
def _global(ctx: typer.Context,
            home: Optional[Path] = typer.Option(None, "--home", help=HOME_HELP),
            as_principal: Optional[str] = typer.Option(None, "--as", help=AS_HELP),
            version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True,
                                         callback=_show_version)) -> None:
    ctx.obj = {"home": home, "principal": as_principal}


def _remember(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
    return remember_on_root(ctx, str(param.name), value)


def _after_the_subcommand(home: Optional[Path] = typer.Option(None, "--home", help=HOME_HELP, callback=_remember,
                                                             expose_value=False),
                          principal: Optional[str] = typer.Option(None, "--as", help=AS_HELP, callback=_remember,
                                                                  expose_value=False)) -> None:
    """Only its parameters are used: every command gets them."""


def _leaves(group: Any) -> list[Any]:
    children = group.commands if isinstance(group, TyperGroup) else None  # Typer's groups (its click is its own)
    return [leaf for child in children.values() for leaf in _leaves(child)] if children else [group]


def command() -> Any:
    """The whole command line as a click command, ready to run."""
    root = conventional(get_command(app))
    template = typer.Typer(add_completion=False)
    template.command()(_after_the_subcommand)
    shared = conventional(get_command(template)).params
    for leaf in _leaves(root):
        if not any(p.name == "home" for p in leaf.params):
            leaf.params.extend(shared)
    return root


@app.command()
def init(ctx: typer.Context,
         path: Optional[Path] = typer.Argument(None, help="Folder to create .agentcontext/ in (default: "
                                               "AGENTCONTEXT_URL, AGENTCONTEXT_HOME or here)."),
         json_out: bool = JSON_OPTION) -> None:
    """Create a workspace: .agentcontext/ with its store (or the store AGENTCONTEXT_URL names)."""
    from ..workspace import Workspace

    home = ctx.obj.get("home") or (path / HOME_DIR if path is not None else None)
    if home is None and not os.environ.get("AGENTCONTEXT_URL"):
        home = Path(os.environ.get("AGENTCONTEXT_HOME") or Path.cwd() / HOME_DIR)
    ws = Workspace.open(home=home, create=True)
    emit({"home": str(Path(home).resolve()) if home else None, "store": ws.store.url}, json_out,
         lambda d: out.print(f"workspace ready: {d['store']}"))


app.add_typer(pack.pack_app, name="pack")
app.add_typer(doc.doc_app, name="doc")
for _command in knowledge.COMMANDS:
    app.command()(_command)
app.add_typer(memory.memory_app, name="memory")
app.add_typer(decisions.decision_app, name="decision")
app.add_typer(policies.policy_app, name="policy")
app.add_typer(graph.graph_app, name="graph")
app.add_typer(checkpoints.checkpoint_app, name="checkpoint")
for _command in erasure.COMMANDS:
    app.command()(_command)
app.add_typer(evaluation.eval_app, name="eval")
app.add_typer(serve.serve_app, name="serve")
app.add_typer(mcp_config.mcp_app, name="mcp")
app.add_typer(token.token_app, name="token")
app.add_typer(store.store_app, name="store")
for _command in migrate.COMMANDS:
    app.command()(_command)
for _command in (access.grant, access.revoke, access.grants, *history.COMMANDS, access.audit):
    app.command()(_command)
