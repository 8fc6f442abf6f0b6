"""The MCP server in process (a real mcp.Client session): tools, schemas, every tool, errors, resource, prompt.

The same checks over stdio and HTTP are in test_mcp_transports.py; argument fuzzing in test_mcp_fuzz.py.
"""
from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from agentcontext.knowledge import packs, tools
from agentcontext.mcp_server import ERROR_META, build_server

from .test_access import build_workspace

TOOLS = {"list_knowledge_packs", "search_knowledge", "list_knowledge_neighbors", "read_knowledge_doc",
         "flash_knowledge", "create_knowledge_doc", "update_knowledge_doc", "delete_knowledge_doc"}
WRITERS = {"create_knowledge_doc", "update_knowledge_doc", "delete_knowledge_doc"}


def run(server, script):
    """Run ``script(client)`` in one real client session against ``server``; return what it returns."""
    async def main():
        async with Client(server) as client:
            return await script(client)

    return anyio.run(main)


async def call(client, name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """(is_error, structured content); for a tool error, (True, {"error": the data from _meta})."""
    result = await client.call_tool(name, args)
    if result.is_error:
        return True, {"error": error_of(result)}
    return False, result.structured_content or {}


def error_of(result) -> dict[str, Any]:
    """A tool error's data: no structured content (clients validate it against the output schema), the text
    ``<Type>: <message>``, and ``{type, message, ...data}`` in ``_meta``."""
    assert result.is_error and result.structured_content is None, result
    text = result.content[0].text
    assert "Traceback" not in text and 'File "' not in text
    error = result.meta[ERROR_META]
    assert text == f"{error['type']}: {error['message']}", (text, error)
    return error


def walk_objects(schema):
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            yield schema
        for value in schema.values():
            yield from walk_objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from walk_objects(value)


def check_tool_list(listed) -> None:
    """Every tool is there, with a description an agent can act on and schemas that forbid unknown keys."""
    by_name = {t.name: t for t in listed.tools}
    assert TOOLS <= set(by_name)
    for name in TOOLS:
        tool = by_name[name]
        assert len(tool.description) > 60, name
        assert tool.input_schema["type"] == "object"
        for obj in walk_objects(tool.input_schema):
            assert obj.get("additionalProperties") is False, (name, obj)
        assert tool.output_schema and tool.output_schema["type"] == "object"
        assert tool.annotations.read_only_hint is (name not in WRITERS)
    assert by_name["search_knowledge"].input_schema["required"] == ["pack"]
    assert set(by_name["flash_knowledge"].input_schema["properties"]) == {"pack", "selectors", "budget_tokens",
                                                                            "as_of", "degrade"}  # issue 12 s4
    assert "first" in by_name["list_knowledge_packs"].description.lower() or \
        "start here" in by_name["list_knowledge_packs"].description.lower()
    assert "never bodies" in by_name["search_knowledge"].description


async def exercise_every_tool(client, pack: str = "lib:open") -> dict[str, Any]:
    """Call each tool with good arguments and then with bad ones; returns the good results by tool."""
    check_tool_list(await client.list_tools())
    good = {}
    for name, args in [
        ("list_knowledge_packs", {}),
        ("search_knowledge", {"pack": pack, "query": "onboarding guide", "limit": 5}),
        ("list_knowledge_neighbors", {"pack": pack, "selector": "guide"}),
        ("read_knowledge_doc", {"pack": pack, "selector": "guide"}),
        ("flash_knowledge", {"pack": pack, "selectors": ["guide"]}),
        ("create_knowledge_doc", {"pack": pack, "selector": "mcp.note", "title": "Note", "summary": "From MCP.",
                                  "tags": ["origin:mcp"], "content": "Written through MCP.",
                                  "related": [{"type": "depends_on", "target": "basics"}]}),
        ("update_knowledge_doc", {"pack": pack, "selector": "mcp.note", "content": "Rewritten.",
                                  "expected_version": 1}),
        ("delete_knowledge_doc", {"pack": pack, "selector": "mcp.note", "expected_version": 2}),
    ]:
        is_error, data = await call(client, name, args)
        assert not is_error, (name, data)
        good[name] = data
    assert any(p["pack"] == pack for p in good["list_knowledge_packs"]["packs"])
    assert good["search_knowledge"]["hits"][0]["selector"] == "guide"
    assert [(n["selector"], n["type"]) for n in good["list_knowledge_neighbors"]["neighbors"]] == \
        [("basics", "depends_on")]
    assert good["read_knowledge_doc"]["content"].startswith("The onboarding guide")
    assert good["flash_knowledge"]["order"] == ["basics", "guide"] and len(good["flash_knowledge"]["digest"]) == 64
    assert good["create_knowledge_doc"]["version"] == 1 and good["update_knowledge_doc"]["version"] == 2
    assert good["delete_knowledge_doc"]["deleted"] is True

    bad = [
        ("read_knowledge_doc", {"pack": pack}, "ValidationError"),
        ("read_knowledge_doc", {"pack": pack, "selector": "guide", "bogus": 1}, "ValidationError"),
        ("read_knowledge_doc", {"pack": pack, "selector": 42}, "ValidationError"),
        ("read_knowledge_doc", {"pack": pack, "selector": "no.such.doc"}, "NotFoundError"),
        ("read_knowledge_doc", {"pack": pack, "selector": "not a selector!"}, "ValidationError"),
        ("search_knowledge", {"pack": pack, "limit": "10"}, "ValidationError"),
        ("search_knowledge", {"pack": "nonsense"}, "ValidationError"),
        ("list_knowledge_neighbors", {"pack": pack, "selector": "guide", "edge_type": "!!!"}, "ValidationError"),
        ("flash_knowledge", {"pack": pack, "selectors": []}, "ValidationError"),
        ("flash_knowledge", {"pack": pack, "selectors": ["guide"], "budget_tokens": 1}, "BudgetExceededError"),
        ("flash_knowledge", {"pack": pack, "selectors": ["guide"], "as_of": "last tuesday"}, "ValidationError"),
        ("create_knowledge_doc", {"pack": pack, "selector": "guide", "title": "Dup"}, "ConflictError"),
        ("update_knowledge_doc", {"pack": pack, "selector": "guide", "title": "X", "expected_version": 99},
         "ConflictError"),
        ("update_knowledge_doc", {"pack": pack, "selector": "ghost", "title": "X"}, "NotFoundError"),
        ("delete_knowledge_doc", {"pack": pack, "selector": "ghost"}, "NotFoundError"),
        ("create_knowledge_doc", {"pack": pack, "selector": "x", "title": "X",
                                  "related": [{"type": "depends_on", "target": "y", "weight": 2}]}, "ValidationError"),
    ]
    for name, args, expected in bad:
        is_error, data = await call(client, name, args)
        assert is_error and data["error"]["type"] == expected, (name, args, data)
    result = await client.call_tool("no_such_tool", {})
    assert result.is_error
    # The server still answers after all of that.
    assert not (await call(client, "list_knowledge_packs", {}))[0]
    return good


@pytest.fixture
def aws(ws):
    return build_workspace(ws)


def test_in_process_session_lists_checks_and_calls_every_tool(aws):
    good = run(build_server(aws), exercise_every_tool)
    # An MCP call and a Python call of the same thing return the same data.
    assert good["read_knowledge_doc"] == tools.read_knowledge_doc(aws, "lib:open", "guide")
    actions = [(r["principal"], r["action"], r["target"]) for r in aws.store.audit() if r["outcome"] == "ok"][-3:]
    assert actions == [("owner", "doc.put", "lib:open/mcp.note"), ("owner", "doc.put", "lib:open/mcp.note"),
                       ("owner", "doc.delete", "lib:open/mcp.note")]


def test_errors_carry_our_type_message_and_data(ws, write_pack):
    from agentcontext.knowledge.packs import install_folder

    install_folder(ws, write_pack("cyc", {"a": (["b"], "A"), "b": (["c"], "B"), "c": (["a"], "C"),
                                          "m": (["ghost"], "M")}), defer_embeddings=True)
    install_folder(ws, write_pack("core", {"p": ([], "P")}, selector="pkg:acme.tools.knowledge.core"),
                   defer_embeddings=True)

    async def script(client):
        _, cycle = await call(client, "flash_knowledge", {"pack": "lib:cyc", "selectors": ["a"]})
        _, missing = await call(client, "flash_knowledge", {"pack": "lib:cyc", "selectors": ["m"]})
        result = await client.call_tool("create_knowledge_doc", {"pack": "pkg:acme.tools.knowledge.core",
                                                                 "selector": "q", "title": "Q"})
        return cycle, missing, result

    cycle, missing, readonly = run(build_server(ws), script)
    assert cycle["error"]["type"] == "CycleError" and cycle["error"]["cycle"][0] == cycle["error"]["cycle"][-1]
    assert set(cycle["error"]["cycle"]) == {"a", "b", "c"}
    assert missing["error"]["type"] == "MissingModuleError" and missing["error"]["missing"] == "ghost"
    assert readonly.is_error and readonly.content[0].text.startswith("ReadOnlyError: pkg:acme.tools.knowledge.core")


def test_resource_and_prompt(aws):
    async def script(client):
        templates = await client.list_resource_templates()
        doc = await client.read_resource("knowledge://lib/open/guide")
        old_form = await client.read_resource("knowledge://lib:open/guide")  # the first URI form is still read
        encoded = await client.read_resource("knowledge://lib%3Aopen/basics")
        pack_index = await client.read_resource("knowledge://lib/open")
        prompts = await client.list_prompts()
        index = await client.get_prompt("knowledge_pack_index", {"pack": "lib:open"})
        errors = []
        for attempt in (lambda: client.read_resource("knowledge://lib/open/ghost"),
                        lambda: client.get_prompt("knowledge_pack_index", {"pack": "lib:ghost"}),
                        lambda: client.read_resource("knowledge://lib:open/ghost"),
                        lambda: client.read_resource("knowledge://lib/ghost"),
                        lambda: client.read_resource("knowledge://web/open/guide"),
                        lambda: client.read_resource("knowledge://lib/open/not%20a%20selector")):
            with pytest.raises(MCPError) as info:
                await attempt()
            errors.append(info.value)
        return templates, doc, old_form, encoded, pack_index, prompts, index, errors

    templates, doc, old_form, encoded, pack_index, prompts, index, errors = run(build_server(aws), script)
    assert [t.uri_template for t in templates.resource_templates] == ["knowledge://{kind}/{name}/{selector}",
                                                                       "knowledge://{kind}/{name}"]
    assert doc.contents[0].text.startswith("# Guide (guide)\n\nThe onboarding guide")
    assert doc.contents[0].mime_type == "text/markdown"
    assert old_form.contents[0].text == doc.contents[0].text
    assert encoded.contents[0].text.startswith("# Basics (basics)")
    assert [p.name for p in prompts.prompts] == ["knowledge_pack_index"]
    text = index.messages[0].content.text
    assert "`guide` [reference] Guide: About guide. (related: depends_on basics)" in text
    assert "onboarding guide builds" not in text  # an index never carries bodies
    assert pack_index.contents[0].text == text and pack_index.contents[0].mime_type == "text/markdown"
    assert [e.message.split(":")[0] for e in errors] == ["NotFoundError"] * 4 + ["ValidationError"] * 2
    assert errors[0].data["error"]["selector"] == "ghost"


def test_a_reader_sees_no_trace_of_a_denied_pack_through_mcp(aws):
    async def script(client):
        listed = await call(client, "list_knowledge_packs", {})
        denied = []
        for name, args in [("search_knowledge", {"pack": "lib:secret", "query": "salary"}),
                           ("list_knowledge_neighbors", {"pack": "lib:secret", "selector": "bonus"}),
                           ("read_knowledge_doc", {"pack": "lib:secret", "selector": "salaries"}),
                           ("flash_knowledge", {"pack": "lib:secret", "selectors": ["bonus"]}),
                           ("create_knowledge_doc", {"pack": "lib:open", "selector": "z", "title": "Z"}),
                           ("update_knowledge_doc", {"pack": "lib:open", "selector": "guide", "title": "Z"}),
                           ("delete_knowledge_doc", {"pack": "lib:open", "selector": "guide"})]:
            denied.append(await call(client, name, args))
        with pytest.raises(MCPError) as res:
            await client.read_resource("knowledge://lib/secret/salaries")
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("knowledge_pack_index", {"pack": "lib:secret"})
        return listed, denied, res.value, prompt.value

    listed, denied, res, prompt = run(build_server(aws, principal="reader"), script)
    assert [p["pack"] for p in listed[1]["packs"]] == ["lib:open"]
    assert all(is_error and data["error"]["type"] == "AccessDeniedError" for is_error, data in denied)
    assert res.message.startswith("AccessDeniedError") and prompt.message.startswith("AccessDeniedError")
    refused = [(r["action"], r["outcome"]) for r in aws.store.audit(principal="reader")]
    assert ("doc.put", "denied") in refused and ("doc.delete", "denied") in refused
    assert len(refused) == 9
    assert tools.read_knowledge_doc(aws, "lib:open", "guide")["title"] == "Guide"


def test_flash_through_mcp_names_the_doc_that_needs_an_unreadable_one(aws):
    async def script(client):
        ok = await call(client, "flash_knowledge", {"pack": "lib:eng", "selectors": ["api.public"]})
        bad = await call(client, "flash_knowledge", {"pack": "lib:eng", "selectors": ["api.leaky"]})
        hits = await call(client, "search_knowledge", {"pack": "lib:eng", "query": "", "limit": 100})
        return ok, bad, hits

    ok, bad, hits = run(build_server(aws, principal="apireader"), script)
    assert ok[1]["order"] == ["core.public", "api.public"]
    assert bad[0] and bad[1]["error"]["selector"] == "api.leaky"  # never the hidden doc (issue 13 s2)
    assert "core.secret" not in str(bad[1])
    assert "core.secret" not in {h["selector"] for h in hits[1]["hits"]}


def test_more_capabilities_register_on_the_same_server(aws):
    from pydantic import Field

    from agentcontext.mcp_server import StrictArgs, ToolSpec, register_tools
    from agentcontext.mcp_server import registry

    class EchoArgs(StrictArgs):
        text: str = Field(max_length=100)

    def echo(ctx, args):
        return {"text": args.text, "principal": ctx.principal or "owner",
                "packs": len(packs.list_packs(ctx.ws, ctx.principal))}

    register_tools("echo", lambda: [ToolSpec("echo", "Echo text back (a test capability).", EchoArgs, echo,
                                             read_only=True)])
    try:
        async def script(client):
            names = {t.name for t in (await client.list_tools()).tools}
            return names, await call(client, "echo", {"text": "hi"}), await call(client, "echo", {"txt": "hi"})

        names, ok, bad = run(build_server(aws, principal="reader"), script)
        assert TOOLS | {"echo"} <= names
        assert ok == (False, {"text": "hi", "principal": "reader", "packs": 1})
        assert bad[0] and "unknown argument 'txt'" in bad[1]["error"]["message"]
        only = run(build_server(aws, capabilities=["echo"]), lambda c: c.list_tools())
        assert [t.name for t in only.tools] == ["echo"]
    finally:
        registry._PROVIDERS.pop("echo", None)


def test_a_crashing_tool_is_an_internal_tool_error_and_the_server_goes_on(aws, capsys):
    from agentcontext.mcp_server import StrictArgs, ToolSpec, register_tools
    from agentcontext.mcp_server import registry

    def boom(ctx, args):
        raise RuntimeError("secret internals /etc/passwd")

    register_tools("boom", lambda: [ToolSpec("boom", "Always fails (a test capability).", StrictArgs, boom)])
    try:
        async def script(client):
            return await client.call_tool("boom", {}), await call(client, "list_knowledge_packs", {})

        crashed, after = run(build_server(aws), script)
    finally:
        registry._PROVIDERS.pop("boom", None)
    assert crashed.is_error and crashed.content[0].text.startswith("InternalError: boom failed unexpectedly")
    assert "secret internals" not in crashed.content[0].text
    assert error_of(crashed)["type"] == "InternalError"
    assert not after[0]


def test_flash_as_of_over_mcp_matches_python(aws):
    from agentcontext.knowledge.flash import flash
    from agentcontext.model import utcnow

    stamp = utcnow()
    packs.put_doc(aws, "lib:open", "basics", content="Changed later.", embed=False)

    async def script(client):
        return (await call(client, "flash_knowledge", {"pack": "lib:open", "selectors": ["guide"], "as_of": stamp}),
                await call(client, "flash_knowledge", {"pack": "lib:open", "selectors": ["guide"]}))

    (_, past), (_, now) = run(build_server(aws), script)
    assert past["digest"] == flash(aws, "lib:open", "guide", as_of=stamp).digest != now["digest"]
    assert "Open basics about onboarding." in past["text"] and "Changed later." in now["text"]
    assert now == flash(aws, "lib:open", ["guide"]).to_dict()
