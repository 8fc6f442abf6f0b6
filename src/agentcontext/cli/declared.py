"""CLI commands derived from the declared operations (``agentcontext.operations``), in plain click.

A declared operation becomes one click command: the fields its ``Cli`` names are positional arguments (in order),
every other field an option (``--field-name`` unless the declaration names the flag), with the field's description
as help. Values are parsed by click only as far as their kind (an integer option still says "'x' is not a valid
integer"), then validated by the operation's own input model in lax mode (text from a command line, e.g. ``"5"`` for
an int), so the constraints are the ones MCP enforces. The command prints the result as JSON under ``--json``
(``Cli.pick``: the part the CLI always printed) or for people through the printer this module keeps per operation.

Plain click, not Typer: these commands need no per-parameter pydantic adapter (what ``params.py`` patches Typer
to skip) and no Typer import; benchmarks/cli_startup.py measures the difference.
"""
from __future__ import annotations

import os
import types
import typing
from typing import Any, Callable, Literal, get_args, get_origin

import click
from pydantic_core import PydanticUndefined

from ..operations import Caller, Operation, declared
from ..operations import knowledge as kops
from .output import emit, err, out, print_decisions, progress_bar, table
from .build import VALUE_NAMES, Arg, Command, after_the_subcommand


def _bare(annotation: Any) -> Any:
    """``int`` for ``Optional[int]``, ``dict`` for ``Optional[Annotated[dict[...], ...]]``."""
    if get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
    if get_origin(annotation) is typing.Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _click_type(annotation: Any) -> Any:
    bare = _bare(annotation)
    if bare is int:
        return click.INT
    if bare is float:
        return click.FLOAT
    if get_origin(bare) is Literal:
        return click.Choice([str(v) for v in get_args(bare)])
    return click.STRING


def _params(op: Operation) -> list[click.Parameter]:
    shape = op.cli
    assert shape is not None
    params: list[click.Parameter] = []
    fields = op.input.model_fields
    for name in shape.args:
        field = fields[name]
        many = get_origin(_bare(field.annotation)) is list
        required = field.is_required() and op.name not in ALTERNATES
        params.append(Arg([name], nargs=-1 if many else 1, required=required,
                          type=click.STRING if many else _click_type(field.annotation),
                          metavar=shape.metavars.get(name), arg_help=shape.help.get(name) or field.description))
    for name, field in fields.items():
        bare = _bare(field.annotation)
        if name in shape.args or get_origin(bare) is dict or bare is dict:  # a JSON object: Cli.extra builds it
            continue
        flags = shape.flags.get(name) or ("--" + name.replace("_", "-"),)
        help_ = shape.help.get(name) or field.description or name.replace("_", " ")
        if bare is bool:
            params.append(click.Option([*flags, name], is_flag=True, default=None, help=help_))
        elif get_origin(bare) is list:
            params.append(click.Option([*flags, name], multiple=True, help=help_ + ("" if "repeat" in help_.lower()
                                                                                   else " Repeatable.")))
        else:
            kind = _click_type(field.annotation)
            default = shape.defaults.get(name, field.default)
            default = None if default in (PydanticUndefined, "") else default
            given_default = {"default": default} if default is not None else {}  # click 8.5: None counts as given
            params.append(click.Option([*flags, name], type=kind, help=help_, **given_default,
                                       required=field.is_required() and name not in shape.defaults,
                                       show_default=default is not None,
                                       metavar=None if isinstance(kind, click.Choice) else VALUE_NAMES.get(bare,
                                                                                                           "TEXT")))
    for name, (flags, help_, many) in shape.extra.items():
        params.append(click.Option([*flags, name], multiple=many, help=help_))
    if op.name in ALTERNATES:
        flag, _, help_ = ALTERNATES[op.name]
        params.append(click.Option([flag, "alternate"], is_flag=True, help=help_))
    if shape.namespace:
        params.append(click.Option(["--namespace", "-n"], default="default",
                                   help="Memory store name (namespace memory:<name>)."))
    if shape.graph:
        from ..operations.graph import GRAPH_FLAG, GRAPH_HELP

        params.append(click.Option([*GRAPH_FLAG, "graph_name"], help=GRAPH_HELP))
    params.append(click.Option(["--json", "json_out"], is_flag=True, help="Print only JSON on stdout (for scripts)."))
    params.extend(after_the_subcommand())
    return params


def _given(op: Operation, values: dict[str, Any]) -> dict[str, Any]:
    """What the command line gave: absent options (None, an empty repeat, the declared default that help shows)
    leave the operation's defaults."""
    fields = op.input.model_fields
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()
            if v is not None and v != () and not (k in fields and v == fields[k].default)}


