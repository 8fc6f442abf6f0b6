"""The ``agentcontext`` (alias ``actx``) command line: thin wrappers over the services.

Every command takes ``--json``. Any error exits non-zero with one clear line, or with
``{"error": {"type", "message", ...data}}`` on stdout under ``--json``.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer

from .cli_common import JSON_OPTION, emit, err, out
from .config import HOME_DIR
from .errors import AgentContextError
from .workspace import Workspace

app = typer.Typer(name="agentcontext", help="The context layer for AI agents: knowledge packs, flash, memory, "
                  "decisions.", no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)


@app.callback()
def _global(ctx: typer.Context,
            home: Optional[Path] = typer.Option(None, "--home", help="Workspace folder (default: .agentcontext/ "
                                                "found upward, or AGENTCONTEXT_HOME)."),
            as_principal: Optional[str] = typer.Option(None, "--as", help="Act as this principal "
                                                       "(or AGENTCONTEXT_PRINCIPAL).")) -> None:
    ctx.obj = {"home": home, "principal": as_principal}


@app.command()
def init(ctx: typer.Context,
         path: Optional[Path] = typer.Argument(None, help="Folder to create .agentcontext/ in (default: "
                                               "AGENTCONTEXT_URL, AGENTCONTEXT_HOME or here)."),
         json_out: bool = JSON_OPTION) -> None:
    """Create a workspace: .agentcontext/ with its store (or the store AGENTCONTEXT_URL names)."""
    home = ctx.obj.get("home") or (path / HOME_DIR if path is not None else None)
    if home is None and not os.environ.get("AGENTCONTEXT_URL"):
        home = Path(os.environ.get("AGENTCONTEXT_HOME") or Path.cwd() / HOME_DIR)
    ws = Workspace.open(home=home, create=True)
    emit({"home": str(Path(home).resolve()) if home else None, "store": ws.store.url}, json_out,
         lambda d: out.print(f"workspace ready: {d['store']}"))


def _mount() -> None:
    from . import cli_knowledge

    app.add_typer(cli_knowledge.pack_app, name="pack")
    app.add_typer(cli_knowledge.doc_app, name="doc")
    for command in cli_knowledge.COMMANDS:
        app.command()(command)
    # Optional sub-apps owned by other modules; each exposes Typer apps and/or COMMANDS.
    for module_name, apps in (("cli_memory", ("memory_app:memory", "eval_app:eval")),
                              ("cli_admin", ())):
        try:
            module = importlib.import_module(f"{__package__}.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{module_name}":
                raise
            continue
        for spec in apps:
            attr, name = spec.split(":")
            if hasattr(module, attr):
                app.add_typer(getattr(module, attr), name=name)
        for sub_name, sub_app in getattr(module, "SUBAPPS", {}).items():
            app.add_typer(sub_app, name=sub_name)
        for command in getattr(module, "COMMANDS", []):
            app.command()(command)


_mount()


def main() -> None:
    as_json = "--json" in sys.argv[1:]
    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except AgentContextError as exc:
        if as_json:
            sys.stdout.write(json.dumps({"error": exc.to_dict()}, default=str) + "\n")
        else:
            err.print(f"error: {exc.type}: {exc.message}", markup=False)
        sys.exit(1)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except _USAGE_ERRORS as exc:  # a bad command line: click's message, no traceback
        if as_json:
            sys.stdout.write(json.dumps({"error": {"type": "UsageError", "message": exc.format_message()}}) + "\n")
        else:
            exc.show()
        sys.exit(exc.exit_code)


def _usage_errors() -> tuple[type[Exception], ...]:
    """Click's ClickException, from click itself and from the copy Typer bundles (typer._click)."""
    import click

    found: list[type[Exception]] = [click.exceptions.ClickException]
    try:
        from typer._click.exceptions import ClickException as bundled  # Typer >= 0.20 ships its own click
    except ImportError:
        bundled = None
    if bundled is not None and bundled not in found:
        found.append(bundled)
    return tuple(found)


_USAGE_ERRORS = _usage_errors()


if __name__ == "__main__":
    main()
