"""Knowledge packs in the store: install from folders, create and edit ``lib:`` packs.

A doc is a node (namespace = pack name, key = selector, id = ``<pack>/<selector>``); its ``related``
entries are typed edges in the pack's namespace, kept in declared order (``position``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import access
from ..embed import embed_missing
from ..embed.cache import PendingVectors
from ..errors import ConflictError, NotFoundError, ValidationError, did_you_mean
from ..model import Edge, Node, utcnow
from ..tokens import count_tokens
from ..workspace import Workspace
from .manifest import (LIB_RE, DocSpec, PackSpec, check_edge_type, check_pack_name, check_selector, parse_related,
                       slugify)
from .package import load_packages

PACK = "pack"  # record kind holding each pack's metadata
Progress = Callable[[str, int, int], None]


def doc_id(pack: str, selector: str) -> str:
    return f"{pack}/{selector}"


def render_section(selector: str, title: str, content: str) -> str:
    """How one doc appears in a flash bundle; its token count is cached on the node."""
    return f"## {title} ({selector})\n\n{content.strip()}\n"


def embed_text(title: str, summary: str, tags: Sequence[str], content: str) -> str:
    """What the meaning signal sees: the metadata first, then the opening of the body (MiniLM reads ~128
    word pieces well; longer text costs time and blurs the vector). A body that opens with a markdown heading
    repeating the title (most pack docs do) starts after it: the title is already first, and the model's time
    grows with every token."""
    return f"{title}. {summary}\n{' '.join(tags)}\n{without_title_heading(title, content)[:600]}"


_HEADING = re.compile(r" {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*(?:\n|$)")


def without_title_heading(title: str, content: str) -> str:
    """``content`` without its first line when that line is a markdown ATX heading (``# ...``) whose text is ``title``
    (ignoring case and runs of spaces); otherwise ``content`` unchanged."""
    body = content.lstrip("\n")
    match = _HEADING.match(body)
    if match is None or " ".join(match.group(1).split()).casefold() != " ".join(title.split()).casefold():
        return content
    return body[match.end():].lstrip("\n")


def doc_node(pack: str, spec: DocSpec, actor: str) -> Node:
    return Node(
        id=doc_id(pack, spec.selector), kind=spec.kind, namespace=pack, key=spec.selector, title=spec.title,
        summary=spec.summary, content=spec.content, tags=list(spec.tags),
        props={"source_path": spec.source_path, **spec.extra}, created_by=actor,
        embed_text=embed_text(spec.title, spec.summary, spec.tags, spec.content),
        tokens=count_tokens(render_section(spec.selector, spec.title, spec.content)),
    )


def doc_edges(pack: str, spec: DocSpec) -> list[Edge]:
    src = doc_id(pack, spec.selector)
    edges: dict[str, Edge] = {}
    for position, rel in enumerate(spec.related):
        edge = Edge(src=src, type=rel.type, dst=doc_id(pack, rel.target), namespace=pack,
                    props={"description": rel.description} if rel.description else {}, position=position)
        edges.setdefault(edge.id, edge)
    return list(edges.values())


_UNSAID = object()  # get_pack without a principal: no suggestions (they would name packs to an unknown caller)


def get_pack(ws: Workspace, pack: str, principal: Any = _UNSAID) -> dict[str, Any]:
    """The pack's record, or ``NotFoundError`` naming the closest packs ``principal`` may see ("did you mean")."""
    record = ws.store.get_record(PACK, pack)
    if record is None:
        close = [] if principal is _UNSAID else did_you_mean(
            pack, [p for p, _ in ws.store.list_records(PACK) if access.can_see(ws, principal, p)])
        guess = f"; did you mean {', '.join(close)}?" if close else ""
        raise NotFoundError(f"no pack {pack!r}{guess}; list_knowledge_packs() lists the packs you may read",
                            pack=pack, **({"did_you_mean": close} if close else {}))
    return record


def missing_doc(ws: Workspace, pack: str, selector: str, principal: str | None, detail: str = "",
                hint: str = "search_knowledge finds selectors", **data: Any) -> NotFoundError:
    """The error for a doc not in ``pack``: it names the closest selectors ``principal`` may read."""
    readable = access.doc_filter(ws, principal, pack)
    keys = [n.key for n in ws.store.find_nodes(namespace=pack, with_content=False, order="none")
            if readable is None or readable(n.key)]
    close = did_you_mean(selector, keys)
    guess = f"; did you mean {', '.join(close)}?" if close else ""
    return NotFoundError(f"no doc {selector!r}{detail} in {pack}{guess}; {hint}", pack=pack, selector=selector,
                         **data, **({"did_you_mean": close} if close else {}))


def install_spec(ws: Workspace, spec: PackSpec, principal: str | None = None, source: str = "",
                 defer_embeddings: bool = False, progress: Progress | None = None) -> dict[str, Any]:
    """Install or replace a pack in one transaction; docs and edges no longer present are retracted."""
    pack = spec.pack
    actor = access.effective_principal(ws, principal)
    access.require(ws, principal, pack, "admin" if pack.startswith("pkg:") else "write", "install", pack)
    store = ws.store
    erased = store.erased([doc_id(pack, d.selector) for d in spec.docs])  # an erased doc never comes back
    docs = [d for d in spec.docs if doc_id(pack, d.selector) not in erased]
    nodes = []
    total = len(docs)
    for i, doc in enumerate(docs):
        nodes.append(doc_node(pack, doc, actor))
        if progress and (i % 500 == 0 or i == total - 1):
            progress("reading docs", i + 1, total)
    edges = [e for doc in docs for e in doc_edges(pack, doc)]
    with store.transaction():
        old_ids = {n.id for n in store.find_nodes(namespace=pack, with_content=False, order="none")}
        new_ids = {n.id for n in nodes}
        store.retract_nodes(sorted(old_ids - new_ids), actor=actor, edges="outbound")
        keep = {e.id for e in edges}
        stale = [e.id for e in store.edges(namespace=pack) if e.id not in keep]
        store.retract_edges(stale, actor=actor)
        store.put_nodes(nodes, actor=actor)
        store.put_edges(edges, actor=actor)
        record = {"pack": pack, "slug": spec.slug, "name": spec.name, "pack_id": spec.pack_id,
                  "source": source, "installed_at": utcnow(), "editable": pack.startswith("lib:")}
        store.put_record(PACK, pack, record, actor=actor)
        store.append_audit(actor, "pack.install", pack, "ok", {"docs": len(nodes), "edges": len(edges)})
    if progress:
        progress("installed", total, total)
    if not defer_embeddings:
        embed_pack(ws, pack, progress)
    return {**record, "docs": len(nodes), "edges": len(edges),
            "skipped_erased": sorted(i.split("/", 1)[1] for i in erased), "missing_targets": missing_targets(docs)}


def missing_targets(docs: Sequence[DocSpec]) -> list[dict[str, Any]]:
    """The ``related`` edges whose target is no doc of the pack (installed anyway, as lint reports them): each
    with its doc, type, target and the closest existing selectors (``did_you_mean``)."""
    have = {d.selector for d in docs}
    return [{"selector": d.selector, "type": r.type, "target": r.target, "did_you_mean": did_you_mean(r.target, have)}
            for d in docs for r in d.related if r.target not in have]


def install_folder(ws: Workspace, path: str | Path, as_lib: str | None = None, principal: str | None = None,
                   defer_embeddings: bool = False, progress: Progress | None = None, scope: str | None = None,
                   repo: str | None = None, skip_unsupported: bool = False) -> list[dict[str, Any]]:
    """Load (and fully validate) a pack folder, package or registry, then install each pack it holds.

    ``scope``/``repo`` name where a Nenjo package comes from (``nenjo-ai``/``packages``); ``skip_unsupported``
    installs the knowledge of a package that also holds runtime resources (agents, abilities, ...) and lists
    those under ``skipped`` in each result."""
    loaded = load_packages(path, scope=scope, repo=repo, skip_unsupported=skip_unsupported)
    specs = loaded.packs
    if as_lib:
        if len(specs) != 1:
            raise ValidationError(f"{path} holds {len(specs)} packs; --as-lib imports exactly one", file=str(path))
        check_pack_name(f"lib:{as_lib}", "--as-lib")
        specs[0].pack, specs[0].slug = f"lib:{as_lib}", as_lib
    source = str(Path(path).resolve())
    for spec in specs:  # checked (and denials audited) before the transaction, which would roll the audit back
        access.require(ws, principal, spec.pack, "admin" if spec.pack.startswith("pkg:") else "write", "install",
                       spec.pack)
    pending = None if defer_embeddings else embed_ahead(ws, specs)
    try:
        with ws.store.transaction():  # every pack of a package lands together or not at all
            results = [install_spec(ws, s, principal, source, True, progress) for s in specs]
    except BaseException:
        if pending:
            pending.cancel()  # nothing of a refused install reaches the vector cache
        raise
    if pending:
        report = (lambda done, total: progress("embedding", done, total)) if progress else None
        pending.write(report)
        for spec in specs:  # whatever the store still lacks (a text changed by another writer meanwhile)
            embed_pack(ws, spec.pack, progress)
    if loaded.skipped:
        for result in results:
            result["skipped"] = loaded.skipped
    return results


def embed_ahead(ws: Workspace, specs: Sequence[PackSpec]) -> PendingVectors:
    """Start embedding the docs of ``specs`` that have no vector yet (each distinct text once, erased docs
    never), on a producer thread while the install writes its transaction."""
    texts = []
    for spec in specs:
        erased = ws.store.erased([doc_id(spec.pack, d.selector) for d in spec.docs])
        texts += [embed_text(d.title, d.summary, d.tags, d.content) for d in spec.docs
                  if doc_id(spec.pack, d.selector) not in erased]
    return PendingVectors(ws.store, ws.embedder, texts)


def embed_pack(ws: Workspace, pack: str | None = None, progress: Progress | None = None) -> int:
    """Compute the vectors a pack (or every namespace) is missing; returns how many were embedded."""
    report = (lambda done, total: progress("embedding", done, total)) if progress else None
    return embed_missing(ws.store, ws.embedder, pack, progress=report)


def create_pack(ws: Workspace, slug: str, name: str | None = None, principal: str | None = None) -> dict[str, Any]:
    pack = f"lib:{slug}"
    if not LIB_RE.match(pack):
        raise ValidationError(f"pack slug {slug!r} must be lower-case letters, digits, '-' or '_'", slug=slug)
    access.require(ws, principal, pack, "write", "pack.create", pack)
    if ws.store.get_record(PACK, pack):
        raise ValidationError(f"pack {pack} already exists", pack=pack)
    actor = access.effective_principal(ws, principal)
    record = {"pack": pack, "slug": slug, "name": name or slug, "pack_id": slug, "source": "",
              "installed_at": utcnow(), "editable": True}
    with ws.store.transaction():
        ws.store.put_record(PACK, pack, record, actor=actor)
        ws.store.append_audit(actor, "pack.create", pack, "ok")
    return {**record, "docs": 0, "edges": 0}


def check_writable(ws: Workspace, pack: str, principal: str | None, action: str, target: str) -> str:
    """The acting principal, once it may write ``target`` of ``pack`` (denials and pkg: writes are audited)."""
    check_pack_name(pack)
    selector = target[len(pack) + 1:] if target.startswith(pack + "/") else None
    if selector is None:  # checked before the lookup, so a non-writer learns nothing about the pack
        access.require(ws, principal, pack, "write", action, target)
    else:  # a doc-pattern grant (lib:eng/api.*) may cover just this doc
        access.require_doc(ws, principal, pack, selector, "write", action)
    get_pack(ws, pack, principal)
    if pack.startswith("pkg:"):  # read-only even to admins
        ws.store.append_audit(access.effective_principal(ws, principal), action, target, "denied",
                              {"reason": "read-only"})
        access.require_writable(pack)
    return access.effective_principal(ws, principal)


def put_doc(ws: Workspace, pack: str, selector: str, *, title: str | None = None, summary: str | None = None,
            kind: str | None = None, tags: Sequence[str] | None = None, content: str | None = None,
            related: Sequence[dict[str, str]] | None = None, expected_version: int | None = None,
            principal: str | None = None, embed: bool = True) -> dict[str, Any]:
    """Create or update a doc of a ``lib:`` pack; ``None`` keeps the current value on update."""
    check_selector(selector, "selector")
    target = doc_id(pack, selector)
    actor = check_writable(ws, pack, principal, "doc.put", target)
    with ws.store.transaction():
        current = ws.store.get_node(target)
        if expected_version is not None and (current.version if current else 0) != expected_version:
            raise ConflictError(
                f"{pack} {selector} is at version {current.version if current else 0}, not {expected_version}; "
                "re-read it and retry", pack=pack, selector=selector,
                current_version=current.version if current else 0, expected_version=expected_version)
        old_related = [] if current is None else [
            {"type": e.type, "target": e.dst.split("/", 1)[1], "description": e.props.get("description", "")}
            for e in ws.store.edges(src=target)]
        spec = DocSpec(
            selector=selector, source_path=(current.props.get("source_path", "") if current else ""),
            extra={k: v for k, v in (current.props if current else {}).items() if k != "source_path"},
            title=title if title is not None else (current.title if current else selector),
            summary=summary if summary is not None else (current.summary if current else ""),
            kind=slugify(kind) if kind is not None else (current.kind if current else "reference"),
            tags=list(dict.fromkeys(tags)) if tags is not None else (current.tags if current else []),
            related=[], content=content if content is not None else (current.content if current else ""),
        )
        spec.related = parse_related(list(related) if related is not None else old_related, "doc put", selector)
        ws.store.put_nodes([doc_node(pack, spec, actor)], actor=actor)
        edges = doc_edges(pack, spec)
        keep = {e.id for e in edges}
        ws.store.retract_edges([e.id for e in ws.store.edges(src=target) if e.id not in keep], actor=actor)
        ws.store.put_edges(edges, actor=actor)
        node = ws.store.get_node(target)
        assert node is not None
        ws.store.append_audit(actor, "doc.put", target, "ok", {"version": node.version})
    if embed:
        embed_missing(ws.store, ws.embedder, pack)
    return {"pack": pack, "selector": selector, "version": node.version, "content_hash": node.content_hash}


def delete_doc(ws: Workspace, pack: str, selector: str, principal: str | None = None) -> dict[str, Any]:
    target = doc_id(pack, selector)
    actor = check_writable(ws, pack, principal, "doc.delete", target)
    with ws.store.transaction():
        if ws.store.get_node(target) is None:
            raise missing_doc(ws, pack, selector, principal)
        ws.store.retract_nodes([target], actor=actor, edges="outbound")
        ws.store.append_audit(actor, "doc.delete", target, "ok")
    return {"pack": pack, "selector": selector, "deleted": True}


def set_edge(ws: Workspace, pack: str, selector: str, edge_type: str, target: str, present: bool = True,
             principal: str | None = None) -> dict[str, Any]:
    """Add (``present=True``) or remove one typed edge of a ``lib:`` doc."""
    edge_type = check_edge_type(edge_type)
    check_selector(target, "target")
    src = doc_id(pack, selector)
    actor = check_writable(ws, pack, principal, "edge.put" if present else "edge.delete", src)
    with ws.store.transaction():
        if ws.store.get_node(src) is None:
            raise missing_doc(ws, pack, selector, principal)
        edge = Edge(src=src, type=edge_type, dst=doc_id(pack, target), namespace=pack,
                    position=len(ws.store.edges(src=src)))
        if present:
            ws.store.put_edges([edge], actor=actor)
        else:
            ws.store.retract_edges([edge.id], actor=actor)
        ws.store.append_audit(actor, "edge.put" if present else "edge.delete", f"{src} {edge_type} {target}", "ok")
    return {"pack": pack, "selector": selector, "type": edge_type, "target": target, "present": present}


def list_packs(ws: Workspace, principal: str | None = None) -> list[dict[str, Any]]:
    out = []
    for pack, record in ws.store.list_records(PACK):
        if not access.can_see(ws, principal, pack):
            continue
        readable = access.doc_filter(ws, principal, pack)
        docs = ws.store.count_nodes(namespace=pack) if readable is None else sum(
            1 for n in ws.store.find_nodes(namespace=pack, with_content=False, order="none") if readable(n.key))
        out.append({**record, "docs": docs, "editable": bool(record.get("editable")) and pack.startswith("lib:")
                    and access.can(ws, principal, pack, "write")})
    return out
