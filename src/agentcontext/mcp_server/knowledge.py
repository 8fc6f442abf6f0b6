"""The knowledge tools (seed 002), flash (seed 000) and the doc writers, as MCP tool specs.

Descriptions steer an agent through metadata-first retrieval: list packs, search metadata, walk
neighbours, and read bodies last; flash assembles a module with its prerequisites in reading order.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import Field

from ..errors import ConflictError, NotFoundError
from ..knowledge import flash as flash_mod
from ..knowledge import packs, tools
from ..knowledge.manifest import EDGE_TYPES
from .registry import CallContext, StrictArgs, ToolSpec, register_tools
from .schemas import BOOL, INT, MAX_INT, NUM, STR, STRINGS, array, nullable, obj

# An open vocabulary (like kinds): the known types are suggested; any word is accepted and checked by the library.
EdgeType = Annotated[str, Field(min_length=1, max_length=64, description="Edge type, e.g. " + ", ".join(EDGE_TYPES)
                                + "; other words are allowed.")]
PACK = Field(min_length=1, max_length=300, description="Pack name: lib:<slug> or pkg:<scope>.<repo>.<package>.<pack>.")
SELECTOR = Field(min_length=1, max_length=500, description="A doc's stable dotted selector, e.g. design.agents.")
TEXT_LIMIT = 5_000_000
Tag = Annotated[str, Field(max_length=200)]
Selector = Annotated[str, Field(max_length=500)]


class NoArgs(StrictArgs):
    pass


class SearchArgs(StrictArgs):
    pack: str = PACK
    query: str = Field("", max_length=10_000, description="Words to match against selector, title, tags, summary, "
                       "then body text and meaning. Empty lists docs by the filters alone.")
    tags: Optional[list[Tag]] = Field(None, max_length=100, description="Keep docs carrying ALL of these tags.")
    kind: Optional[str] = Field(None, max_length=200, description="Keep docs of this kind (e.g. design, policy).")
    selector_prefix: Optional[str] = Field(None, max_length=500, description="Keep docs whose selector starts so.")
    related_to: Optional[str] = Field(None, max_length=500, description="Keep docs joined to this selector by an "
                                      "edge in either direction.")
    edge_type: Optional[EdgeType] = Field(None, description="With related_to: only edges of this type.")
    limit: int = Field(10, ge=1, le=1000, description="At most this many hits, best first.")
    min_score: float = Field(0.0, ge=0.0, le=1.0, description="Drop hits scoring below this (scores are absolute "
                             "relevance in [0, 1]: about 0.5 and up is a likely answer).")


class NeighborArgs(StrictArgs):
    pack: str = PACK
    selector: str = SELECTOR
    edge_type: Optional[EdgeType] = Field(None, description="Only edges of this type.")


class ReadArgs(StrictArgs):
    pack: str = PACK
    selector: str = SELECTOR
    version: Optional[int] = Field(None, ge=1, le=MAX_INT, description="Read this older version instead of the "
                                   "current one.")


class FlashArgs(StrictArgs):
    pack: str = PACK
    selectors: list[Selector] = Field(min_length=1, max_length=1000, description="Target selectors to assemble.")
    budget_tokens: Optional[int] = Field(None, ge=0, le=MAX_INT, description="Fail with BudgetExceededError "
                                         "(naming the largest docs) instead of returning more tokens than this.")
    as_of: Optional[str] = Field(None, max_length=64, description="ISO-8601 time: assemble the graph as it stood "
                                 "then.")
    degrade: Optional[Literal["summaries"]] = Field(None, description="With budget_tokens: replace the bodies of "
                                                    "the largest prerequisites (never the targets) by their "
                                                    "summaries until the bundle fits.")


class Related(StrictArgs):
    type: EdgeType = Field(description="Edge type; depends_on edges are the prerequisites flash follows.")
    target: str = Field(min_length=1, max_length=500, description="Target selector in the same pack.")
    description: str = Field("", max_length=2000)


class CreateArgs(StrictArgs):
    pack: str = PACK
    selector: str = SELECTOR
    title: str = Field(min_length=1, max_length=1000)
    summary: str = Field("", max_length=10_000, description="One or two sentences to judge relevance by.")
    kind: str = Field("reference", min_length=1, max_length=200)
    tags: list[Tag] = Field(default_factory=list, max_length=100)
    content: str = Field("", max_length=TEXT_LIMIT, description="The Markdown body.")
    related: list[Related] = Field(default_factory=list, max_length=1000, description="Typed outbound edges.")


class UpdateArgs(StrictArgs):
    pack: str = PACK
    selector: str = SELECTOR
    title: Optional[str] = Field(None, min_length=1, max_length=1000)
    summary: Optional[str] = Field(None, max_length=10_000)
    kind: Optional[str] = Field(None, min_length=1, max_length=200)
    tags: Optional[list[Tag]] = Field(None, max_length=100, description="Replaces all tags.")
    content: Optional[str] = Field(None, max_length=TEXT_LIMIT)
    related: Optional[list[Related]] = Field(None, max_length=1000, description="Replaces all outbound edges.")
    expected_version: Optional[int] = Field(None, ge=0, le=MAX_INT, description="The version you read; a stale "
                                            "one fails with ConflictError and changes nothing.")


class DeleteArgs(StrictArgs):
    pack: str = PACK
    selector: str = SELECTOR
    expected_version: Optional[int] = Field(None, ge=1, le=MAX_INT, description="The version you read; a stale "
                                            "one fails with ConflictError and deletes nothing.")


def _list_packs(ctx: CallContext, _: NoArgs) -> dict[str, Any]:
    return {"packs": tools.list_knowledge_packs(ctx.ws, ctx.principal)}


def _search(ctx: CallContext, a: SearchArgs) -> dict[str, Any]:
    hits = tools.search_knowledge(ctx.ws, a.pack, a.query, tags=a.tags, kind=a.kind,
                                  selector_prefix=a.selector_prefix, related_to=a.related_to,
                                  edge_type=a.edge_type, limit=a.limit, principal=ctx.principal,
                                  min_score=a.min_score)
    return {"pack": a.pack, "hits": hits}


def _neighbors(ctx: CallContext, a: NeighborArgs) -> dict[str, Any]:
    found = tools.list_knowledge_neighbors(ctx.ws, a.pack, a.selector, a.edge_type, principal=ctx.principal)
    return {"pack": a.pack, "selector": a.selector, "neighbors": found}


def _read(ctx: CallContext, a: ReadArgs) -> dict[str, Any]:
    return tools.read_knowledge_doc(ctx.ws, a.pack, a.selector, version=a.version, principal=ctx.principal)


def _flash(ctx: CallContext, a: FlashArgs) -> dict[str, Any]:
    return flash_mod.flash(ctx.ws, a.pack, a.selectors, budget_tokens=a.budget_tokens, as_of=a.as_of,
                           principal=ctx.principal, degrade=a.degrade).to_dict()


def _related(items: list[Related] | None) -> list[dict[str, str]] | None:
    return None if items is None else [{"type": r.type, "target": r.target, "description": r.description}
                                       for r in items]


def _create(ctx: CallContext, a: CreateArgs) -> dict[str, Any]:
    current = _current(ctx, a.pack, a.selector)
    if current is not None:
        raise ConflictError(f"{a.pack} already has a doc {a.selector!r} (version {current}); use "
                            "update_knowledge_doc to change it", pack=a.pack, selector=a.selector,
                            current_version=current)
    return packs.put_doc(ctx.ws, a.pack, a.selector, title=a.title, summary=a.summary, kind=a.kind, tags=a.tags,
                         content=a.content, related=_related(a.related), expected_version=0,
                         principal=ctx.principal)


def _current(ctx: CallContext, pack: str, selector: str, action: str = "doc.put") -> int | None:
    """The current version (after the write check, so nothing is revealed to those who may not write)."""
    packs.check_writable(ctx.ws, pack, ctx.principal, action, packs.doc_id(pack, selector))
    node = ctx.ws.store.get_node(packs.doc_id(pack, selector))
    return node.version if node else None


def _update(ctx: CallContext, a: UpdateArgs) -> dict[str, Any]:
    if _current(ctx, a.pack, a.selector) is None:
        raise NotFoundError(f"no doc {a.selector!r} in {a.pack}; create it with create_knowledge_doc",
                            pack=a.pack, selector=a.selector)
    return packs.put_doc(ctx.ws, a.pack, a.selector, title=a.title, summary=a.summary, kind=a.kind, tags=a.tags,
                         content=a.content, related=_related(a.related), expected_version=a.expected_version,
                         principal=ctx.principal)


def _delete(ctx: CallContext, a: DeleteArgs) -> dict[str, Any]:
    current = _current(ctx, a.pack, a.selector, "doc.delete")
    if a.expected_version is not None and current is not None and current != a.expected_version:
        raise ConflictError(f"{a.pack} {a.selector} is at version {current}, not {a.expected_version}; re-read it "
                            "and retry", pack=a.pack, selector=a.selector, current_version=current,
                            expected_version=a.expected_version)
    return packs.delete_doc(ctx.ws, a.pack, a.selector, principal=ctx.principal)


SIGNALS = {"type": "object", "additionalProperties": NUM, "description": "Each signal that matched and its value."}
PACKS_OUT = obj({"packs": array(obj({"pack": STR, "name": STR, "pack_id": STR, "docs": INT, "editable": BOOL}))})
SEARCH_OUT = obj({"pack": STR, "hits": array(obj({"selector": STR, "title": STR, "kind": STR, "summary": STR,
                                                   "tags": STRINGS, "score": NUM, "signals": SIGNALS}))})
NEIGHBORS_OUT = obj({"pack": STR, "selector": STR, "neighbors": array(obj({
    "selector": STR, "type": STR, "exists": BOOL, "title": nullable(STR), "kind": nullable(STR),
    "summary": nullable(STR)}))})
DOC_OUT = obj({"pack": STR, "selector": STR, "title": STR, "summary": STR, "kind": STR, "tags": STRINGS,
               "related": array(obj({"type": STR, "target": STR})), "content": STR, "version": INT,
               "content_hash": STR, "updated_at": STR, "updated_by": STR, "source_path": STR})
FLASH_OUT = obj({"pack": STR, "targets": STRINGS, "order": STRINGS, "digest": STR, "tokens": INT, "text": STR,
                 "as_of": nullable(STR), "degraded": STRINGS, "policy": nullable(STR),
                 "docs": array(obj({"selector": STR, "title": STR, "kind": STR, "version": INT, "tokens": INT,
                                    "degraded": BOOL}))})
WRITE_OUT = obj({"pack": STR, "selector": STR, "version": INT, "content_hash": STR})
DELETE_OUT = obj({"pack": STR, "selector": STR, "deleted": BOOL})


def knowledge_tools() -> list[ToolSpec]:
    return [
        ToolSpec("list_knowledge_packs",
                 "Start here. Lists the knowledge packs you may read (name, doc count, whether you may edit). "
                 "Packs are graphs of source documents; use a pack name with the other knowledge tools.",
                 NoArgs, _list_packs, PACKS_OUT, title="List knowledge packs"),
        ToolSpec("search_knowledge",
                 "Find candidate docs in one pack by metadata first (selector, title, tags, summary), then body "
                 "text and meaning. Returns selectors with title, kind, summary, tags, score and the signals that "
                 "matched, never bodies: judge relevance from the summaries, then read only what you need.",
                 SearchArgs, _search, SEARCH_OUT, title="Search knowledge"),
        ToolSpec("list_knowledge_neighbors",
                 "Follow one doc's outbound typed edges (depends_on, defines, governs, references, ...) to its "
                 "prerequisites and exact rules. Metadata only; sorted by target selector then edge type.",
                 NeighborArgs, _neighbors, NEIGHBORS_OUT,
                 title="List a doc's neighbours"),
        ToolSpec("read_knowledge_doc",
                 "Read the full body of one doc you selected by search or traversal (last step: read only the "
                 "docs you need and answer only from what you read). version= reads an older version.",
                 ReadArgs, _read, DOC_OUT, title="Read a knowledge doc"),
        ToolSpec("flash_knowledge",
                 "Assemble target docs with all their prerequisites (depends_on, transitively), each once, "
                 "foundations first, as one text with a digest and token count. Use when you must understand a "
                 "module from the ground up; fails loudly on a cycle, a missing prerequisite, an unreadable doc "
                 "or an exceeded budget_tokens.",
                 FlashArgs, _flash, FLASH_OUT, title="Flash knowledge"),
        ToolSpec("create_knowledge_doc",
                 "Create a new doc in an editable lib: pack (pkg: packs are read-only). Fails with ConflictError "
                 "if the selector exists; then use update_knowledge_doc.",
                 CreateArgs, _create, WRITE_OUT, read_only=False, title="Create a knowledge doc"),
        ToolSpec("update_knowledge_doc",
                 "Change fields of an existing doc in a lib: pack; fields you omit keep their values. Pass the "
                 "version you read as expected_version so a concurrent change is not overwritten.",
                 UpdateArgs, _update, WRITE_OUT, read_only=False, title="Update a knowledge doc"),
        ToolSpec("delete_knowledge_doc",
                 "Delete a doc from a lib: pack (its history stays readable by version).",
                 DeleteArgs, _delete, DELETE_OUT, read_only=False,
                 destructive=True, title="Delete a knowledge doc"),
    ]


register_tools("knowledge", knowledge_tools)

