"""The ``agentcontext`` (alias ``actx``) command line's root, in plain click, and ``main``.

The root loads nothing it does not run: ``--version`` imports no command at all, a command derived from a declared
operation (``declared.py``: ``search``, ``read``, ``flash``, ``memory retrieve``, ``decision record``, ...) imports
only the operations and click, and the other commands (plain click too, ``root.py``) load when one of them runs or
when help lists them. ``DERIVED`` names the derived commands without importing the operations (pydantic); a test
checks it against the declarations (tests/test_operations.py).

Every command takes ``--json``. Any error exits non-zero with one clear line, or with
``{"error": {"type", "message", ...data}}`` on stdout under ``--json``; hints in it name CLI flags (hints.py).
``--home`` and ``--as`` are accepted after the subcommand as well as before it.
"""
from __future__ import annotations

import json
import sys
from functools import lru_cache
from typing import Any

import click

from .. import __version__
from ..errors import AgentContextError
from .root_options import AS_HELP, HOME_HELP

HELP = "The context layer for AI agents: knowledge packs, flash, memory, decisions, the graph, erasure."
# group path -> {command: its operation's title} for the commands derived from declared operations: what help lists
# without importing the operations (pydantic); tests/test_operations.py checks it against the declarations
DERIVED: dict[tuple[str, ...], dict[str, str]] = {
    (): {"search": "Search knowledge", "neighbors": "List a doc's neighbours", "read": "Read a knowledge doc",
         "flash": "Flash knowledge", "reindex": "Reindex packs", "context": "Get a cited context",
         "grant": "Grant access", "revoke": "Revoke access", "grants": "List grants",
         "audit": "The audit log"},
    ("token",): {"create": "Create a token", "list": "List tokens", "revoke": "Revoke a token"},
    ("memory",): {"store": "Store a memory", "retrieve": "Retrieve memories", "forget": "Forget memories",
                  "get": "Get a memory", "conversation": "Conversation history", "edit": "Edit a memory",
                  "versions": "A memory's versions"},
    ("pack",): {"list": "List knowledge packs"},
    ("decision",): {"record": "Record a decision", "precedents": "Find precedents", "chain": "Causal chain"},
    ("policy",): {"check": "Check compliance"},
    ("graph",): {"predict-links": "Predict missing graph links", "paths": "Find paths between graph nodes"},
}
SETTINGS = {"help_option_names": ["-h", "--help"]}


def plain_tree() -> click.Group:
    """The commands that are not declared operations (loaded on first use, built once)."""
    from .root import command

    return command()


@lru_cache(maxsize=None)
def derived_command(path: tuple[str, ...]) -> click.Command:
    from ..operations import declared
    from .declared import derived

    for found, command in derived(list(declared().values())):
        if found == path:
            return command
    raise LookupError(f"no declared operation has the CLI path {' '.join(path)!r}")


class Doors(click.Group):
    """A command group whose declared commands are built from their operations and whose other commands come from
    the plain tree (``root.py``), each only when it is asked for."""

    def __init__(self, path: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(name=path[-1] if path else "agentcontext", context_settings=SETTINGS, **kwargs)
        self.path = path

    def _plain_group(self, ctx: click.Context) -> click.Group | None:
        group: click.Command | None = plain_tree()
        for word in self.path:
            group = group.get_command(ctx, word) if isinstance(group, click.Group) else None
        return group if isinstance(group, click.Group) else None

    def list_commands(self, ctx: click.Context) -> list[str]:
        group = self._plain_group(ctx)
        names = set(DERIVED.get(self.path, ())) | set(group.list_commands(ctx) if group is not None else ())
        names |= {p[len(self.path)] for p in DERIVED if len(p) > len(self.path) and p[:len(self.path)] == self.path}
        return sorted(names)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands:
            return self.commands[name]
        if name in DERIVED.get(self.path, ()):
            return derived_command((*self.path, name))
        if (*self.path, name) in DERIVED:
            return Doors((*self.path, name), help=_plain_help(ctx, (*self.path, name)), no_args_is_help=True)
        group = self._plain_group(ctx)
        return group.get_command(ctx, name) if group is not None else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Help's list of commands; a derived one is listed by its operation's title, without being built."""
        titles = DERIVED.get(self.path, {})
        rows = []
        for name in self.list_commands(ctx):
            if name in titles:
                rows.append((name, titles[name]))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width - 6 - max(len(n) for n in
                                                                                        self.list_commands(ctx)))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _plain_help(ctx: click.Context, path: tuple[str, ...]) -> str | None:
    group = Doors(path[:-1])._plain_group(ctx)
    found = group.get_command(ctx, path[-1]) if group is not None else None
    return found.help if found is not None else None


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"agentcontext {__version__}")
        ctx.exit()


def _global(home: str | None, principal: str | None) -> None:
    ctx = click.get_current_context()
    obj = ctx.obj if isinstance(ctx.obj, dict) else {}  # --home/--as after the subcommand win (set later)
    from pathlib import Path

    ctx.obj = {"home": Path(home) if home is not None else None, "principal": principal, **obj}


def root() -> Doors:
    """The root command, lazy: what ``main`` runs."""
    group = Doors((), help=HELP, no_args_is_help=True, callback=_global, params=[
        click.Option(["--home"], type=click.Path(), help=HOME_HELP),
        click.Option(["--as", "principal"], help=AS_HELP),
        click.Option(["--version"], is_flag=True, expose_value=False, is_eager=True, callback=_show_version,
                     help="Print the version and exit.")])
    return group


def command() -> click.Group:
    """The whole command line with every command built (for help, docs and tests)."""
    def fill(group: click.Group) -> None:
        ctx = click.Context(group, resilient_parsing=True)
        for name in group.list_commands(ctx):
            child = group.get_command(ctx, name)
            if child is not None:
                group.commands[name] = child
                if isinstance(child, click.Group):
                    fill(child)

    top = root()
    fill(top)
    return top


def main() -> None:
    as_json = "--json" in sys.argv[1:]
    try:
        code = root()(standalone_mode=False, prog_name="agentcontext")
        if isinstance(code, int) and code:
            sys.exit(code)
    except AgentContextError as exc:
        from .hints import cli_message
        from .output import err

        message = cli_message(exc.message)
        if as_json:
            sys.stdout.write(json.dumps({"error": {**exc.to_dict(), "message": message}}, default=str) + "\n")
        else:
            err.print(f"error: {exc.type}: {message}", markup=False)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        from .output import err

        err.print("aborted")
        sys.exit(130)
    except click.exceptions.ClickException as exc:  # a bad command line: click's message, no traceback
        if as_json:
            sys.stdout.write(json.dumps({"error": {"type": "UsageError", "message": exc.format_message()}}) + "\n")
        else:
            exc.show()
        sys.exit(exc.exit_code)
