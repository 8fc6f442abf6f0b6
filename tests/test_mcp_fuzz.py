"""Fuzzing the MCP tools' arguments: every response is a result or one of our tool errors, and the server
keeps answering (wrong types, unknown keys, huge strings, odd selectors, unknown tools)."""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from agentcontext import errors
from agentcontext.mcp_server import build_server
from agentcontext.workspace import Workspace

from .test_access import build_workspace
from .test_mcp import TOOLS

OUR_ERRORS = {name for name, obj in vars(errors).items()
              if isinstance(obj, type) and issubclass(obj, errors.AgentContextError)}
ARG_NAMES = ["pack", "selector", "selectors", "query", "tags", "kind", "selector_prefix", "related_to", "edge_type",
             "limit", "version", "budget_tokens", "as_of", "title", "summary", "content", "related",
             "expected_version", "degrade"]
ODD_SELECTORS = ["guide", "basics", "", ".", "..", "a..b", "guide.", ".guide", "lib:open/guide", "../../etc/passwd",
                 "guide\x00", "gu ide", "ü.ß", "a" * 600, "9lives", "api.leaky", "core.secret", "*", "%2e%2e"]
ODD_PACKS = ["lib:open", "lib:secret", "lib:eng", "lib:", "lib:OPEN", "pkg:a.b.c.d", "pkg:a", "open", "",
             "lib:open/guide", "lib:" + "x" * 400, "lib:../x", "*"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
                    st.sampled_from(ODD_SELECTORS + ODD_PACKS + ["depends_on", "2020-01-01", "yesterday"]),
                    st.just("x" * 120_000))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=8)
arguments = st.dictionaries(st.one_of(st.sampled_from(ARG_NAMES), st.text(max_size=10)), values, max_size=7)
plausible = st.fixed_dictionaries({"pack": st.sampled_from(ODD_PACKS), "selector": st.sampled_from(ODD_SELECTORS)},
                                  optional={"selectors": st.lists(st.sampled_from(ODD_SELECTORS), max_size=3),
                                            "query": st.text(max_size=40), "title": st.text(max_size=10),
                                            "limit": st.integers(-5, 2000), "version": st.integers(-1, 5),
                                            "budget_tokens": st.integers(-1, 50), "as_of": values,
                                            "edge_type": st.sampled_from(["depends_on", "loves", None])})
tool_names = st.one_of(st.sampled_from(sorted(TOOLS)), st.sampled_from(["", "nope", "read_knowledge_doc "]))

_home = Path(tempfile.mkdtemp(prefix="actx-fuzz-")) / ".agentcontext"
atexit.register(shutil.rmtree, _home.parent, True)
_ws = build_workspace(Workspace.open(home=_home, create=True))
_servers = {who: build_server(_ws, principal=who) for who in (None, "reader", "apireader")}


def check(result, name: str) -> None:
    if not result.is_error:
        assert isinstance(result.structured_content, dict)
        return
    text = result.content[0].text
    kind = text.split(":", 1)[0]
    if name in TOOLS:
        assert kind in OUR_ERRORS, text[:300]
        assert result.structured_content["error"]["type"] == kind
    assert "Traceback" not in text and len(text) < 5000


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(who=st.sampled_from(sorted(_servers, key=str)), calls=st.lists(
    st.tuples(tool_names, st.one_of(arguments, plausible)), min_size=1, max_size=3))
def test_fuzzed_arguments_give_results_or_tool_errors(who, calls):
    async def main():
        async with Client(_servers[who]) as client:
            for name, args in calls:
                check(await client.call_tool(name, args), name)
            alive = await client.call_tool("list_knowledge_packs", {})
            assert not alive.is_error and alive.structured_content["packs"]

    anyio.run(main)
