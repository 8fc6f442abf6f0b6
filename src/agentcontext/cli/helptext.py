"""Help in the usual notation: ``PACK [QUERY]``, ``--limit INTEGER``, bare flags.

Typer 0.29 prints required arguments as ``{pack}``, value types as ``<str>`` and even flags as ``<bool>``
(its pull request #1863), which reads like a template to fill in. ``conventional`` walks the click tree
once, before it runs, and gives every Typer argument and option a subclass that prints the classic form
(upper-case names, click's type names, nothing after a flag); parsing is untouched.
"""
from __future__ import annotations

import re
from typing import Any

from typer.core import TyperArgument, TyperGroup, TyperOption

TYPE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH", "list[str]": "TEXT",
              "datetime": "TIME", "bool": ""}
_TYPE = re.compile(r"^<([^ >]+(?:\[[^\]]*\])?)")


def value_name(option: TyperOption, ctx: Any) -> str:
    """``TEXT``, ``INTEGER``, ... for an option's value: its metavar, else its type in click's words."""
    if option.metavar is not None:
        return option.metavar
    found = _TYPE.match(TyperOption.display_type(option, ctx) or "")
    word = found.group(1) if found else "value"
    return TYPE_NAMES.get(word, word.upper())


class ConventionalArgument(TyperArgument):
    @property
    def display_name_raw(self) -> str:  # also what "Missing argument 'PACK'" names
        return self.metavar or self.name.upper()

    def _rich_display_name(self) -> str:
        return self.display_name_raw + ("..." if self.nargs != 1 else "")

    def _usage_display_name(self) -> str:
        name = self._rich_display_name()
        return name if self.required else f"[{name}]"

    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # the upper-case name says what goes there


class ConventionalOption(TyperOption):
    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        return value_name(self, ctx) + ("..." if self.nargs != 1 else "")


def conventional(command: Any) -> Any:
    """Give every argument and option under ``command`` the classic help notation; returns ``command``."""
    if hasattr(command, "rich_markup_mode"):
        command.rich_markup_mode = None
    for param in command.params:
        if type(param) is TyperArgument:
            param.__class__ = ConventionalArgument
        elif type(param) is TyperOption:
            param.__class__ = ConventionalOption
    for child in (command.commands if isinstance(command, TyperGroup) else {}).values():
        conventional(child)
    return command