def _caller(ctx: click.Context, namespace: str | None, graph: str | None,
            progress: Callable[[str, int, int], None] | None) -> Caller:
    from ..workspace import Workspace

    obj = ctx.find_root().obj
    opts = obj if isinstance(obj, dict) else {}
    ws = Workspace.open(home=opts.get("home"))
    who = opts.get("principal") or os.environ.get("AGENTCONTEXT_PRINCIPAL") or None
    return Caller(ws, who, namespace or "default", graph, progress)


def _switch(op: Operation, values: dict[str, Any]) -> tuple[Operation, dict[str, Any]]:
    """``search --all QUERY``: the positional words move onto the alternate operation's arguments."""
    if not values.pop("alternate", False):
        return op, values
    flag, other, _ = ALTERNATES[op.name]
    target = declared()[other]
    assert op.cli is not None and target.cli is not None
    words = [values.pop(name) for name in op.cli.args if name in values]
    allowed = set(target.input.model_fields)
    extra = sorted(set(values) - allowed)
    if extra or len(words) > len(target.cli.args):
        from ..errors import ValidationError

        raise ValidationError(f"{op.cli.path[0]} {flag} takes only "
                              + ", ".join(target.cli.args + tuple(sorted(allowed - set(target.cli.args))))
                              + f"; the filters work in one pack: {op.cli.path[0]} PACK QUERY --kind ...")
    return target, {**values, **dict(zip(target.cli.args, words))}


def click_command(op: Operation) -> click.Command:
    """The click command of ``op`` (its ``Cli`` shape, its help, its printer)."""
    shape = op.cli
    assert shape is not None and "cli" not in op.skips, op.name

    def run(**values: Any) -> None:
        ctx = click.get_current_context()
        as_json = values.pop("json_out")
        namespace = values.pop("namespace", None)
        graph = values.pop("graph_name", None)
        given = _given(op, values)
        chosen, given = _switch(op, given)
        given = {**(chosen.cli.defaults if chosen.cli else {}), **given}
        prepared = chosen.cli.prepare(given) if chosen.cli and chosen.cli.prepare else given
        args = chosen.parse(prepared, strict=False)
        with progress_bar(not as_json and not chosen.read_only) as report:
            result = chosen.run(_caller(ctx, namespace, graph, report), args)
        data = chosen.cli.pick(result) if chosen.cli and chosen.cli.pick else result
        emit(data, as_json, lambda d: HUMAN[chosen.name](d, args))
        code = chosen.cli.exit_code(result) if chosen.cli and chosen.cli.exit_code else 0
        if code:
            ctx.exit(code)

    command = Command(shape.path[-1], callback=run, params=_params(op), help=op.help,
                            context_settings={"help_option_names": ["-h", "--help"]})
    command.declared = op.name  # type: ignore[attr-defined]
    return command


def derived(ops: list[Operation]) -> list[tuple[tuple[str, ...], click.Command]]:
    """(path, command) for each operation the CLI serves: one command per path (an alternate rides on its main)."""
    seen: set[tuple[str, ...]] = set()
    found = []
    for op in ops:
        if op.cli is None or "cli" in op.skips or op.cli.path in seen:
            continue
        seen.add(op.cli.path)
        found.append((op.cli.path, click_command(op)))
    return found


# --- printers for people (under --json the data is printed as it is) ----------------------------------------------

ALTERNATES = {kops.SEARCH.name: ("--all", kops.SEARCH_ALL.name, "Search every pack you may read: search --all "
                                 "QUERY.")}


def _packs(rows: list[dict[str, Any]], _: Any) -> None:
    table(("pack", "name", "docs", "editable"),
          [{**r, "editable": "yes" if r["editable"] else "read-only"} for r in rows])


def _hits(rows: list[dict[str, Any]], _: Any) -> None:
    if not rows:
        out.print("no matches")
        return
    every = any("pack" in h for h in rows)
    table(("score", *(("pack",) if every else ()), "selector", "kind", "title", "signals"),
          [{**h, "score": f"{h['score']:.2f}", "signals": ", ".join(h["signals"])} for h in rows])


def _neighbors(items: list[dict[str, Any]], _: Any) -> None:
    for n in items:
        out.print(f"{n['type']:>11} -> {n['selector']}" + (f"  {n['title']}" if n["exists"] else "  (missing)"))
    if not items:
        out.print("no outbound edges")


def _doc(doc: dict[str, Any], _: Any) -> None:
    """A doc for people: the title in bold, the rest as written (no markup or emoji codes read from the text)."""
    from rich.text import Text

    out.print(Text.assemble((doc["title"], "bold"), f" ({doc['selector']}, {doc['kind']}, v{doc['version']})\n"
                            f"{doc['summary']}\n\n{doc['content']}"))


def _flash(bundle: dict[str, Any], args: Any) -> None:
    err.print(f"flash {bundle['pack']} {' '.join(args.selectors)}: {len(bundle['order'])} docs, "
              f"{bundle['tokens']} tokens, digest {bundle['digest'][:16]}")
    err.print("order: " + " -> ".join(bundle["order"]))
    out.print(bundle["text"], markup=False)


