"""The knowledge operations (seed 002's tools), flash (seed 000) and the doc writers, declared once for every
door.

Descriptions steer an agent through metadata-first retrieval: list packs, search metadata, walk neighbours, and
read bodies last; flash assembles a module with its prerequisites in reading order.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from typing_extensions import NotRequired, TypedDict

from pydantic import Field

from ..errors import ConflictError, NotFoundError, ValidationError
from ..knowledge.manifest import EDGE_TYPES
from .base import Args, Caller, Cli, NoArgs, Operation, declare
from .types import MAX_INT, Signals

# An open vocabulary (like kinds): the known types are suggested; any word is accepted and checked by the library.
EdgeType = Annotated[str, Field(min_length=1, max_length=64, description="Edge type, e.g. " + ", ".join(EDGE_TYPES)
                                + "; other words are allowed.")]
PACK = Field(min_length=1, max_length=300, description="Pack name: lib:<slug> or pkg:<scope>.<repo>.<package>.<pack>.")
SELECTOR = Field(min_length=1, max_length=500, description="A doc's stable dotted selector, e.g. design.agents.")
TEXT_LIMIT = 5_000_000
Tag = Annotated[str, Field(max_length=200)]
Selector = Annotated[str, Field(max_length=500)]


class SearchArgs(Args):
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


class NeighborArgs(Args):
    pack: str = PACK
    selector: str = SELECTOR
    edge_type: Optional[EdgeType] = Field(None, description="Only edges of this type.")


class ReadArgs(Args):
    pack: str = PACK
    selector: str = SELECTOR
    version: Optional[int] = Field(None, ge=1, le=MAX_INT, description="Read this older version instead of the "
                                   "current one.")


class FlashArgs(Args):
    pack: str = PACK
    selectors: list[Selector] = Field(min_length=1, max_length=1000, description="Target selectors to assemble.")
    budget_tokens: Optional[int] = Field(None, ge=0, le=MAX_INT, description="Fail with BudgetExceededError "
                                         "(naming the largest docs) instead of returning more tokens than this.")
    as_of: Optional[str] = Field(None, max_length=64, description="ISO-8601 time: assemble the graph as it stood "
                                 "then.")
    degrade: Optional[Literal["summaries"]] = Field(None, description="With budget_tokens: replace the bodies of "
                                                    "the largest prerequisites (never the targets) by their "
                                                    "summaries until the bundle fits.")


class Related(Args):
    type: EdgeType = Field(description="Edge type; depends_on edges are the prerequisites flash follows.")
    target: str = Field(min_length=1, max_length=500, description="Target selector in the same pack.")
    description: str = Field("", max_length=2000)


class CreateArgs(Args):
    pack: str = PACK
    selector: str = SELECTOR
    title: str = Field(min_length=1, max_length=1000)
    summary: str = Field("", max_length=10_000, description="One or two sentences to judge relevance by.")
    kind: str = Field("reference", min_length=1, max_length=200)
    tags: list[Tag] = Field(default_factory=list, max_length=100)
    content: str = Field("", max_length=TEXT_LIMIT, description="The Markdown body.")
    related: list[Related] = Field(default_factory=list, max_length=1000, description="Typed outbound edges.")


class UpdateArgs(Args):
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


class DeleteArgs(Args):
    pack: str = PACK
    selector: str = SELECTOR
    expected_version: Optional[int] = Field(None, ge=1, le=MAX_INT, description="The version you read; a stale "
                                            "one fails with ConflictError and deletes nothing.")


def _list_packs(ctx: Caller, _: NoArgs) -> dict[str, Any]:
    from ..knowledge import tools

    return {"packs": tools.list_knowledge_packs(ctx.ws, ctx.principal)}


def _search(ctx: Caller, a: SearchArgs) -> dict[str, Any]:
    from ..knowledge import tools

    hits = tools.search_knowledge(ctx.ws, a.pack, a.query, tags=a.tags, kind=a.kind,
                                  selector_prefix=a.selector_prefix, related_to=a.related_to,
                                  edge_type=a.edge_type, limit=a.limit, principal=ctx.principal,
                                  min_score=a.min_score)
    return {"pack": a.pack, "hits": hits}


def _neighbors(ctx: Caller, a: NeighborArgs) -> dict[str, Any]:
    from ..knowledge import tools

    found = tools.list_knowledge_neighbors(ctx.ws, a.pack, a.selector, a.edge_type, principal=ctx.principal)
    return {"pack": a.pack, "selector": a.selector, "neighbors": found}


def _read(ctx: Caller, a: ReadArgs) -> dict[str, Any]:
    from ..knowledge import tools

    return tools.read_knowledge_doc(ctx.ws, a.pack, a.selector, version=a.version, principal=ctx.principal)


def _flash(ctx: Caller, a: FlashArgs) -> dict[str, Any]:
    from ..knowledge import flash as flash_mod

    return flash_mod.flash(ctx.ws, a.pack, a.selectors, budget_tokens=a.budget_tokens, as_of=a.as_of,
                           principal=ctx.principal, degrade=a.degrade).to_dict()


def _related(items: list[Related] | None) -> list[dict[str, str]] | None:
    return None if items is None else [{"type": r.type, "target": r.target, "description": r.description}
                                       for r in items]


def _create(ctx: Caller, a: CreateArgs) -> dict[str, Any]:
    from ..knowledge import packs

    current = _current(ctx, a.pack, a.selector)
    if current is not None:
        raise ConflictError(f"{a.pack} already has a doc {a.selector!r} (version {current}); use "
                            "update_knowledge_doc to change it", pack=a.pack, selector=a.selector,
                            current_version=current)
    return packs.put_doc(ctx.ws, a.pack, a.selector, title=a.title, summary=a.summary, kind=a.kind, tags=a.tags,
                         content=a.content, related=_related(a.related), expected_version=0,
                         principal=ctx.principal)


def _current(ctx: Caller, pack: str, selector: str, action: str = "doc.put") -> int | None:
    """The current version (after the write check, so nothing is revealed to those who may not write)."""
    from ..knowledge import packs

    packs.check_writable(ctx.ws, pack, ctx.principal, action, packs.doc_id(pack, selector))
    node = ctx.ws.store.get_node(packs.doc_id(pack, selector))
    return node.version if node else None


def _update(ctx: Caller, a: UpdateArgs) -> dict[str, Any]:
    from ..knowledge import packs

    if _current(ctx, a.pack, a.selector) is None:
        raise NotFoundError(f"no doc {a.selector!r} in {a.pack}; create it with create_knowledge_doc",
                            pack=a.pack, selector=a.selector)
    return packs.put_doc(ctx.ws, a.pack, a.selector, title=a.title, summary=a.summary, kind=a.kind, tags=a.tags,
                         content=a.content, related=_related(a.related), expected_version=a.expected_version,
                         principal=ctx.principal)


def _delete(ctx: Caller, a: DeleteArgs) -> dict[str, Any]:
    from ..knowledge import packs

    current = _current(ctx, a.pack, a.selector, "doc.delete")
    if a.expected_version is not None and current is not None and current != a.expected_version:
        raise ConflictError(f"{a.pack} {a.selector} is at version {current}, not {a.expected_version}; re-read it "
                            "and retry", pack=a.pack, selector=a.selector, current_version=current,
                            expected_version=a.expected_version)
    return packs.delete_doc(ctx.ws, a.pack, a.selector, principal=ctx.principal)


class SearchAllArgs(Args):
    query: str = Field(min_length=1, max_length=10_000, description="Words to find in every pack you may read.")
    limit: int = Field(10, ge=1, le=1000, description="At most this many hits, best first.")
    min_score: float = Field(0.0, ge=0.0, le=1.0, description="Drop hits scoring below this (absolute relevance "
                             "from 0 to 1).")


class ReindexArgs(Args):
    pack: Optional[str] = Field(None, min_length=1, max_length=300, description="Only this pack (default: every "
                                "pack with texts left to embed).")
    model: Optional[str] = Field(None, min_length=1, max_length=100, description="Move the workspace to this "
                                 "embedding model (minilm, e5-small, mpnet): every text is embedded with it, and the "
                                 "workspace uses it from then on. Owner only; not with a pack.")
    places: bool = Field(False, description="Also give the memories stored without place glosses theirs (what "
                         "AgentMemory(places=True) stores; the places extra): each gets a new version with the glosses "
                         "in its embedded and indexed text, never in its content. Owner only; not with a pack or a "
                         "model.")


def _search_all(ctx: Caller, a: SearchAllArgs) -> dict[str, Any]:
    from ..knowledge import catalog

    return {"hits": catalog.search_packs(ctx.ws, a.query, limit=a.limit, principal=ctx.principal,
                                         min_score=a.min_score)}


def _reindex(ctx: Caller, a: ReindexArgs) -> dict[str, Any]:
    """Embedding changes no doc, but it is work done in the pack's name: write access to it (admin on every pack,
    the owner's, for all of them at once); audited."""
    from .. import access
    from ..knowledge import packs

    if a.model is not None:
        return _move_model(ctx, a.model, a.pack, a.places)
    if a.places and a.pack is not None:
        raise ValidationError("--places glosses the memories of the whole workspace, not a pack's docs: run reindex "
                              "--places without a pack", pack=a.pack)
    if a.places and not access.is_superadmin(ctx.ws, ctx.principal):
        raise access.deny(ctx.ws, ctx.principal, "memory.places", "*", "admin", "*",
                          hint="ask the workspace's owner to gloss its memories (reindex --places)")
    if a.pack is not None:
        access.require(ctx.ws, ctx.principal, a.pack, "write", "pack.reindex", a.pack)
        packs.get_pack(ctx.ws, a.pack, ctx.principal)  # NotFoundError for a pack that is not there
    elif not access.is_superadmin(ctx.ws, ctx.principal):
        raise access.deny(ctx.ws, ctx.principal, "pack.reindex", "*", "admin", "*",
                          hint="reindex one pack you may write (reindex PACK), or ask the owner to reindex them all")
    embedded = packs.embed_pack(ctx.ws, a.pack, ctx.progress)
    access.record(ctx.ws, ctx.principal, "pack.reindex", a.pack or "*", {"embedded": embedded})
    return {"pack": a.pack, "embedded": embedded, **(_gloss(ctx) if a.places else {})}


