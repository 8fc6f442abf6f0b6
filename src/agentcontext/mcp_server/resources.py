"""Knowledge as MCP resources: every pack index and doc the principal may read, listed page by page.

URIs put the pack's kind where a URL's host goes, so every standard URL parser reads them:

- ``knowledge://lib/<slug>`` and ``knowledge://pkg/<scope>.<repo>.<package>.<pack>``: the pack's index
  (selector, kind, title, summary, related; never bodies), as the ``knowledge_pack_index`` prompt renders it;
- ``knowledge://lib/<slug>/<selector>`` (and ``pkg`` alike): one doc's title and body as Markdown.

The first form, ``knowledge://lib:<slug>/<selector>``, put a colon where URL parsers expect a port; it is
still read (not listed). ``resources/list`` returns at most ``PAGE_SIZE`` resources per page, packs in name
order, each pack's index before its docs (by selector); ``nextCursor`` is an opaque keyset cursor, so pages
stay consistent while docs are added. A principal sees only what it may read: packs it cannot see are not
listed, and of a pack it may read in part only the readable docs.
"""
from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import ListResourcesResult, PaginatedRequestParams, Resource

from ..errors import AgentContextError, ValidationError
from ..knowledge import tools
from ..knowledge.render import pack_index
from .registry import CallContext, protocol_error

SCHEME = "knowledge"
KINDS = ("lib", "pkg")
PAGE_SIZE = 100
MARKDOWN = "text/markdown"


def pack_uri(pack: str) -> str:
    kind, name = pack.split(":", 1)
    return f"{SCHEME}://{kind}/{name}"


def doc_uri(pack: str, selector: str) -> str:
    return f"{pack_uri(pack)}/{selector}"


def pack_name(kind: str, name: str) -> str:
    if kind not in KINDS:
        raise ValidationError(f"{SCHEME}://{kind}/... is not a knowledge URI; use {SCHEME}://lib/<slug>[/<selector>] "
                              f"or {SCHEME}://pkg/<scope>.<repo>.<package>.<pack>[/<selector>]", uri_kind=kind)
    return f"{kind}:{name}"


def read_doc(ctx: CallContext, pack: str, selector: str) -> str:
    doc = tools.read_knowledge_doc(ctx.ws, pack, selector, principal=ctx.principal)
    return f"# {doc['title']} ({doc['selector']})\n\n{doc['content'].strip()}\n"


def read_index(ctx: CallContext, pack: str) -> str:
    return pack_index(ctx.ws, pack, ctx.principal)


# --- listing -----------------------------------------------------------------------------------------


def encode_cursor(pack: str, selector: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([pack, selector]).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[str, str] | None:
    if cursor is None:
        return None
    try:
        pack, selector = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if isinstance(pack, str) and isinstance(selector, str):
            return pack, selector
    except (binascii.Error, ValueError, TypeError):
        pass
    raise ValidationError("invalid resources/list cursor; pass back the nextCursor of the previous page unchanged")


def _entries(ctx: CallContext, pack: dict[str, Any]):
    """(sort key, resource) for one pack: its index (key "") then its readable docs by selector."""
    name = pack["pack"]
    yield "", Resource(uri=pack_uri(name), name=name, title=f"{pack['name']} (index)", mime_type=MARKDOWN,
                       description=f"The index of {name}: {pack['docs']} docs by selector, kind, title and summary "
                                   "(never bodies).")
    for doc in tools.list_knowledge_docs(ctx.ws, name, ctx.principal):
        yield doc["selector"], Resource(uri=doc_uri(name, doc["selector"]), name=f"{name}/{doc['selector']}",
                                        title=doc["title"], description=doc["summary"] or None, mime_type=MARKDOWN)


def list_page(ctx: CallContext, cursor: str | None, size: int | None = None) -> ListResourcesResult:
    """One page of what the principal may read, after ``cursor``; ``next_cursor`` is set when more follow."""
    size = size or PAGE_SIZE
    after = decode_cursor(cursor)
    page: list[Resource] = []
    last = ("", "")
    for pack in sorted(tools.list_knowledge_packs(ctx.ws, ctx.principal), key=lambda p: p["pack"]):
        if after is not None and pack["pack"] < after[0]:
            continue
        for key, resource in _entries(ctx, pack):
            if after is not None and (pack["pack"], key) <= after:
                continue
            if len(page) == size:
                return ListResourcesResult(resources=page, next_cursor=encode_cursor(*last))
            page.append(resource)
            last = (pack["pack"], key)
    return ListResourcesResult(resources=page)


# --- registration ------------------------------------------------------------------------------------


def add_knowledge_resources(server: MCPServer, ctx: CallContext) -> None:
    @server.resource(f"{SCHEME}://{{kind}}/{{name}}/{{selector}}", name="knowledge_doc", title="Knowledge doc",
                     mime_type=MARKDOWN, description="One knowledge doc's title and body as Markdown, e.g. "
                     f"{SCHEME}://lib/handbook/onboarding or {SCHEME}://pkg/acme.tools.knowledge.core/design.agents.")
    def knowledge_doc(kind: str, name: str, selector: str) -> str:
        try:
            return read_doc(ctx, pack_name(kind, name), selector)
        except AgentContextError as exc:
            raise protocol_error(exc) from None

    @server.resource(f"{SCHEME}://{{kind}}/{{name}}", name="knowledge_pack_index", title="Knowledge pack index",
                     mime_type=MARKDOWN, description="A pack's index (selector, kind, title, summary, related; never "
                     f"bodies), e.g. {SCHEME}://lib/handbook.")
    def knowledge_pack_index(kind: str, name: str) -> str:
        try:
            if ":" in kind:  # the first URI form, knowledge://lib:<slug>/<selector>: one doc
                return read_doc(ctx, kind, name)
            return read_index(ctx, pack_name(kind, name))
        except AgentContextError as exc:
            raise protocol_error(exc) from None

    async def list_resources(_request: Any, params: PaginatedRequestParams) -> ListResourcesResult:
        try:
            return await anyio.to_thread.run_sync(list_page, ctx, params.cursor)
        except AgentContextError as exc:  # a bad cursor is INVALID_PARAMS
            raise protocol_error(exc) from None

    # The SDK's MCPServer lists only static resources, without paging or a caller; its low-level server takes
    # our handler for the method (add_request_handler is the documented way to replace one).
    server._lowlevel_server.add_request_handler("resources/list", PaginatedRequestParams, list_resources)
