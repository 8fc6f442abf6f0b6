"""``agentcontext erase ENTITY`` and ``agentcontext receipts``: erase an entity, print its erasure receipt.

``erase`` calls ``erasure.erase_workspace_entity`` (what MCP and the web console call too): the workspace graph's
node, the memories of ``memory:<name>`` that name the entity and their vectors, the tombstone last, and the
receipt appended to the audit log under the acting principal, which ``receipts`` reads back. It needs
``write`` on ``memory:<name>`` and ``graph:default`` (and admin on a foreign namespace the id names).
Reading receipts is reading the audit log: your own, or everyone's for the owner or an admin of ``*``.
"""
from __future__ import annotations

from typing import Any, Optional

import click

from .build import Argument, Option
from .common import JSON_OPTION, emit, open_workspace, out, principal, table

RECEIPT_OUTCOMES = ("complete", "incomplete")  # denied attempts are audited under the same action

NS_OPTION = Option("default", "--namespace", "-n", help="Memory store to erase from (access name "
                         "memory:NAME).")


def _print_receipt(r: dict[str, Any]) -> None:
    out.print(f"erasure of {r['entity_id']} at {r['erased_at']}: "
              + ("complete" if r["complete"] else "INCOMPLETE"), markup=False)
    for leg, result in r["stores"].items():
        rest = ", ".join(f"{k} {v}" for k, v in result.items() if k not in ("status", "detail"))
        out.print(f"  {leg:11} {result.get('status')}" + (f"  ({rest})" if rest else ""), markup=False)
    physical = r.get("physical") or {}
    out.print(f"  {'physical':11} {physical.get('status')}", markup=False)
    for line in physical.get("may_remain", []):
        out.print(f"    may remain: {line}", markup=False)
    for m in r.get("mentions", []):
        state = "erased" if m.get("erased") else ("read-only, kept" if m.get("action") == "read_only" else "kept")
        out.print(f"  mention {m['id']} ({m['kind']}, via {'/'.join(m['via'])}): {state}", markup=False)
    for c in r.get("external_copies", []):
        out.print(f"  copy outside the store: {c['path'] or 'returned to the caller'} ({c['what']}, {c['at']})",
                  markup=False)


def erase(ctx: click.Context, entity_id: str = Argument(..., metavar="ENTITY_ID"),
          reason: Optional[str] = Option(None, "--reason", help="Why (kept on the tombstone and receipt)."),
          mentions: bool = Option(False, "--mentions", help="Also erase the memories, lib: docs, decisions "
                                        "and graph nodes that name the entity (pkg: docs are only listed)."),
          namespace: str = NS_OPTION, json_out: bool = JSON_OPTION) -> None:
    """Erase an entity: its graph node, the memories and decisions about it, every version, vector and text-index
    term of them, what checkpoints and the audit log hold about them; print the receipt (mentions, copies
    outside the store, what may physically remain).

    Exits 1 when the receipt is incomplete (a store failed or cannot delete, or its files could not be cleaned)."""
    from ..erasure import erase_workspace_entity

    receipt = erase_workspace_entity(open_workspace(ctx), entity_id, reason=reason, principal=principal(ctx),
                                     namespace=namespace, erase_mentions=mentions)
    emit(receipt.to_dict(), json_out, _print_receipt)
    if not receipt.complete:
        raise click.exceptions.Exit(1)


def receipts(ctx: click.Context, entity_id: Optional[str] = Argument(None, metavar="[ENTITY_ID]",
                                                                          help="Only this entity's."),
             json_out: bool = JSON_OPTION) -> None:
    """Erasure receipts recorded in the audit log, oldest first."""
    from .. import access

    rows = access.audit_log(open_workspace(ctx), principal(ctx), action="erase_entity")
    found = [{**r["detail"], "outcome": r["outcome"], "by": r["principal"]} for r in rows
             if r["outcome"] in RECEIPT_OUTCOMES and (entity_id is None or r["target"] == entity_id)]

    def human(items: list[dict[str, Any]]) -> None:
        if not items:
            out.print("no erasure receipts")
        else:
            table(("erased_at", "entity_id", "by", "outcome", "reason"), items)

    emit(found, json_out, human)


COMMANDS = [erase, receipts]
