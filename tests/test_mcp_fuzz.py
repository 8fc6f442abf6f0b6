"""Fuzzing every MCP tool's arguments: every response is a success whose structured content its output schema
declares, or one of our tool errors (never InternalError, never structured content on an error), and the
server keeps answering (wrong types, unknown keys, huge strings and numbers, odd selectors and ids, unknown
tools). One test mixes tools and arguments freely; one per tool draws arguments from the tool's own input
schema, near and past every bound."""
from __future__ import annotations

import atexit
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from agentcontext import errors
from agentcontext.mcp_server import ERROR_META, build_server
from agentcontext.mcp_server.registry import input_schema, tool_specs
from agentcontext.mcp_server.server import load_plugins
from agentcontext.workspace import Workspace

from .mcp_cases import ALL_TOOLS, PKG, pack_writer, seed
from .test_mcp_schemas import closed

OUR_ERRORS = {name for name, obj in vars(errors).items()
              if isinstance(obj, type) and issubclass(obj, errors.AgentContextError)}
load_plugins()
SCHEMAS = {spec.name: input_schema(spec) for spec in tool_specs()}
OUTPUTS = {spec.name: closed(spec.output_schema) for spec in tool_specs()}
ARG_NAMES = sorted({name for schema in SCHEMAS.values() for name in schema["properties"]})
ODD_SELECTORS = ["guide", "basics", "", ".", "..", "a..b", "guide.", ".guide", "lib:open/guide", "../../etc/passwd",
                 "guide\x00", "gu ide", "ü.ß", "a" * 600, "9lives", "api.leaky", "core.secret", "*", "%2e%2e", "a", "m"]
ODD_PACKS = ["lib:open", "lib:secret", "lib:eng", "lib:cyc", PKG, "lib:", "lib:OPEN", "pkg:a.b.c.d", "pkg:a", "open",
             "", "lib:open/guide", "lib:" + "x" * 400, "lib:../x", "*", "memory:default", "graph:default"]

_home = Path(tempfile.mkdtemp(prefix="actx-fuzz-"))
atexit.register(shutil.rmtree, _home, True)
_ws = Workspace.open(home=_home / ".agentcontext", create=True)
IDS = seed(_ws, pack_writer(_home))
ODD_IDS = [IDS["memory"], IDS["forget"], IDS["decision"], IDS["effect"], "refund-v1", "mem_nope", "dec_missing",
           "c1", "c2", "ann", "refund", "lib:open/guide", "graph:default/acme", "x" * 301]
_servers = {who: build_server(_ws, principal=who) for who in (None, "reader", "apireader")}

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
                    st.sampled_from(ODD_SELECTORS + ODD_PACKS + ODD_IDS + ["depends_on", "2020-01-01", "yesterday",
                                                                           "upstream", "downstream"]),
                    st.just("x" * 120_000))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=8)
arguments = st.dictionaries(st.one_of(st.sampled_from(ARG_NAMES), st.text(max_size=10)), values, max_size=7)
tool_names = st.one_of(st.sampled_from(sorted(ALL_TOOLS)), st.sampled_from(["", "nope", "read_knowledge_doc "]))


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return root["$defs"][ref.rsplit("/", 1)[1]] if ref else schema


