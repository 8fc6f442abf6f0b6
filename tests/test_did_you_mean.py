"""A selector or pack typo gets "did you mean" on every door (issue 26 section 4), naming only what the caller may
read; errors returned to MCP clients name what to call next as MCP tools, the CLI's as commands."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from agentcontext import access
from agentcontext.errors import NotFoundError
from agentcontext.knowledge import catalog, history, tools
from agentcontext.mcp_server import build_server

from .conftest import CLI
from .test_access import build_workspace
from .test_mcp import call, run


@pytest.fixture
def aws(ws):
    return build_workspace(ws)


def test_python_names_the_closest_docs_and_packs(aws):
    with pytest.raises(NotFoundError, match="did you mean guide") as caught:
        tools.read_knowledge_doc(aws, "lib:open", "guid")
    assert caught.value.data["did_you_mean"] == ["guide"]
    for call_ in (lambda: tools.list_knowledge_neighbors(aws, "lib:open", "basic"),
                  lambda: history.history(aws, "lib:open", "basic"),
                  lambda: catalog.doc_links(aws, "lib:open", "basic")):
        with pytest.raises(NotFoundError, match="did you mean basics"):
            call_()
    with pytest.raises(NotFoundError, match="did you mean lib:open") as caught:
        tools.read_knowledge_doc(aws, "lib:opne", "guide")
    assert "list_knowledge_packs()" in str(caught.value)


def test_suggestions_never_name_what_the_caller_may_not_read(aws):
    with pytest.raises(NotFoundError) as caught:  # api.* is readable to apireader, core.secret is not
        tools.read_knowledge_doc(aws, "lib:eng", "api.secrets", principal="apireader")
    assert "did you mean" not in str(caught.value)  # core.secret is the closest, and unreadable
    with pytest.raises(NotFoundError, match="did you mean api.public"):
        tools.read_knowledge_doc(aws, "lib:eng", "api.publik", principal="apireader")
    with pytest.raises(NotFoundError, match="did you mean core.secret"):  # the owner sees it
        tools.read_knowledge_doc(aws, "lib:eng", "core.secrets")
    access.grant(aws, "reader", "lib:opne", "read")  # may look for lib:opne, may not see lib:secret
    with pytest.raises(NotFoundError) as caught:
        tools.read_knowledge_doc(aws, "lib:opne", "guide", principal="reader")
    assert "did you mean lib:open" in str(caught.value) and "lib:secret" not in str(caught.value)


def test_cli_says_did_you_mean_and_names_commands(aws, tmp_path):
    env = {**os.environ, "AGENTCONTEXT_HOME": str(tmp_path / ".agentcontext")}
    doc = subprocess.run([*CLI, "read", "lib:open", "guid", "--json"], capture_output=True, text=True, env=env,
                         timeout=120)
    error = json.loads(doc.stdout)["error"]
    assert doc.returncode == 1 and error["type"] == "NotFoundError" and error["did_you_mean"] == ["guide"]
    assert "`agentcontext search PACK QUERY` finds selectors" in error["message"]
    pack = subprocess.run([*CLI, "read", "lib:opne", "guide"], capture_output=True, text=True, env=env, timeout=120)
    assert "did you mean lib:open" in pack.stderr and "`agentcontext pack list`" in pack.stderr


def test_mcp_errors_name_tools_not_commands(aws):
    async def script(client):
        return (await call(client, "read_knowledge_doc", {"pack": "lib:open", "selector": "guid"}),
                await call(client, "read_knowledge_doc", {"pack": "lib:opne", "selector": "guide"}),
                await call(client, "flash_knowledge", {"pack": "lib:open", "selectors": ["guide"],
                                                       "budget_tokens": 1}))

    doc, pack, flash = run(build_server(aws), script)
    assert "did you mean guide" in doc[1]["error"]["message"]
    assert "the search_knowledge tool finds selectors" in doc[1]["error"]["message"]
    message = pack[1]["error"]["message"]
    assert "did you mean lib:open" in message and "the list_knowledge_packs tool" in message
    assert "agentcontext " not in message and "()" not in message
    assert flash[1]["error"]["type"] == "BudgetExceededError"  # parameters stay tool arguments (test_cli_habits)
    assert "degrade='summaries'" in flash[1]["error"]["message"] and "--degrade" not in flash[1]["error"]["message"]


def test_the_web_console_says_did_you_mean_too(aws):
    from agentcontext.web import create_app

    from .test_web_security import login

    client, _ = login(create_app(aws, allowed_hosts=["testserver"]), access.create_token(aws, "reader")["token"])
    page = client.get("/packs/lib:open/docs/guid")
    assert page.status_code == 404 and "Did you mean guide?" in page.text
    assert "Did you mean" not in client.get("/packs/lib:secret/docs/salarie").text  # unreadable: no suggestion
