"""Plain click commands from plain functions: the commands that are not declared operations (``init``, ``serve``,
``eval``, ``mcp``, ``migrate``, the store, pack, doc, graph, policy, checkpoint, token, erasure, access and history
commands).

A command is a function whose parameters say what they are, ``Argument(...)`` or ``Option(default, "--flag", ...)``
(``...`` as the default: required), typed by their annotations (``str``, ``int``, ``float``, ``bool``, ``Path``,
``list[str]``, each possibly ``Optional``); a bare parameter is a required argument, a bare default an option's;
a parameter named ``ctx`` receives the ``click.Context``. ``Group``
collects them (``@group.command("name")``, ``group.add_group(other, "name")``) and ``Group.click()`` builds the
click tree: click parses and converts every value (no pydantic, nothing patched), an ``int`` with ``min``/``max``
is a ``click.IntRange``. Help reads as it always did: an ``Arguments:`` section with each argument's help and
``[required]``, value names ``TEXT``, ``INTEGER``, ``NUMBER``, ``PATH``, defaults shown, and ``--home``/``--as``
taken after the subcommand too (``root_options.py``).
"""
from __future__ import annotations

import inspect
import sys
import types
import typing
from pathlib import Path
from typing import Any, Callable, get_args, get_origin, get_type_hints

import click

from .root_options import AS_HELP, HOME_HELP, remember_on_root

SETTINGS = {"help_option_names": ["-h", "--help"]}
VALUE_NAMES = {str: "TEXT", int: "INTEGER", float: "NUMBER", Path: "PATH"}


class Argument:
    """A positional argument: ``Argument(...)`` is required, ``Argument(None)`` optional."""

    def __init__(self, default: Any = ..., *, help: str | None = None, metavar: str | None = None) -> None:
        self.default, self.help, self.metavar = default, help, metavar


class Option:
    """An option: ``Option(default, "--flag", "-f", help=..., min=..., max=...)``; ``...`` as default: required."""

    def __init__(self, default: Any = None, *flags: str, help: str | None = None, metavar: str | None = None,
                 min: float | None = None, max: float | None = None, is_eager: bool = False,
                 callback: Callable[..., Any] | None = None, expose_value: bool = True) -> None:
        self.default, self.flags, self.help, self.metavar = default, flags, help, metavar
        self.min, self.max, self.is_eager, self.callback, self.expose_value = min, max, is_eager, callback, \
            expose_value