def _gloss(ctx: Caller) -> dict[str, int]:
    """``glossed``: the memories stored without place glosses given them (memory/reglossed.py), every memory
    namespace at once, so the owner's to do (checked before any embedding), audited."""
    from .. import access
    from ..memory.reglossed import gloss_places

    report = ctx.progress
    glossed = gloss_places(ctx.ws, access.effective_principal(ctx.ws, ctx.principal),
                           (lambda done, total: report("glossing", done, total)) if report else None)
    access.record(ctx.ws, ctx.principal, "memory.places", "*", {"glossed": glossed})
    return {"glossed": glossed}


def _move_model(ctx: Caller, model: str, pack: str | None, places: bool = False) -> dict[str, Any]:
    """The workspace's embedding model moved (embed/choice.py ``move_model``): every text of every namespace, so the
    owner's to do, audited."""
    from .. import access
    from ..embed.choice import move_model
    from ..embed.models import spec_of

    name = spec_of(model).name  # ValidationError listing the models
    if pack is not None:
        raise ValidationError(f"a model moves the whole workspace, not one pack: run reindex --model {model} "
                              "without a pack", pack=pack, model=model)
    if places:
        raise ValidationError(f"gloss the memories first (reindex --places), then move the model (reindex --model "
                              f"{model}): one at a time", model=model)
    if not access.is_superadmin(ctx.ws, ctx.principal):
        raise access.deny(ctx.ws, ctx.principal, "workspace.model", "*", "admin", "*",
                          hint="ask the workspace's owner to move its embedding model")
    report = ctx.progress
    embedded = move_model(ctx.ws, name, (lambda done, total: report("embedding", done, total)) if report else None)
    access.record(ctx.ws, ctx.principal, "workspace.model", name, {"embedded": embedded})
    return {"pack": None, "embedded": embedded, "model": name}


