"""``agentcontext memory ...`` commands not yet declared as operations: export, import, stats (thin wrappers over
AgentMemory, which checks and audits every call for the acting principal, as it does for MCP). store, retrieve,
forget, get, conversation, edit and versions are derived from their declarations (operations/memory.py)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import click

from .build import Argument, Group, Option
from .common import JSON_OPTION, emit, must_exist, open_workspace, out, principal
from ..errors import ValidationError

if TYPE_CHECKING:
    from ..memory import AgentMemory

memory_app = Group(help="Agent memory: store, retrieve, get, edit, versions, forget, export, import.",
                         no_args_is_help=True)

NS_OPTION = Option("default", "--namespace", "-n", help="Memory store name (namespace memory:<name>).")
CONVERSATION_OPTION = Option(None, "--conversation", "-c", help="A conversation id.")
USER_OPTION = Option(None, "--user", "-u", help="A user id.")


def _memory(ctx: click.Context, namespace: str) -> AgentMemory:
    # The CLI never evicts or expires on its own.
    from ..memory.service import workspace_memory

    return workspace_memory(open_workspace(ctx), namespace, principal(ctx))


@memory_app.command("export")
def export_cmd(ctx: click.Context,
               destination: Optional[Path] = Argument(None, help="Folder for one Markdown file per memory."),
               format: Optional[str] = Option(None, "--format", "-f", help="json (to stdout) or markdown."),
               conversation: Optional[str] = CONVERSATION_OPTION,
               user: Optional[str] = USER_OPTION,
               type: Optional[str] = Option(None, "--type", help="Only memories of this type (metadata type)."),
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
def import_cmd(ctx: click.Context, path: Path = Argument(..., help="A Markdown folder/file or a JSON file."),
               format: Optional[str] = Option(None, "--format", "-f", help="json or markdown (default: guess)."),
               namespace: str = NS_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Import memories: new ids are created, existing ids updated, unchanged ones left alone."""
    must_exist(path, folders=True)
    mem = _memory(ctx, namespace)
    fmt = format or ("json" if path.suffix == ".json" else "markdown")
    data: Any = path
    if fmt == "json":
        data = path.read_text(encoding="utf-8")
    count = mem.import_data(data, format=fmt)
    from ..memory.io import ImportResult

    skipped = count.skipped if isinstance(count, ImportResult) else []
    result = {"imported": int(count), **({"skipped": skipped} if skipped else {})}
    emit(result, json_out, lambda d: out.print(
        f"imported {d['imported']} memories" + (f"; skipped {len(skipped)} an erasure removed" if skipped else "")))


@memory_app.command("stats")
def stats_cmd(ctx: click.Context, namespace: str = NS_OPTION, json_out: bool = JSON_OPTION) -> None:
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