class Arg(click.Argument):
    """A click argument with help, listed under ``Arguments:`` (its name or metavar, its help, ``[required]``)."""

    def __init__(self, *args: Any, arg_help: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arg_help = arg_help

    def help_row(self) -> tuple[str, str]:
        name = self.metavar or (self.name or "").upper()
        text = "  ".join(part for part in (self.arg_help, "[required]" if self.required else "") if part)
        return name, text


class Command(click.Command):
    """A click command whose help lists its arguments first, as it always did."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [p.help_row() for p in self.get_params(ctx) if isinstance(p, Arg)]
        if rows:
            with formatter.section("Arguments"):
                formatter.write_dl(rows)
        super().format_options(ctx, formatter)

    def format_arguments(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click 8.5 lists arguments on its own; ``format_options`` already did."""


def _bare(annotation: Any) -> Any:
    if get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        return rest[0] if len(rest) == 1 else annotation
    return annotation


def _many(kind: Any) -> bool:
    return get_origin(kind) is list


def _click_type(kind: Any, low: float | None = None, high: float | None = None) -> Any:
    if kind is int:
        return click.IntRange(low, high) if low is not None or high is not None else click.INT
    if kind is float:
        return click.FloatRange(low, high) if low is not None or high is not None else click.FLOAT
    if kind is Path:
        return click.Path(path_type=Path)
    return click.STRING


def _param(name: str, kind: Any, spec: Option | Argument) -> click.Parameter:
    many = _many(kind)
    default = None if spec.default is ... else spec.default
    given = {"default": default} if default is not None else {}  # click 8.5 takes an explicit None as a value
    if isinstance(spec, Argument):
        return Arg([name], nargs=-1 if many else 1, required=spec.default is ... and not many, metavar=spec.metavar,
                   type=click.STRING if many else _click_type(kind), arg_help=spec.help, **given)
    flags = list(spec.flags) or ["--" + name.replace("_", "-")]
    shown = not many and default is not None and default is not False and default != ""
    common: dict[str, Any] = {"help": spec.help, "required": spec.default is ..., "is_eager": spec.is_eager,
                              "callback": spec.callback, "expose_value": spec.expose_value, **given}
    if kind is bool:
        if any("/" in f for f in flags):
            return click.Option([*flags, name], show_default=shown, **common)
        return click.Option([*flags, name], is_flag=True, **{**common, "default": bool(default)})
    if many:
        return click.Option([*flags, name], multiple=True, metavar=spec.metavar or "TEXT", **common)
    return click.Option([*flags, name], type=_click_type(kind, spec.min, spec.max), show_default=shown,
                        metavar=spec.metavar or VALUE_NAMES.get(kind, "TEXT"), **common)


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    return remember_on_root(ctx, str(param.name), value)


def after_the_subcommand() -> list[click.Parameter]:
    """``--home`` and ``--as`` on a command (kept on the root's settings): every command takes them."""
    return [click.Option(["--home"], type=click.Path(path_type=Path), callback=_remember, expose_value=False,
                         help=HOME_HELP),
            click.Option(["--as", "principal"], callback=_remember, expose_value=False, help=AS_HELP)]


def command(fn: Callable[..., Any], name: str | None = None) -> click.Command:
    """The click command of ``fn``: its parameters, its docstring as help."""
    hints = get_type_hints(fn, vars(sys.modules[fn.__module__]))
    params: list[click.Parameter] = []
    defaults: dict[str, Any] = {}
    takes_ctx = False
    for pname, p in inspect.signature(fn).parameters.items():
        if pname == "ctx":
            takes_ctx = True
            continue
        spec = p.default
        if spec is inspect.Parameter.empty:  # a bare parameter: a required argument
            spec = Argument()
        elif not isinstance(spec, (Option, Argument)):  # a bare default: an option of that default
            spec = Option(spec)
        params.append(_param(pname, _bare(hints[pname]), spec))
        if _many(_bare(hints[pname])):
            defaults[pname] = spec.default
    params.extend(after_the_subcommand())

    def run(**values: Any) -> Any:
        for key, default in defaults.items():  # click's () for nothing given: the declared default (None) instead
            given = values.get(key)
            values[key] = list(given) if given else (None if default in (None, ...) else list(default))
        if takes_ctx:
            values["ctx"] = click.get_current_context()
        return fn(**values)

    return Command(name or fn.__name__.replace("_", "-"), callback=run, params=params, help=inspect.getdoc(fn),
                   context_settings=SETTINGS)


class Lazy(click.Group):
    """A click group that builds each command when it is first asked for (running ``policy list`` builds the
    policy commands only) and lists them in the order they were added (as they were always listed)."""

    def __init__(self, name: str, entries: list[tuple[str, Any]], **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.entries = dict(entries)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.entries)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in self.entries:
            entry = self.entries[name]
            self.commands[name] = entry.click(name) if isinstance(entry, Group) else command(entry, name)
        return self.commands.get(name)


class Group:
    """Commands and subgroups under one name, built into a click group by ``click()``."""

    def __init__(self, help: str | None = None, no_args_is_help: bool = True) -> None:
        self.help, self.no_args_is_help = help, no_args_is_help
        self.entries: list[tuple[str, Any]] = []

    def command(self, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def add(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.entries.append((name or fn.__name__.replace("_", "-"), fn))
            return fn

        return add

    def add_group(self, group: Group, name: str) -> None:
        self.entries.append((name, group))

    def click(self, name: str) -> click.Group:
        return Lazy(name, self.entries, help=self.help, no_args_is_help=self.no_args_is_help,
                    context_settings=SETTINGS)