# --- outputs ----------------------------------------------------------------------------------------------------


class PackRow(TypedDict):
    pack: str
    name: str
    pack_id: str
    docs: int
    editable: bool


class PacksOut(TypedDict):
    packs: list[PackRow]


class Hit(TypedDict):
    selector: str
    title: str
    kind: str
    summary: str
    tags: list[str]
    score: float
    signals: Signals


class SearchOut(TypedDict):
    pack: str
    hits: list[Hit]


class PackHit(Hit):
    pack: str


class SearchAllOut(TypedDict):
    hits: list[PackHit]


class Neighbor(TypedDict):
    selector: str
    type: str
    exists: bool
    title: Optional[str]
    kind: Optional[str]
    summary: Optional[str]


class NeighborsOut(TypedDict):
    pack: str
    selector: str
    neighbors: list[Neighbor]


class Edge(TypedDict):
    type: str
    target: str


class DocOut(TypedDict):
    pack: str
    selector: str
    title: str
    summary: str
    kind: str
    tags: list[str]
    related: list[Edge]
    content: str
    version: int
    content_hash: str
    updated_at: str
    updated_by: str
    source_path: str


class FlashDoc(TypedDict):
    selector: str
    title: str
    kind: str
    version: int
    tokens: int
    degraded: bool