def near(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy:
    """Values a client might plausibly send for ``schema``: valid ones, values at and just past each bound,
    and now and then anything at all."""
    schema = resolve(schema, root)
    if "anyOf" in schema:
        return st.one_of([near(branch, root) for branch in schema["anyOf"]])
    kind = schema.get("type")
    if "enum" in schema:
        return st.one_of(st.sampled_from(schema["enum"]), st.sampled_from(["loves", "", "UPSTREAM"]))
    if kind == "integer":
        lo, hi = schema.get("minimum", -(2**70)), schema.get("maximum", 2**70)
        edges = [lo - 1, lo, lo + 1, hi - 1, hi, hi + 1, 2**63, 2**70, -(2**70), 0]
        return st.one_of(st.sampled_from(edges), st.integers(min_value=max(lo, -5), max_value=min(hi, 50)))
    if kind == "number":
        lo, hi = schema.get("minimum", -1e308), schema.get("maximum", 1e308)
        return st.one_of(st.sampled_from([lo, hi, -1e-9, 1e308, -1e308, math.inf, math.nan, 0.0, 0.5, 1.0, 1.5]),
                         st.floats(min_value=lo, max_value=hi))
    if kind == "string":
        cap = schema.get("maxLength", 120_000)
        return st.one_of(st.sampled_from(ODD_SELECTORS + ODD_PACKS + ODD_IDS), st.text(max_size=40),
                         st.just("y" * cap), st.just("y" * (cap + 1)), st.just(""))
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        items = near(schema.get("items", {"type": "string"}), root)
        return st.one_of(st.lists(items, max_size=4), st.just([]), st.lists(st.just("guide"), min_size=1001,
                                                                             max_size=1001))
    if kind == "object" and "properties" in schema:
        return arguments_for(schema, root)
    if kind == "object":  # free-form JSON (metadata)
        return st.one_of(st.dictionaries(st.text(max_size=8), values, max_size=5),
                         st.just({str(i): i for i in range(101)}), st.just({"a": {"b": {"c": [[[[None]]]]}}}))
    return values


POOLS = {"pack": ["lib:open", "lib:secret", "lib:eng", "lib:cyc", PKG, "lib:ghost"],
         "selector": ["guide", "basics", "a", "m", "p", "api.leaky", "core.secret", "salaries", "mcp.update_me", "zz"],
         "memory_id": [IDS["memory"], IDS["forget"], "mem_nope"], "decision_id": [IDS["decision"], IDS["effect"]],
         "policy_id": ["refund-v1", "nope"], "conversation_id": ["c1", "c2", "c9"], "user_id": ["ann", "bob"]}
POOLS.update({"target": POOLS["selector"], "related_to": POOLS["selector"], "selectors": POOLS["selector"],
              "caused_by": POOLS["decision_id"], "selector_prefix": ["gu", "api.", "core"]})


def valid(schema: dict[str, Any], root: dict[str, Any], name: str = "") -> st.SearchStrategy:
    """Values that pass the schema, drawn from the seeded workspace's names where the argument names one."""
    schema = resolve(schema, root)
    if "anyOf" in schema:
        return st.one_of([valid(branch, root, name) for branch in schema["anyOf"]])
    kind = schema.get("type")
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if kind == "integer":
        lo, hi = schema.get("minimum", -5), schema.get("maximum", 50)
        return st.integers(min_value=lo, max_value=min(hi, lo + 50))
    if kind == "number":
        return st.floats(min_value=schema.get("minimum", -1e6), max_value=schema.get("maximum", 1e6))
    if kind == "string":
        lo, hi = schema.get("minLength", 0), min(schema.get("maxLength", 40), 40)
        return st.sampled_from(POOLS[name]) if name in POOLS else st.text(min_size=lo, max_size=max(lo, hi))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(valid(schema.get("items", {"type": "string"}), root, name),
                        min_size=schema.get("minItems", 0), max_size=min(schema.get("maxItems", 3), 3))
    if kind == "object" and "properties" in schema:
        return valid_arguments(schema, root)
    return st.dictionaries(st.text(max_size=8), values, max_size=5)


def valid_arguments(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy:
    props, required = schema.get("properties", {}), set(schema.get("required", []))
    return st.fixed_dictionaries({k: valid(v, root, k) for k, v in props.items() if k in required},
                                 optional={k: valid(v, root, k) for k, v in props.items() if k not in required})


def arguments_for(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy:
    """Valid arguments, or valid ones with one argument pushed to or past a bound, retyped, or added."""
    props = schema.get("properties", {})
    good = valid_arguments(schema, root)
    if not props:
        return st.one_of(good, st.dictionaries(st.text(max_size=8), values, min_size=1, max_size=2))
    bent = st.tuples(good, st.sampled_from(sorted(props))).flatmap(
        lambda t: st.one_of(near(props[t[1]], root), values).map(lambda v: {**t[0], t[1]: v}))
    return st.one_of(good, bent, good.map(lambda d: {**d, "extra": 1}))


def check(result, name: str) -> None:
    if not result.is_error:
        assert name in ALL_TOOLS and isinstance(result.structured_content, dict)
        jsonschema.validate(result.structured_content, OUTPUTS[name])  # declared, every field
        return
    text = result.content[0].text
    kind = text.split(":", 1)[0]
    if name in ALL_TOOLS:
        assert kind in OUR_ERRORS, text[:300]
        assert result.structured_content is None
        assert result.meta[ERROR_META]["type"] == kind
    assert "Traceback" not in text and len(text) < 5000


async def session(who, calls) -> None:
    async with Client(_servers[who]) as client:
        for name, args in calls:
            check(await client.call_tool(name, args), name)
        alive = await client.call_tool("list_knowledge_packs", {})
        assert not alive.is_error and alive.structured_content["packs"]


FUZZ = settings(deadline=None, suppress_health_check=list(HealthCheck))
principals = st.sampled_from([None, None, "reader", "apireader"])  # mostly the owner, who gets furthest


@settings(FUZZ, max_examples=80)
@given(who=principals, calls=st.lists(st.tuples(tool_names, arguments), min_size=1, max_size=3))
def test_fuzzed_arguments_give_results_or_tool_errors(who, calls):
    anyio.run(session, who, calls)


@pytest.mark.parametrize("tool", sorted(ALL_TOOLS))
def test_arguments_drawn_from_each_tools_schema_give_results_or_our_errors(tool):
    schema = SCHEMAS[tool]

    @settings(FUZZ, max_examples=12)
    @given(who=principals, calls=st.lists(arguments_for(schema, schema), min_size=1, max_size=3))
    def fuzz(who, calls):
        anyio.run(session, who, [(tool, args) for args in calls])

    fuzz()
