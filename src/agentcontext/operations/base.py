"""An operation, declared once: its name, input type (a strict pydantic model with its constraints), output type,
the service call, read-only / destructive flags and help text. Every door derives its form from it: the MCP tool
(input and output JSON schemas through pydantic), the CLI command (``cli/declared.py``) and the web form's parsing
(``parse``). A door that does not serve an operation says why (``skips``); tests/test_operations.py checks that
every declared operation is reachable from every door or names the reason.

Operations sit between the services and the doors (tests/test_layers.py): they import services, never a door.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

import pydantic
from pydantic import BaseModel, ConfigDict, TypeAdapter

from ..errors import ValidationError

if TYPE_CHECKING:  # the workspace (the store, the embedder) loads when an operation runs, not when it is declared
    from ..workspace import Workspace

DOORS = ("mcp", "cli", "web")


class Args(BaseModel):
    """Base of every operation's input: unknown keys, NaN and infinities are refused. MCP validates strictly
    (JSON has its types); the CLI and web forms, whose values arrive as text, validate in lax mode."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, defer_build=True)


class NoArgs(Args):
    pass


@dataclass(frozen=True)
class Caller:
    """Who runs an operation, against what: the workspace, the acting principal (None = the owner) and the memory
    store the memory operations use (the CLI's ``--namespace``; MCP and the console use ``default``) and the graph
    the decision operations use (the CLI's ``--graph``; None = the workspace graph, ``graph:default``)."""

    ws: Workspace
    principal: str | None = None
    namespace: str = "default"
    graph: str | None = None
    progress: Callable[[str, int, int], None] | None = None  # long work reports (label, done, total) here


@dataclass(frozen=True)
class Cli:
    """How the operation reads on a command line: the command's path (``("memory", "retrieve")``), the fields
    taken as positional arguments (in order), option names for fields whose flag is not ``--field-name``,
    door-only options (``extra``: name -> (flags, help, multiple)) that ``prepare`` folds into the input, and
    ``pick``: what the command prints under ``--json`` out of the operation's result (the CLI printed bare lists
    before operations were declared; kept so scripts keep working), and ``exit_code``: the command's exit status
    for a result (``policy check`` exits 1 on a violation)."""

    path: tuple[str, ...]
    args: tuple[str, ...] = ()
    flags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    help: Mapping[str, str] = field(default_factory=dict)  # option help where the field's description is too long
    extra: Mapping[str, tuple[tuple[str, ...], str, bool]] = field(default_factory=dict)
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    pick: Callable[[Any], Any] | None = None
    namespace: bool = False  # takes --namespace/-n (the memory store)
    graph: bool = False  # takes --graph/-g (the graph the decision operations use)
    exit_code: Callable[[Any], int] | None = None
    metavars: Mapping[str, str] = field(default_factory=dict)  # an argument's name in help (NODE_ID)
    defaults: Mapping[str, Any] = field(default_factory=dict)  # a field the command line may leave out: its value


@dataclass(frozen=True)
class Operation:
    name: str  # the MCP tool's name; the CLI command and the web route are named by their doors
    title: str
    help: str
    input: type[Args]
    output: Any  # a type pydantic describes (a TypedDict): the MCP output schema
    call: Callable[[Caller, Any], Any]
    read_only: bool = True
    destructive: bool = False
    cli: Cli | None = None
    skips: Mapping[str, str] = field(default_factory=dict)  # door -> why it does not serve this operation

    def run(self, caller: Caller, args: Args) -> Any:
        return self.call(caller, args)

    def parse(self, data: Mapping[str, Any], strict: bool = True) -> Args:
        """The input from ``data`` (our ValidationError naming the arguments when it does not fit)."""
        if not isinstance(data, Mapping):
            raise ValidationError("arguments must be a JSON object")
        try:
            return self.input.model_validate(dict(data), strict=strict)
        except pydantic.ValidationError as exc:
            raise describe_validation(exc, self.input) from None

    def input_schema(self) -> dict[str, Any]:
        schema = self.input.model_json_schema(by_alias=True)
        schema.setdefault("properties", {})
        schema["additionalProperties"] = False
        return schema

    def output_schema(self) -> dict[str, Any]:
        return inline(TypeAdapter(self.output).json_schema(mode="serialization"))


def describe_validation(exc: pydantic.ValidationError, model: type[BaseModel]) -> ValidationError:
    """Our ValidationError from pydantic's, naming the arguments (never echoing the values)."""
    allowed = ", ".join(model.model_fields)
    problems, fields = [], []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        fields.append(loc)
        if err["type"] == "extra_forbidden":
            problems.append(f"unknown argument {loc!r} (allowed: {allowed or 'none'})")
        elif err["type"] == "missing":
            problems.append(f"missing required argument {loc!r}")
        else:
            problems.append(f"argument {loc!r}: {err['msg']}")
    shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
    return ValidationError(f"invalid arguments: {shown}", fields=fields[:20])


def inline(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$defs`` references replaced by the definitions and pydantic's titles dropped: one
    self-contained tree, as the hand-written output schemas were (our output types are not recursive)."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
        return {k: walk(v) if k != "properties" else {p: walk(s) for p, s in v.items()}
                for k, v in node.items() if k not in ("$defs", "title")}

    return walk(schema)


_DECLARED: dict[str, Operation] = {}


def declare(*operations: Operation) -> None:
    """Add operations to the catalogue every door reads (a name is declared once)."""
    for op in operations:
        if op.name in _DECLARED and _DECLARED[op.name] is not op:
            raise ValidationError(f"operation {op.name!r} is declared twice")
        unknown = set(op.skips) - set(DOORS)
        if unknown:
            raise ValidationError(f"operation {op.name!r} skips unknown doors {sorted(unknown)}")
        _DECLARED[op.name] = op


def registered() -> dict[str, Operation]:
    """Every operation declared so far (``agentcontext.operations.declared()`` imports every declaring module)."""
    return dict(_DECLARED)