class FlashOut(TypedDict):
    pack: str
    targets: list[str]
    order: list[str]
    digest: str
    tokens: int
    text: str
    as_of: Optional[str]
    degraded: list[str]
    policy: Optional[str]
    docs: list[FlashDoc]


class WriteOut(TypedDict):
    pack: str
    selector: str
    version: int
    content_hash: str


class DeleteOut(TypedDict):
    pack: str
    selector: str
    deleted: bool


class ReindexOut(TypedDict):
    pack: Optional[str]
    embedded: int
    model: NotRequired[str]  # with --model: the model the workspace moved to
    glossed: NotRequired[int]  # with --places: the memories given their place glosses


NO_WEB_DELETE = "the console does not delete docs (the CLI's `doc delete` and MCP do)"
CLI_WRITES = "the CLI writes docs from files (`doc put`, `doc delete`), not field by field"

LIST_PACKS = Operation(
    "list_knowledge_packs", "List knowledge packs",
    "Start here. Lists the knowledge packs you may read (name, doc count, whether you may edit). Packs are graphs "
    "of source documents; use a pack name with the other knowledge tools.",
    NoArgs, PacksOut, _list_packs, cli=Cli(("pack", "list"), pick=lambda r: r["packs"]),
    skips={"web": "/packs lists each pack with its kind and tag facets (knowledge.catalog), more than this returns"})
SEARCH = Operation(
    "search_knowledge", "Search knowledge",
    "Find candidate docs in one pack by metadata first (selector, title, tags, summary), then body text and "
    "meaning. Returns selectors with title, kind, summary, tags, score and the signals that matched, never "
    "bodies: judge relevance from the summaries, then read only what you need.",
    SearchArgs, SearchOut, _search,
    cli=Cli(("search",), args=("pack", "query"), flags={"tags": ("--tag",), "selector_prefix": ("--prefix",)},
            help={"tags": "All-of tag filter; repeat.", "query": "Words to match."}, pick=lambda r: r["hits"]))