def _recalled(rows: list[dict[str, Any]], _: Any) -> None:
    if not rows:
        out.print("no memories match")
    for r in rows:
        signals = ", ".join(f"{k}={v:.3f}" for k, v in r.get("signals", {}).items())
        out.print(f"[{r['score']:.3f}] {r['id']}  {r['content']}", markup=False)
        if signals:
            out.print(f"         {signals}", markup=False, style="dim")


def _memory(r: dict[str, Any], _: Any) -> None:
    out.print(f"{r['id']}  {r['content']}\nmetadata: {r.get('metadata')}", markup=False)


def _versions(d: dict[str, Any], _: Any) -> None:
    for v in d["versions"]:
        out.print(f"v{v['version']}  {v['updated_at']}  {v['content']}", markup=False)


def _compliance(r: dict[str, Any], _: Any) -> None:
    verdict = "compliant" if r["compliant"] else ("excepted by " + r["exception_id"] if r.get("exception_id")
                                                   else "VIOLATION")
    out.print(f"{r['decision_id']} vs {r['policy_id']} v{r['policy_version']}: {verdict}", markup=False)
    for v in r["violations"]:
        out.print(f"  {v['rule']}: {v['message']}", markup=False)


def _context(data: dict[str, Any], _: Any) -> None:
    out.print(data["text"], markup=False)
    out.print(f"\n{data['num_sources']} sources, {data['tokens']} tokens"
              + (f" of {data['budget_tokens']}" if data["budget_tokens"] else "")
              + (f"; left out: {', '.join(d['id'] for d in data['dropped'])}" if data["dropped"] else "")
              + "".join(f"; {k}: {v}" for k, v in data["skipped"].items()), style="dim", markup=False)


def _links(r: dict[str, Any], _: Any) -> None:
    if not r["links"]:
        out.print("no links to predict")
        return
    table(("source", "target", "score"), [{**x, "score": f"{x['score']:.4f}"} for x in r["links"]])


def _paths(r: dict[str, Any], _: Any) -> None:
    if not r["paths"]:
        out.print(f"no path from {r['source']} to {r['target']}", markup=False)
    for p in r["paths"]:
        out.print(f"{p['length']:g}  " + " -> ".join(p["path"]), markup=False)


def _grants(rows: list[dict[str, Any]], _: Any) -> None:
    if not rows:
        out.print("no grants: single-user mode, the owner holds admin on everything")
        return
    table(("principal", "pattern", "level", "granted_by", "granted_at"), rows)


def _issued(r: dict[str, Any], _: Any) -> None:
    """The token on stdout (shown this once), what to do with it on stderr."""
    out.print(r["token"], markup=False)
    err.print(f"token {r['id']} for {r['principal']}: store it now, it is not shown again", markup=False)


HUMAN: dict[str, Callable[[Any, Any], None]] = {
    "list_knowledge_packs": _packs,
    "search_knowledge": _hits,
    "search_all_knowledge": _hits,
    "list_knowledge_neighbors": _neighbors,
    "read_knowledge_doc": _doc,
    "flash_knowledge": _flash,
    "reindex_knowledge": lambda d, _: out.print(f"embedded {d['embedded']} texts"
                                                + (f"; the workspace now uses {d['model']}" if d.get("model") else "")
                                                + (f"; glossed {d['glossed']} memories" if "glossed" in d else "")),
    "store_memory": lambda d, _: out.print(d["id"]),
    "retrieve_memories": _recalled,
    "forget_memories": lambda d, _: out.print(f"forgot {d['forgotten']} memories"),
    "get_memory": _memory,
    "conversation_history": lambda d, _: [out.print(f"[{r['timestamp']}] {r['content']}", markup=False) for r in d],
    "edit_memory": lambda d, _: out.print(f"{d['id']} is now version {d['version']}", markup=False),
    "memory_versions": _versions,
    "record_decision": lambda d, _: out.print(d["decision_id"]),
    "find_precedents": lambda d, _: print_decisions(d["precedents"], "no precedents"),
    "get_causal_chain": lambda d, _: print_decisions(d["chain"], f"no recorded {d['direction']} decisions"),
    "check_compliance": _compliance,
    "get_context": _context,
    "predict_links": _links,
    "find_paths": _paths,
    "grant_access": lambda r, _: out.print(f"granted {r['level']} on {r['pattern']} to {r['principal']}",
                                           markup=False),
    "revoke_access": lambda r, _: out.print(("revoked" if r["revoked"] else "no grant to revoke:")
                                            + f" {r['principal']} {r['pattern']}", markup=False),
    "list_grants": _grants,
    "create_token": _issued,
    "list_tokens": lambda rows, _: table(("id", "principal", "created_at", "created_by", "note"), rows),
    "revoke_token": lambda r, _: out.print(f"revoked token {r['id']}", markup=False),
    "read_audit_log": lambda rows, _: table(("at", "principal", "action", "target", "outcome"), rows),
}
