"""The main job on the embedded default: load the example packs into a fresh workspace, then search one,
walk a doc's neighbours, read a doc and flash a module, printing each step.

Run with `make demo` (or `python examples/demo.py [WORKSPACE_DIR]`).
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agentcontext.knowledge.flash import flash
from agentcontext.knowledge.packs import install_folder
from agentcontext.knowledge.tools import (list_knowledge_neighbors, list_knowledge_packs, read_knowledge_doc,
                                          search_knowledge)
from agentcontext.workspace import Workspace

PACKS = Path(__file__).resolve().parent / "packs"
DOCS = "pkg:agentcontext.agentcontext.docs.guide"
console = Console(highlight=False)


def step(title: str) -> None:
    console.rule(f"[bold]{title}")


def main(home: Path) -> None:
    ws = Workspace.open(home=home, create=True)
    console.print(f"workspace: {home} ({ws.store.url})")

    step("1. Load the example packs")
    for folder in ("semdag", "agentcontext-docs"):
        started = time.perf_counter()
        for r in install_folder(ws, PACKS / folder):
            console.print(f"installed {r['pack']}: {r['docs']} docs, {r['edges']} edges "
                          f"({time.perf_counter() - started:.1f}s, embeddings included)")
    table = Table("pack", "name", "docs", "editable")
    for p in list_knowledge_packs(ws):
        table.add_row(p["pack"], p["name"], str(p["docs"]), "yes" if p["editable"] else "read-only")
    console.print(table)

    step(f"2. Search {DOCS} for 'how do I assemble prerequisites before a task'")
    hits = search_knowledge(ws, DOCS, "how do I assemble prerequisites before a task", limit=5)
    table = Table("score", "selector", "kind", "title", "signals")
    for h in hits:
        table.add_row(f"{h['score']:.2f}", h["selector"], h["kind"], h["title"], ", ".join(h["signals"]))
    console.print(table)

    best = hits[0]["selector"]
    step(f"3. Walk the outbound edges of {best}")
    for n in list_knowledge_neighbors(ws, DOCS, best):
        console.print(f"  {n['type']:>11} -> {n['selector']}: {n['summary']}")

    step(f"4. Read {best}")
    doc = read_knowledge_doc(ws, DOCS, best)
    console.print(f"[bold]{doc['title']}[/bold] (v{doc['version']}, {doc['kind']})")
    body = doc["content"].strip()
    console.print(body[:900] + ("\n..." if len(body) > 900 else ""), markup=False)

    step("5. Flash lib:semdag invitations (seed 000: foundations first, each once)")
    bundle = flash(ws, "lib:semdag", "invitations")
    console.print("reading order: " + " -> ".join(d.title for d in bundle.docs))
    console.print(f"{bundle.tokens} tokens, digest {bundle.digest[:16]}")
    step(f"6. Flash {DOCS} {best}")
    bundle = flash(ws, DOCS, best)
    console.print("reading order: " + " -> ".join(bundle.order))
    console.print(f"{len(bundle.order)} docs, {bundle.tokens} tokens, digest {bundle.digest[:16]}")
    ws.close()


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="agentcontext-demo-"))
    main(target / ".agentcontext" if target.name != ".agentcontext" else target)
