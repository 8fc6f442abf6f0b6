"""``agentcontext memory ...``: thin wrappers over AgentMemory (which checks and audits every call for the
acting principal, as it does for MCP)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from .common import JSON_OPTION, emit, must_exist, open_workspace, out, principal
from ..errors import ValidationError

if TYPE_CHECKING:
    from ..memory import AgentMemory

memory_app = typer.Typer(help="Agent memory: store, retrieve, get, forget, export, import.", no_args_is_help=True)

NS_OPTION = typer.Option("default", "--namespace", "-n", help="Memory store name (namespace memory:<name>).")
CONVERSATION_OPTION = typer.Option(None, "--conversation", "-c", help="A conversation id.")
USER_OPTION = typer.Option(None, "--user", "-u", help="A user id.")


def _memory(ctx: typer.Context, namespace: str) -> AgentMemory:
    # The CLI never evicts or expires on its own.
    from ..memory.service import workspace_memory

    return workspace_memory(open_workspace(ctx), namespace, principal(ctx))


def _meta(pairs: list[str] | None) -> dict[str, Any]:
    out_: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ValidationError(f"--meta expects key=value, got {pair!r}", meta=pair)
        key, value = pair.split("=", 1)
        if not key:
            raise ValidationError(f"--meta expects key=value, got {pair!r}", meta=pair)
        out_[key] = value
    return out_


def _print_results(rows: list[dict[str, Any]]) -> None:
    if not rows:
        out.print("no memories match")
    for r in rows:
        signals = ", ".join(f"{k}={v:.3f}" for k, v in r.get("signals", {}).items())
        out.print(f"[{r['score']:.3f}] {r['id']}  {r['content']}", markup=False)
        if signals:
            out.print(f"         {signals}", markup=False, style="dim")


@memory_app.command("store")
def store_cmd(ctx: typer.Context, text: str = typer.Argument(..., help="The memory text."),
              conversation: Optional[str] = CONVERSATION_OPTION,
              user: Optional[str] = USER_OPTION,
              meta: Optional[list[str]] = typer.Option(None, "--meta", "-m", help="Metadata key=value (repeatable)."),
              entity: Optional[list[str]] = typer.Option(None, "--entity", "-e", help="An entity the memory is "
                                                         "about (repeatable; metadata 'entities')."),
              namespace: str = NS_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Store one memory; prints its id."""
    mem = _memory(ctx, namespace)
    metadata = _meta(meta)
    if entity:
        if "entities" in metadata:
            raise ValidationError("give entities with --entity (repeatable), not also -m entities=...")
        metadata["entities"] = list(entity)
    mid = mem.store(text, metadata=metadata, conversation_id=conversation, user_id=user)
    emit({"id": mid, "namespace": mem.namespace}, json_out, lambda d: out.print(d["id"]))


@memory_app.command("retrieve")
def retrieve_cmd(ctx: typer.Context, query: str = typer.Argument(...),
                 k: int = typer.Option(5, "--k", "-k", help="At most this many, best first."),
                 conversation: Optional[str] = CONVERSATION_OPTION,
                 user: Optional[str] = USER_OPTION,
                 meta: Optional[list[str]] = typer.Option(None, "--meta", "-m", help="Metadata filter key=value."),
                 min_score: float = typer.Option(0.0, "--min-score", help="Drop results scoring below this."),
                 namespace: str = NS_OPTION, json_out: bool = JSON_OPTION) -> None:
    """The best memories for QUERY (hybrid: dense + BM25 + conversation context)."""
    mem = _memory(ctx, namespace)
    rows = mem.retrieve(query, max_results=k, min_score=min_score, conversation_id=conversation, user_id=user,
                        filters=_meta(meta))
    emit(rows, json_out, _print_results)


