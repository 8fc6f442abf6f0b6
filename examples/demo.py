"""The main job on the embedded default: load the example packs into a workspace, then search one,
walk a doc's neighbours, read a doc and flash a module, printing each step; then remember a few things and
record a few decisions under a policy, so the web console (`agentcontext serve web --open`) has them all.

Run with `make demo` (or `python examples/demo.py [FOLDER]`): the workspace is FOLDER/.agentcontext, by default
the one in the current folder, where `agentcontext` commands run from here find it.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agentcontext.decisions.models import Policy
from agentcontext.decisions.policy import PolicyEngine
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.errors import ConflictError
from agentcontext.graph.context_graph import workspace_graph
from agentcontext.knowledge.flash import flash
from agentcontext.knowledge.packs import install_folder
from agentcontext.knowledge.tools import (list_knowledge_neighbors, list_knowledge_packs, read_knowledge_doc,
                                          search_knowledge)
from agentcontext.memory import AgentMemory
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

    step("7. Remember and decide (memory:default and the workspace graph)")
    remember_and_decide(ws)
    ws.close()
    step("Next")
    folder = home.parent
    where = "" if folder.resolve() == Path.cwd().resolve() else f" --home {home}"
    console.print(f"Open it all in the browser: [bold]agentcontext{where} serve web --open[/bold] "
                  "(.venv/bin/agentcontext when the virtualenv is not active)")


def remember_and_decide(ws: Workspace) -> None:
    """A few memories (two conversations, two users, entities) and a causal chain of decisions under a
    policy, with a compliance check, an exception and an approval. Only once per workspace."""
    memory = AgentMemory(workspace=ws, max_memory_size=None)
    if memory.count():
        console.print("memories and decisions are already there")
        return
    memory.store([
        {"content": "Alice prefers invitations to expire after 7 days", "conversation_id": "onboarding",
         "user_id": "alice", "metadata": {"entities": ["alice"]}},
        {"content": "Bob asked whether a membership can span two accounts; it cannot", "conversation_id":
         "onboarding", "user_id": "bob", "metadata": {"entities": ["bob"]}},
        {"content": "Alice's team signs in with SSO identities only", "conversation_id": "security",
         "user_id": "alice", "metadata": {"entities": ["alice", "sso"]}},
    ])
    graph = workspace_graph(ws)
    recorder = DecisionRecorder(graph, actor=ws.owner)
    first = recorder.record_decision("access", "Invitations must expire so stale links cannot be used",
                                     "Old invitation links leaked in a forwarded email", "expire_after_7_days", 0.9,
                                     entities=["invitations"], decision_maker="alice")
    second = recorder.record_decision("access", "Remind invitees a day before their invitation expires",
                                      "Expiry made some invitees miss the window", "send_reminder", 0.7,
                                      decision_maker="bob", caused_by=[first])
    recorder.record_decision("access", "Let admins re-send an expired invitation in one click",
                             "", "resend_button", 0.6, decision_maker="bob", caused_by=[second])
    engine = PolicyEngine(graph_store=graph, actor=ws.owner)
    try:
        engine.add_policy(Policy("access-review", "Access decisions are reviewed",
                                 "Access decisions need a reason and confidence of at least 0.8",
                                 {"min_confidence": 0.8, "requires_reasoning": True}, "access"))
    except ConflictError:
        pass
    result = engine.check_compliance(second, "access-review")
    engine.record_exception(second, "access-review", reason="low-risk reminder", approver=ws.owner)
    engine.record_approval(first, approver="alice", approval_method="email", approval_context="security review")
    console.print(f"3 memories, 3 decisions in a causal chain; compliance of the reminder: "
                  f"{'compliant' if result.compliant else '; '.join(result.reasons)} (exception recorded)")


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    main(target / ".agentcontext" if target.name != ".agentcontext" else target)
