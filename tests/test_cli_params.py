"""cli/params.py: the quick coercion gives exactly what Typer's pydantic adapter gives, value for value, and
leaves every other value (and every error) to that adapter."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest
import typer
from typer import _coercion, core
from typer.main import get_command

from agentcontext.cli import params

params.install()


def sample(name: str = typer.Argument(...),
           words: Optional[list[str]] = typer.Argument(None),
           text: Optional[str] = typer.Option(None, "--text"),
           flag: bool = typer.Option(False, "--flag"),
           path: Optional[Path] = typer.Option(None, "--path"),
           count: int = typer.Option(3, "--count"),
           limit: Optional[int] = typer.Option(None, "--limit", min=1, max=50),
           score: float = typer.Option(0.0, "--score"),
           ratio: float = typer.Option(0.5, "--ratio", min=0.0, max=1.0),
           tags: Optional[list[str]] = typer.Option(None, "--tag")) -> None:
    """Every kind of parameter the CLI has."""


@pytest.fixture(scope="module")
def command():
    app = typer.Typer()
    app.command()(sample)
    return get_command(app)


CASES = {
    "name": ["x", "", "ünï", "--", b"raw"],
    "words": [("a", "b"), ["c"], ()],
    "text": ["hello", "", "  spaced  ", 7],
    "flag": [True, False, "true", "no"],
    "path": ["notes.md", "", "~/x", "/tmp", Path("a/b"), 3],
    "count": ["12", "-3", "+4", "007", " 5", "1_000", "2.0", "abc", "", 10, 2.0, True],
    "limit": ["1", "50", "0", "51", "x", 25],
    "score": ["2", "2.5", "-1.25", ".5", "1e3", "nan", "x", 0, 3, 0.25],
    "ratio": ["0.3", "1", "1.5", "-0.1", 0.7],
    "tags": [("a",), ["b", "c"], ()],
}


def outcome(param, ctx, value, runtime):
    param._runtime_param = runtime
    try:
        got = param.process_value(ctx, value)
        return "value", type(got), repr(got)
    except Exception as exc:  # the error a user would see: its type and message
        return "error", type(exc), str(exc)


@pytest.mark.parametrize("name", sorted(CASES))
def test_quick_coercion_equals_typers_adapter(command, name):
    param = next(p for p in command.params if p.name == name)
    ctx = command.make_context("sample", ["n"], resilient_parsing=True)
    quick = core.build_runtime_param(param.type_descriptor)
    assert type(quick).__name__ == "QuickParam", "the quick path covers every parameter kind the CLI uses"
    for value in CASES[name]:
        slow = _coercion.build_runtime_param(param.type_descriptor)
        assert outcome(param, ctx, value, quick) == outcome(param, ctx, value, slow), (name, value)


def test_install_wraps_once():
    assert params.install() and core.build_runtime_param.quick_params
    wrapped = core.build_runtime_param
    assert params.install() and core.build_runtime_param is wrapped
