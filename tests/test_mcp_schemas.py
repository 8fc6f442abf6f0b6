"""Every MCP tool's schemas and results, in process (a real mcp.Client session) over one table of calls
(tests/mcp_cases.py): errors carry our type and message and no structured content, successes return
structured content that the declared output schema describes completely, schemas are portable, and every
integer argument is bounded. The same table runs through the MCP Inspector CLI in test_mcp_inspector.py."""
from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

from agentcontext.mcp_server import ERROR_META, build_server

from .mcp_cases import ALL_TOOLS, cases, pack_writer, seed
from .test_mcp import run

MAX_SAFE = 2**53 - 1
KEYWORDS = {"type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A seeded workspace and the result of every case, each principal in its own session."""
    from agentcontext.workspace import Workspace

    root = tmp_path_factory.mktemp("mcp-schemas")
    ws = Workspace.open(home=root / ".agentcontext", create=True)
    ids = seed(ws, pack_writer(root))
    table = cases(ids)

    async def script(client):
        listed = {t.name: t for t in (await client.list_tools()).tools}
        return listed, {c.name: await client.call_tool(c.tool, c.args) for c in table if c.principal == who}

    results, listed = {}, None
    for who in (None, "reader"):
        listed, got = run(build_server(ws, principal=who), script)
        results.update(got)
    yield ws, table, listed, results
    ws.close()


def subschemas(schema: Any, path: str = ""):
    """(path, subschema) for every schema node: properties, items, anyOf branches, $defs, ..."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in ("properties", "$defs", "definitions", "patternProperties"):
        for name, sub in (schema.get(key) or {}).items():
            yield from subschemas(sub, f"{path}.{key}.{name}")
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for i, sub in enumerate(schema.get(key) or []):
            yield from subschemas(sub, f"{path}.{key}[{i}]")
    for key in ("items", "additionalProperties", "not", "contains"):
        if isinstance(schema.get(key), dict):
            yield from subschemas(schema[key], f"{path}.{key}")


def closed(schema: Any) -> Any:
    """A copy in which every object that declares properties forbids undeclared ones."""
    schema = copy.deepcopy(schema)
    for _, sub in subschemas(schema):
        if "properties" in sub and "additionalProperties" not in sub:
            sub["additionalProperties"] = False
    return schema


def test_the_table_covers_every_tool_with_a_success_and_an_error(served):
    _, table, listed, _ = served
    assert set(listed) == ALL_TOOLS
    assert {c.tool for c in table if c.expect is None} == ALL_TOOLS
    assert {c.tool for c in table if c.expect is not None} == ALL_TOOLS
    assert len({c.name for c in table}) == len(table)


def test_a_failing_call_is_a_tool_error_with_our_type_and_message_and_no_structured_content(served):
    _, table, _, results = served
    for case in (c for c in table if c.expect is not None):
        result = results[case.name]
        assert result.is_error, case.name
        assert result.structured_content is None, (case.name, result.structured_content)
        text = result.content[0].text
        assert text.startswith(f"{case.expect}: ") and len(text) > len(case.expect) + 10, (case.name, text)
        assert "Traceback" not in text
        error = result.meta[ERROR_META]
        assert error["type"] == case.expect and text == f"{error['type']}: {error['message']}", case.name


def test_error_data_travels_in_meta(served):
    _, table, _, results = served
    cycle = results["flash_knowledge-CycleError"].meta[ERROR_META]
    assert cycle["cycle"][0] == cycle["cycle"][-1] and set(cycle["cycle"]) == {"a", "b", "c"}
    assert results["flash_knowledge-MissingModuleError"].meta[ERROR_META]["missing"] == "ghost"
    denied = results["search_knowledge-AccessDeniedError"].meta[ERROR_META]
    assert denied["pack"] == "lib:secret" and denied["needed"] == "read"


def test_a_success_returns_structured_content_its_output_schema_declares_completely(served):
    _, table, listed, results = served
    for case in (c for c in table if c.expect is None):
        result = results[case.name]
        assert not result.is_error, (case.name, result.content[0].text)
        schema = listed[case.tool].output_schema
        assert schema and schema["type"] == "object", case.name
        data = result.structured_content
        jsonschema.validate(data, schema)  # what every client checks
        jsonschema.validate(data, closed(schema))  # and no field goes undeclared
        assert json.loads(result.content[0].text) == data  # the same JSON as text, for older clients
        for _, sub in subschemas(schema):
            if "required" in sub:
                assert set(sub["required"]) <= set(sub["properties"]), (case.name, sub)


def test_every_schema_is_portable_no_untyped_or_union_typed_node(served):
    """The MCP Inspector's portability check: every node constrains something and has at most one type
    (store_memory's and record_decision's metadata used to be a bare {} JsonValue)."""
    _, _, listed, _ = served
    problems = []
    for name, tool in listed.items():
        for kind, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
            for path, sub in subschemas(schema):
                if not KEYWORDS & set(sub):
                    problems.append(f"{name} {kind}{path}: no validation keyword")
                if isinstance(sub.get("type"), list):
                    problems.append(f"{name} {kind}{path}: type is a list")
    assert problems == []


def integer_fields(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Top-level argument name -> its integer subschema (directly or inside anyOf)."""
    out = {}
    for name, prop in schema.get("properties", {}).items():
        for _, sub in subschemas(prop):
            if sub.get("type") == "integer":
                out[name] = sub
    return out


def test_every_integer_argument_is_bounded_and_out_of_range_ones_are_validation_errors(served):
    ws, table, listed, _ = served
    good = {c.tool: c.args for c in table if c.expect is None}
    probes = []
    for name, tool in sorted(listed.items()):
        for arg, sub in integer_fields(tool.input_schema).items():
            assert "minimum" in sub and sub.get("maximum", MAX_SAFE + 1) <= MAX_SAFE, (name, arg, sub)
            for value in (2**70, -(2**70), sub["maximum"] + 1):
                probes.append((name, arg, value))
    assert {(n, a) for n, a, _ in probes} >= {("read_knowledge_doc", "version"), ("search_knowledge", "limit"),
                                              ("flash_knowledge", "budget_tokens"), ("get_causal_chain", "max_depth")}

    async def script(client):
        return [(probe, await client.call_tool(probe[0], {**good[probe[0]], probe[1]: probe[2]})) for probe in probes]

    for probe, result in run(build_server(ws), script):
        assert result.is_error and result.meta[ERROR_META]["type"] == "ValidationError", (probe, result.content)
        assert f"argument '{probe[1]}'" in result.content[0].text


def test_non_finite_and_huge_numbers_are_validation_errors(served):
    ws, _, _, _ = served

    async def script(client):
        out = []
        for name, args in [("forget_memories", {"days_old": 1e308}), ("forget_memories", {"days_old": -0.5}),
                           ("record_decision", {"category": "c", "scenario": "s", "reasoning": "", "outcome": "o",
                                                "confidence": float("nan")})]:
            out.append((name, await client.call_tool(name, args)))
        return out

    for name, result in run(build_server(ws), script):
        assert result.is_error and result.meta[ERROR_META]["type"] == "ValidationError", (name, result.content)