SEARCH_ALL = Operation(
    "search_all_knowledge", "Search every pack",
    "Search every pack the principal may read at once (`search --all QUERY`); each hit names its pack.",
    SearchAllArgs, SearchAllOut, _search_all,
    cli=Cli(("search",), args=("query",), pick=lambda r: r["hits"]),
    skips={"mcp": "agents search one pack at a time (list_knowledge_packs, then search_knowledge)"})
NEIGHBORS = Operation(
    "list_knowledge_neighbors", "List a doc's neighbours",
    "Follow one doc's outbound typed edges (depends_on, defines, governs, references, ...) to its prerequisites "
    "and exact rules. Metadata only; sorted by target selector then edge type.",
    NeighborArgs, NeighborsOut, _neighbors,
    cli=Cli(("neighbors",), args=("pack", "selector"), pick=lambda r: r["neighbors"]),
    skips={"web": "a doc's page shows its edges both ways (knowledge.catalog.doc_links), a superset of this"})
READ = Operation(
    "read_knowledge_doc", "Read a knowledge doc",
    "Read the full body of one doc you selected by search or traversal (last step: read only the docs you need "
    "and answer only from what you read). version= reads an older version.",
    ReadArgs, DocOut, _read, cli=Cli(("read",), args=("pack", "selector"),
                                     help={"version": "An earlier version (see `history`)."}))
FLASH = Operation(
    "flash_knowledge", "Flash knowledge",
    "Assemble target docs with all their prerequisites (depends_on, transitively), each once, foundations first, "
    "as one text with a digest and token count. Use when you must understand a module from the ground up; fails "
    "loudly on a cycle, a missing prerequisite, an unreadable doc or an exceeded budget_tokens.",
    FlashArgs, FlashOut, _flash,
    cli=Cli(("flash",), args=("pack", "selectors"), flags={"budget_tokens": ("--budget",)},
            help={"budget_tokens": "Token budget; over it is an error.",
                  "degrade": "'summaries' to fit the budget instead.",
                  "as_of": "Assemble the graph as it stood then (ISO time)."}))
CREATE = Operation(
    "create_knowledge_doc", "Create a knowledge doc",
    "Create a new doc in an editable lib: pack (pkg: packs are read-only). Fails with ConflictError if the "
    "selector exists; then use update_knowledge_doc.",
    CreateArgs, WriteOut, _create, read_only=False, skips={"cli": CLI_WRITES})
UPDATE = Operation(
    "update_knowledge_doc", "Update a knowledge doc",
    "Change fields of an existing doc in a lib: pack; fields you omit keep their values. Pass the version you "
    "read as expected_version so a concurrent change is not overwritten.",
    UpdateArgs, WriteOut, _update, read_only=False, skips={"cli": CLI_WRITES})
DELETE = Operation(
    "delete_knowledge_doc", "Delete a knowledge doc",
    "Delete a doc from a lib: pack (its history stays readable by version).",
    DeleteArgs, DeleteOut, _delete, read_only=False, destructive=True,
    skips={"cli": CLI_WRITES, "web": NO_WEB_DELETE})
REINDEX = Operation(
    "reindex_knowledge", "Reindex packs",
    "Compute the embeddings that deferred installs left out (one pack, or every pack); returns how many texts "
    "were embedded. Needs write access to the pack (the owner for every pack). With a model, moves the workspace "
    "to that embedding model (every text embedded with it; the owner only). With places, also glosses the places "
    "the memories stored without them name (the owner only).",
    ReindexArgs, ReindexOut, _reindex, read_only=False,
    cli=Cli(("reindex",), args=("pack",),
            pick=lambda r: {k: r[k] for k in ("embedded", "model", "glossed") if k in r}),
    skips={"mcp": "embedding a pack is long-running maintenance for the workspace's owner, not an agent's tool"})

MCP_TOOLS = [LIST_PACKS, SEARCH, NEIGHBORS, READ, FLASH, CREATE, UPDATE, DELETE]  # in the order clients list them
declare(*MCP_TOOLS, SEARCH_ALL, REINDEX)