@memory_app.command("forget")
def forget_cmd(ctx: typer.Context, memory_id: Optional[str] = typer.Argument(None, help="A memory id."),
               conversation: Optional[str] = CONVERSATION_OPTION,
               user: Optional[str] = USER_OPTION,
               days_old: Optional[float] = typer.Option(None, "--days-old", help="Older than this many days."),
               namespace: str = NS_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Delete memories by id, conversation, user or age (all given conditions must match)."""
    count = _memory(ctx, namespace).forget(memory_id, conversation, days_old, user)
    emit({"forgotten": count}, json_out, lambda d: out.print(f"forgot {d['forgotten']} memories"))


@memory_app.command("export")
def export_cmd(ctx: typer.Context,
               destination: Optional[Path] = typer.Argument(None, help="Folder for one Markdown file per memory."),
               format: Optional[str] = typer.Option(None, "--format", "-f", help="json (to stdout) or markdown."),
               conversation: Optional[str] = CONVERSATION_OPTION,
               user: Optional[str] = USER_OPTION,
               type: Optional[str] = typer.Option(None, "--type", help="Only memories of this type (metadata type)."),
               namespace: str = NS_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Export memories: a DIR of Markdown files, or --format json to stdout."""
    mem = _memory(ctx, namespace)
    fmt = format or ("markdown" if destination is not None else "json")
    if fmt == "markdown" and destination is None:
        raise ValidationError("Markdown export needs a destination folder: agentcontext memory export DIR")
    data = mem.export(conversation_id=conversation, user_id=user, type=type, format=fmt, destination=destination)
    if fmt == "markdown":
        emit({"written": len(data), "paths": data}, json_out, lambda d: out.print(f"wrote {d['written']} files"))
    else:
        if destination is not None:  # written by the export (atomically), which records where the copy went
            emit({"written": str(destination)}, json_out, lambda d: out.print(f"wrote {d['written']}"))
        else:
            sys.stdout.write(data + "\n")


@memory_app.command("import")
def import_cmd(ctx: typer.Context, path: Path = typer.Argument(..., help="A Markdown folder/file or a JSON file."),
               format: Optional[str] = typer.Option(None, "--format", "-f", help="json or markdown (default: guess)."),
               namespace: str = NS_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Import memories: new ids are created, existing ids updated, unchanged ones left alone."""
    must_exist(path, folders=True)
    mem = _memory(ctx, namespace)
    fmt = format or ("json" if path.suffix == ".json" else "markdown")
    data: Any = path
    if fmt == "json":
        data = path.read_text(encoding="utf-8")
    count = mem.import_data(data, format=fmt)
    skipped = getattr(count, "skipped", [])
    result = {"imported": int(count), **({"skipped": skipped} if skipped else {})}
    emit(result, json_out, lambda d: out.print(
        f"imported {d['imported']} memories" + (f"; skipped {len(skipped)} an erasure removed" if skipped else "")))


@memory_app.command("get")
def get_cmd(ctx: typer.Context, memory_id: str = typer.Argument(..., metavar="MEMORY_ID"),
            namespace: str = NS_OPTION, json_out: bool = JSON_OPTION) -> None:
    """One memory by id: its text, metadata, conversation, user and times (as the MCP tool get_memory)."""
    row = _memory(ctx, namespace).require(memory_id)
    emit(row, json_out, lambda r: out.print(f"{r['id']}  {r['content']}\nmetadata: {r.get('metadata')}",
                                            markup=False))


@memory_app.command("conversation")
def conversation_cmd(ctx: typer.Context, conversation_id: str = typer.Argument(...),
                     max_items: int = typer.Option(50, "--max-items", help="The last this many."),
                     namespace: str = NS_OPTION,
                     json_out: bool = JSON_OPTION) -> None:
    """A conversation's memories, oldest first."""
    rows = _memory(ctx, namespace).get_conversation_history(conversation_id, max_items)
    emit(rows, json_out, lambda d: [out.print(f"[{r['timestamp']}] {r['content']}", markup=False) for r in d])


@memory_app.command("stats")
def stats_cmd(ctx: typer.Context, namespace: str = NS_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Memory counts and evictions."""
    emit(_memory(ctx, namespace).stats(), json_out, _print_stats)


def _print_stats(d: dict[str, Any]) -> None:
    cap = "no size cap" if d["max_memory_size"] is None else f"at most {d['max_memory_size']} memories"
    keep = "kept until forgotten" if d["retention_days"] is None else f"kept {d['retention_days']} days"
    evicted = d["evicted"]
    out.print(f"{d['namespace']}: {d['total_memories']} memories, {d['conversations']} conversations, "
              f"{d['users']} users", markup=False)
    out.print(f"limits: {cap}, {keep}; evicted so far: {evicted['expired']} expired, {evicted['lru']} "
              f"least recently used", markup=False)
    out.print(f"vectors: {d['vector_store']}", markup=False)
