"""Prompt rendering: ``{{ lib.<slug> }}`` / ``{{ pkg.<scope>.<repo>.<package>.<pack> }}`` become the pack
index (never bodies); ``{{ lib.<slug>.<selector> }}`` becomes one doc. Unknown references are errors."""
from __future__ import annotations

import re

from .. import access
from ..errors import NotFoundError, ValidationError
from ..workspace import Workspace
from .graphview import pack_view
from .packs import PACK, doc_id, get_pack

REF = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")


def pack_index(ws: Workspace, pack: str, principal: str | None = None) -> str:
    """The pack index an agent is seeded with: selector, kind, title, summary and related edges."""
    access.require_visible(ws, principal, pack, "render", pack)  # before the lookup: reveals nothing
    record = get_pack(ws, pack)
    readable = access.doc_filter(ws, principal, pack)  # None = the whole pack is readable
    view = pack_view(ws, pack)
    lines = [f"# Knowledge pack: {record['name']} ({pack})",
             "Search, walk neighbours and read bodies with the knowledge tools; this index is a discovery "
             "hint, not the content.", ""]
    nodes = ws.store.find_nodes(namespace=pack, with_content=False, order="key")
    for node in nodes:
        if readable is not None and not readable(node.key):
            continue
        line = f"- `{node.key}` [{node.kind}] {node.title}"
        if node.summary:
            line += f": {node.summary}"
        rel = [(t, d) for t, d in view.outbound.get(node.id, [])
               if readable is None or readable(d.split("/", 1)[1])]
        if rel:
            line += " (related: " + ", ".join(f"{t} {d.split('/', 1)[1]}" for t, d in rel) + ")"
        lines.append(line)
    return "\n".join(lines) + "\n"


def render_doc(ws: Workspace, pack: str, selector: str, principal: str | None = None) -> str:
    access.require_doc(ws, principal, pack, selector, "read", "render")  # before the lookup: reveals nothing
    get_pack(ws, pack)
    node = ws.store.get_node(doc_id(pack, selector))
    if node is None:
        raise NotFoundError(f"template refers to {pack}.{selector}, which does not exist", pack=pack,
                            selector=selector)
    return f"# {node.title} ({node.key})\n\n{node.content.strip()}\n"


def resolve_reference(ws: Workspace, ref: str, principal: str | None = None) -> tuple[str, str | None]:
    """``lib.slug[.selector]`` or ``pkg.scope.repo.package.pack[.selector]`` -> (pack, selector or None)."""
    parts = ref.split(".")
    if parts[0] == "lib" and len(parts) >= 2:
        pack, rest = f"lib:{parts[1]}", parts[2:]
    elif parts[0] == "pkg" and len(parts) >= 5:
        pack, rest = "pkg:" + ".".join(parts[1:5]), parts[5:]
    else:
        raise ValidationError(f"template reference {{{{ {ref} }}}} is not lib.<slug>[.<selector>] or "
                              "pkg.<scope>.<repo>.<package>.<pack>[.<selector>]", reference=ref)
    access.require_visible(ws, principal, pack, "render", pack)  # an unreadable pack and a missing one look alike
    if ws.store.get_record(PACK, pack) is None:
        raise NotFoundError(f"template refers to pack {pack}, which is not installed", reference=ref, pack=pack)
    return pack, (".".join(rest) or None)


def render(ws: Workspace, template: str, principal: str | None = None) -> str:
    def replace(match: re.Match[str]) -> str:
        pack, selector = resolve_reference(ws, match.group(1), principal)
        return render_doc(ws, pack, selector, principal) if selector else pack_index(ws, pack, principal)

    return REF.sub(replace, template)
