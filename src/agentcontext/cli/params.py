"""Parameter values without pydantic, where Typer's own coercion would give the same value.

Typer (since its coercion moved onto pydantic) builds a pydantic ``TypeAdapter`` for every parameter a command
line touches, given or not. Importing pydantic and building the adapters cost each CLI process ~0.28 CPU s before
any command ran: more than the command itself for most of them, and the CLI is started hundreds of times by the
test suite, by MCP clients' configs and by scripts.

``install()`` wraps Typer's ``build_runtime_param`` so that the values this CLI's parameters take (a ``str``, a
``bool`` flag, a ``Path``, an ``int`` or ``float`` written as plain digits, a list of ``str``) are coerced directly:
exactly what Typer's adapter returns for them (``tests/test_cli_params.py`` checks each against it). Anything else
(another type, a value in another form, a value out of its ``min``/``max``, any error) goes to Typer's own
adapter, built only then, so its result and its error messages are unchanged. When this Typer lacks the private
pieces used here, or they do not fit (another Typer version), nothing is wrapped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, get_args, get_origin

_SLOW = object()  # "not a value the quick path is sure of": ask Typer's adapter
_INT = re.compile(r"[+-]?[0-9]{1,18}")
_FLOAT = re.compile(r"[+-]?[0-9]{1,15}(\.[0-9]{1,15})?")


def _quick_str(value: Any, *_: Any) -> Any:
    return value if type(value) is str else _SLOW


def _quick_bool(value: Any, *_: Any) -> Any:
    return value if type(value) is bool else _SLOW


def _quick_str_list(value: Any, *_: Any) -> Any:
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    return items if all(type(item) is str for item in items) else _SLOW


def _quick_number(kind: type, info: Any) -> Callable[..., Any] | None:
    if info.clamp:
        return None
    pattern = _INT if kind is int else _FLOAT

    def quick(value: Any, *_: Any) -> Any:
        if type(value) is kind or (kind is float and type(value) is int):
            number = kind(value)
        elif type(value) is str and pattern.fullmatch(value):
            number = kind(value)
        else:
            return _SLOW
        if (info.min is not None and number < info.min) or (info.max is not None and number > info.max):
            return _SLOW  # Typer's adapter says what is wrong
        return number

    return quick


def _quick_path(info: Any, coerce_cli_path: Callable[..., Any]) -> Callable[..., Any]:
    def quick(value: Any, param: Any, ctx: Any) -> Any:
        if type(value) is str:
            value = Path(value)  # what pydantic's Path validator makes of a str
        elif not isinstance(value, Path):
            return _SLOW
        try:
            return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)
        except Exception:  # noqa: BLE001 - the slow path raises the same error with Typer's own wording
            return _SLOW

    return quick


def _quick_for(descriptor: Any, coerce_cli_path: Callable[..., Any]) -> Callable[..., Any] | None:
    info, annotation = descriptor.parameter_info, descriptor.annotation
    if descriptor.file_annotation is not None or info.parser is not None:
        return None
    if annotation is str:
        return _quick_str
    if annotation is bool:
        return _quick_bool
    if annotation in (int, float):
        return _quick_number(annotation, info)
    if annotation is Path and info.path_type is None:
        return _quick_path(info, coerce_cli_path)
    if get_origin(annotation) is list and get_args(annotation) == (str,):
        return _quick_str_list
    return None


def install() -> bool:
    """Wrap Typer's ``build_runtime_param`` (once); False when this Typer has none to wrap."""
    try:
        from typer import core
        from typer._coercion import RuntimeParam, resolve_type_descriptor
        from typer._param_types import coerce_cli_path
        from typer.models import OptionInfo
    except ImportError:
        return False
    build = getattr(core, "build_runtime_param", None)  # kept: a private Typer function, absent in other versions
    if build is None:
        return False
    if getattr(build, "quick_params", False):  # kept: our own mark on the wrapper, set when it was installed
        return True

    @dataclass(frozen=True)
    class QuickParam(RuntimeParam):  # type: ignore[misc]
        """Typer's RuntimeParam (its None and many-values rules kept) with the quick path in front."""

        quick: Callable[..., Any]
        slow: Callable[[], Any]

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            got = self.quick(value, param, ctx)
            return self.slow()._coerce_value(value, param=param, ctx=ctx) if got is _SLOW else got

    def quick_build(descriptor: Any) -> Any:
        quick = _quick_for(descriptor, coerce_cli_path)
        if quick is None:
            return build(descriptor)
        built: list[Any] = []

        def slow() -> Any:
            if not built:
                built.append(build(descriptor))
            return built[0]

        return QuickParam(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation, quick=quick,
                          slow=slow)

    try:  # Typer's private classes as this module knows them, or nothing is wrapped
        quick_build(resolve_type_descriptor(str, OptionInfo()))
    except Exception:  # noqa: BLE001
        return False
    quick_build.quick_params = True  # type: ignore[attr-defined]
    core.build_runtime_param = quick_build
    return True
