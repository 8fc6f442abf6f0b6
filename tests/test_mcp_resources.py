"""MCP resources over a real in-process mcp.Client session: resources/list names every pack index and doc the
principal may read, page by page with a cursor, as URIs that standard URL parsers read; each listed URI reads.
(The Inspector CLI lists and reads them over HTTP in test_mcp_inspector.py.)"""
from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from mcp.shared.exceptions import MCPError

from agentcontext.knowledge import packs
from agentcontext.mcp_server import build_server
from agentcontext.mcp_server import resources as resources_mod

from .test_access import build_workspace
from .test_mcp import run


@pytest.fixture
def aws(ws):
    return build_workspace(ws)


async def list_all(client) -> tuple[list, int]:
    """Every resource, following nextCursor; also how many pages it took."""
    listed, cursor, pages = [], None, 0
    while True:
        page = await client.list_resources(cursor=cursor) if cursor else await client.list_resources()
        pages += 1
        listed.extend(page.resources)
        cursor = page.next_cursor
        if not cursor:
            return listed, pages


def test_resources_list_every_readable_index_and_doc_as_valid_uris(aws):
    async def script(client):
        listed, _ = await list_all(client)
        reads = {str(r.uri): (await client.read_resource(str(r.uri))).contents[0].text for r in listed}
        return listed, reads

    listed, reads = run(build_server(aws), script)
    uris = [str(r.uri) for r in listed]
    assert uris == ["knowledge://lib/eng", "knowledge://lib/eng/api.leaky", "knowledge://lib/eng/api.public",
                    "knowledge://lib/eng/core.public", "knowledge://lib/eng/core.secret",
                    "knowledge://lib/open", "knowledge://lib/open/basics", "knowledge://lib/open/guide",
                    "knowledge://lib/secret", "knowledge://lib/secret/bonus", "knowledge://lib/secret/salaries"]
    for uri in uris:  # before: knowledge://lib:open/guide, whose "port" (open) made URL parsers fail
        parts = urlsplit(uri)
        assert parts.scheme == "knowledge" and parts.hostname in ("lib", "pkg") and parts.port is None, uri
    by_uri = {str(r.uri): r for r in listed}
    guide = by_uri["knowledge://lib/open/guide"]
    assert (guide.name, guide.title, guide.description, guide.mime_type) == ("lib:open/guide", "Guide",
                                                                            "About guide.", "text/markdown")
    assert by_uri["knowledge://lib/open"].title == "open (index)"
    assert reads["knowledge://lib/open/guide"].startswith("# Guide (guide)\n\nThe onboarding guide")
    assert reads["knowledge://lib/open"].startswith("# Knowledge pack: open (lib:open)")


def test_pkg_packs_are_listed_under_the_pkg_host(ws, write_pack):
    packs.install_folder(ws, write_pack("core", {"design.agents": ([], "Agents.")},
                                        selector="pkg:acme.tools.knowledge.core"), defer_embeddings=True)

    async def script(client):
        listed, _ = await list_all(client)
        return [str(r.uri) for r in listed], (await client.read_resource(
            "knowledge://pkg/acme.tools.knowledge.core/design.agents")).contents[0].text

    uris, text = run(build_server(ws), script)
    assert uris == ["knowledge://pkg/acme.tools.knowledge.core",
                    "knowledge://pkg/acme.tools.knowledge.core/design.agents"]
    assert text.startswith("# Design.Agents (design.agents)\n\nAgents.")


def test_a_principal_lists_only_what_it_may_read(aws):
    def listing(who):
        async def script(client):
            listed, _ = await list_all(client)
            with pytest.raises(MCPError) as denied:
                await client.read_resource("knowledge://lib/secret")
            return [str(r.uri) for r in listed], denied.value

        return run(build_server(aws, principal=who), script)

    reader, denied = listing("reader")
    assert reader == ["knowledge://lib/open", "knowledge://lib/open/basics", "knowledge://lib/open/guide"]
    assert denied.message.startswith("AccessDeniedError")
    apireader, _ = listing("apireader")  # doc-level grants: the readable part of lib:eng only
    assert apireader == ["knowledge://lib/eng", "knowledge://lib/eng/api.leaky", "knowledge://lib/eng/api.public",
                         "knowledge://lib/eng/core.public"]
    nobody, _ = listing("stranger")
    assert nobody == []


def test_resources_list_pages_with_a_cursor(ws, monkeypatch):
    packs.create_pack(ws, "big")
    for i in range(25):
        packs.put_doc(ws, "lib:big", f"doc{i:02d}", title=f"Doc {i}", content="x", embed=False)
    packs.create_pack(ws, "small")
    packs.put_doc(ws, "lib:small", "only", title="Only", content="y", embed=False)
    monkeypatch.setattr(resources_mod, "PAGE_SIZE", 10)

    async def script(client):
        first = await client.list_resources()
        everything, pages = await list_all(client)
        # Docs added between pages: one after the cursor shows up in order, one before it does not; no doc that
        # was there is skipped or repeated (a keyset cursor, not an offset).
        second = await client.list_resources(cursor=first.next_cursor)
        for late in ("doc05a", "doc24a"):
            packs.put_doc(ws, "lib:big", late, title="Late", content="z", embed=False)
        rest, cursor = [], second.next_cursor
        while cursor:
            page = await client.list_resources(cursor=cursor)
            rest.extend(page.resources)
            cursor = page.next_cursor
        with pytest.raises(MCPError) as bad:
            await client.list_resources(cursor="not-a-cursor")
        return first, everything, pages, second, rest, bad.value

    first, everything, pages, second, rest, bad = run(build_server(ws), script)
    uris = [str(r.uri) for r in everything]
    assert len(first.resources) == 10 and first.next_cursor and pages == 3
    assert uris == (["knowledge://lib/big"] + [f"knowledge://lib/big/doc{i:02d}" for i in range(25)]
                    + ["knowledge://lib/small", "knowledge://lib/small/only"])
    after = [str(r.uri) for r in first.resources + second.resources + rest]
    assert after == uris[:26] + ["knowledge://lib/big/doc24a"] + uris[26:]
    assert bad.message.startswith("ValidationError: invalid resources/list cursor")
