"""Prompt rendering: pack references in a template become pack text; everything else is left for the runtime.

- ``{{ lib.<slug> }}`` / ``{{ pkg.<scope>.<repo>.<package>.<pack> }}`` become the pack index (selector, kind,
  title, summary, related; never bodies); ``{{ lib.<slug>.<selector> }}`` / ``{{ pkg.<...>.<pack>.<selector> }}``
  become that one doc. Names are matched as Nenjo templates write them: a '-' in a pack name is written '_'
  (``{{ pkg.nenjo_ai.packages.knowledge.core }}`` is the pack ``pkg:nenjo-ai.packages.knowledge.core``).
- A doc that is a context block (``nenjo.context_block.v1``) is a template itself: it renders as its text, with
  its own pack references resolved in turn (a block that includes itself is a ``CycleError``).
- Any other variable (``{{ task.title }}``, ``{{ chat.message }}``, ``{{ self }}``) and every ``{% ... %}`` tag are
  left exactly as written, for the agent runtime to fill; ``strict=True`` refuses them instead.
  ``\\{{ ... }}`` is an escaped, literal ``{{ ... }}`` (the backslash is dropped).
- A pack reference to a pack that is not installed, or a doc that is not there, is an error in both modes.
- ``{{ context.<name> }}`` is a context block a file imports itself (a Nenjo agent's ``imports.context``): it renders
  as the block when the caller maps the name to an installed block (``context=``), else it is a runtime variable.
- :func:`render_with_variables` also returns the variables left for the runtime, those of every context block
  inlined into the result included (``{{ memory_profile }}`` inside a memory block), in order, once each.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .. import access
from ..errors import CycleError, NotFoundError, ValidationError
from ..workspace import Workspace
from .graphview import pack_view
from .package import CONTEXT_SCHEMA
from .packs import PACK, doc_id, get_pack

REF = re.compile(r"(\\)?\{\{\s*([^{}]*?)\s*\}\}")
PACK_REF = re.compile(r"^(lib|pkg)(\.[A-Za-z0-9_-]+)+$")
MAX_DEPTH = 16


def pack_index(ws: Workspace, pack: str, principal: str | None = None) -> str:
    """The pack index an agent is seeded with: selector, kind, title, summary and related edges."""
    access.require_visible(ws, principal, pack, "render", pack)  # before the lookup: reveals nothing
    record = get_pack(ws, pack, principal)
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


@dataclass
class _Render:
    ws: Workspace
    principal: str | None
    strict: bool
    installed: list[str] | None = None
    stack: list[str] = field(default_factory=list)  # context blocks being rendered (cycle detection)
    context: dict[str, tuple[str, str]] = field(default_factory=dict)  # a file's own blocks: name -> (pack, selector)
    left: dict[str, None] = field(default_factory=dict)  # variables left for the runtime, in order

    def packs(self) -> list[str]:
        if self.installed is None:
            self.installed = [name for name, _ in self.ws.store.list_records(PACK)]
        return self.installed


def _normal(name: str) -> str:
    return name.replace("-", "_")


def _find_pack(state: _Render, written: str) -> str:
    """The installed pack a template name means: the exact name, else the one whose name reads the same with
    '-' written as '_' (a pack the principal cannot see is never chosen over one it can)."""
    installed = state.packs()
    if written in installed:
        return written
    matches = [p for p in installed if _normal(p) == _normal(written)]
    if len(matches) > 1:
        seen = [p for p in matches if access.can_see(state.ws, state.principal, p)]
        if len(seen) > 1:
            raise ValidationError(f"template name {written} matches {', '.join(seen)}; they differ only in "
                                  "'-' versus '_', so rename one", reference=written, packs=seen)
        matches = seen or matches
    return matches[0] if matches else written


def resolve_reference(ws: Workspace, ref: str, principal: str | None = None,
                      _state: _Render | None = None) -> tuple[str, str | None]:
    """``lib.slug[.selector]`` or ``pkg.scope.repo.package.pack[.selector]`` -> (pack, selector or None)."""
    state = _state or _Render(ws, principal, False)
    parts = ref.split(".")
    if not PACK_REF.match(ref) or (parts[0] == "pkg" and len(parts) < 5):
        raise ValidationError(f"template reference {{{{ {ref} }}}} is not lib.<slug>[.<selector>] or "
                              "pkg.<scope>.<repo>.<package>.<pack>[.<selector>]", reference=ref)
    if parts[0] == "lib":
        written, rest = f"lib:{parts[1]}", parts[2:]
    else:
        written, rest = "pkg:" + ".".join(parts[1:5]), parts[5:]
    pack = _find_pack(state, written)
    access.require_visible(ws, principal, pack, "render", pack)  # an unreadable pack and a missing one look alike
    if ws.store.get_record(PACK, pack) is None:
        raise NotFoundError(f"template refers to pack {written}, which is not installed; `agentcontext pack add` "
                            "installs it", reference=ref, pack=written)
    return pack, (".".join(rest) or None)


def render_doc(ws: Workspace, pack: str, selector: str, principal: str | None = None,
               _state: _Render | None = None) -> str:
    access.require_doc(ws, principal, pack, selector, "read", "render")  # before the lookup: reveals nothing
    get_pack(ws, pack, principal)
    node = ws.store.get_node(doc_id(pack, selector))
    if node is None:
        raise NotFoundError(f"template refers to {pack}.{selector}, which does not exist", pack=pack,
                            selector=selector)
    if (node.props or {}).get("schema") != CONTEXT_SCHEMA:
        return f"# {node.title} ({node.key})\n\n{node.content.strip()}\n"
    state = _state or _Render(ws, principal, False)
    if node.id in state.stack or len(state.stack) >= MAX_DEPTH:
        cycle = [*state.stack[state.stack.index(node.id):], node.id] if node.id in state.stack else state.stack
        raise CycleError(f"context block {node.id} includes itself: {' -> '.join(cycle)}", cycle=cycle)
    state.stack.append(node.id)
    try:
        return _render(state, node.content)
    finally:
        state.stack.pop()


def _render(state: _Render, template: str) -> str:
    others = [v for v in variables(template) if v not in state.context]
    if state.strict and others:
        raise ValidationError(f"strict rendering: {len(others)} variable(s) are not pack references: "
                              + ", ".join(f"{{{{ {o} }}}}" for o in others), variables=others)
    state.left.update(dict.fromkeys(others))

    def replace(match: re.Match[str]) -> str:
        escaped, ref = match.group(1), match.group(2)
        if escaped:
            return match.group(0)[1:]
        if ref in state.context:  # one of the file's own context blocks, installed
            pack, selector = state.context[ref]
            return render_doc(state.ws, pack, selector, state.principal, state)
        if not _is_pack_ref(ref):
            return match.group(0)  # a runtime variable: left for the agent runtime
        pack, selector = resolve_reference(state.ws, ref, state.principal, state)
        if selector:
            return render_doc(state.ws, pack, selector, state.principal, state)
        return pack_index(state.ws, pack, state.principal)

    return REF.sub(replace, template)


def render(ws: Workspace, template: str, principal: str | None = None, strict: bool = False) -> str:
    """``template`` with its pack references replaced (see the module docs); ``strict`` also refuses variables
    that are not pack references."""
    return render_with_variables(ws, template, principal, strict)[0]


def render_with_variables(ws: Workspace, template: str, principal: str | None = None, strict: bool = False,
                          context: dict[str, tuple[str, str]] | None = None) -> tuple[str, list[str]]:
    """(the rendered text, the variables left for the runtime, those of inlined context blocks included).
    ``context`` maps a file's own block names (``{{ context.<name> }}``) to installed (pack, selector)."""
    texts, left = render_many(ws, [template], principal, strict, context)
    return texts[0], left


def render_many(ws: Workspace, templates: list[str], principal: str | None = None, strict: bool = False,
                context: dict[str, tuple[str, str]] | None = None) -> tuple[list[str], list[str]]:
    """Several templates (the fields of one file) rendered with one state: (their texts, and the variables all of
    them leave, in order, once each)."""
    for template in templates:
        if not isinstance(template, str):
            raise ValidationError("a template is text")
    state = _Render(ws, principal, strict, context={f"context.{k}": v for k, v in (context or {}).items()})
    return [_render(state, t) for t in templates], list(state.left)


def _is_pack_ref(ref: str) -> bool:
    return ref.split(".", 1)[0] in ("lib", "pkg")


def variables(template: str) -> list[str]:
    """The variables a template leaves for the runtime (not pack references, not escaped), in order, once each."""
    return list(dict.fromkeys(m.group(2) for m in REF.finditer(template)
                              if not m.group(1) and not _is_pack_ref(m.group(2))))
