"""The web console's destructive forms over HTTP (Starlette's test client, the real app, a real SQLite workspace):
erase offers "mentions" as the CLI and Python do; erase and forget (a memory, a conversation, a user) each take a
confirmation step that changes nothing; an erasure's receipt is a page of its own reached by a redirect, so a
reload shows it again and erases nothing."""
from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from agentcontext import AgentMemory, ContextGraph, VectorStore, access
from agentcontext.web import create_app


@pytest.fixture
def site(ws):
    ContextGraph(workspace=ws).add_node("customer-4471", "customer", properties={"name": "Jane Roe"})
    memory = AgentMemory(vector_store=VectorStore(workspace=ws), namespace="default")
    made = {"linked": memory.store("Refund asked", metadata={"entities": ["customer-4471"]}),
            "named": memory.store("Jane Roe called about her card"),
            "chat": memory.store("Hello there", conversation_id="c1", user_id="bob"),
            "other": memory.store("Lunch is at noon")}
    token = access.create_token(ws, "owner")["token"]
    client = TestClient(create_app(ws, allowed_hosts=["testserver"]))
    assert client.post("/login", data={"token": token, "next": "/memory"}, follow_redirects=False).status_code == 303
    return ws, client, made


def _csrf(client) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', client.get("/memory").text).group(1)


def _erasures(ws) -> list[dict]:
    return [r for r in ws.store.audit() if r["action"] == "erase_entity"]


def test_the_erase_form_offers_mentions_and_asks_before_erasing(site):
    ws, client, made = site
    page = client.get("/memory").text
    form = page[page.index('id="erase-form"'):]
    assert 'name="mentions"' in form[:form.index("</form>")]
    csrf = _csrf(client)
    asked = client.post("/memory/erase", data={"csrf": csrf, "entity": "customer-4471", "reason": "GDPR",
                                                "mentions": "on"}, follow_redirects=False)
    assert asked.status_code == 200 and 'id="confirm-form"' in asked.text and "mention" in asked.text
    assert ws.store.get_node(made["linked"]) is not None and _erasures(ws) == []  # nothing changed yet
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', asked.text))
    assert fields["confirmed"] == "yes" and fields["mentions"] == "on" and fields["entity"] == "customer-4471"
    done = client.post("/memory/erase", data=fields, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"].startswith("/memory/receipt?")
    receipt = client.get(done.headers["location"])
    assert receipt.status_code == 200 and "Complete" in receipt.text and made["named"] in receipt.text
    assert "erased" in receipt.text[receipt.text.index('id="receipt-mentions"'):]
    assert ws.store.get_node(made["linked"]) is None and ws.store.get_node(made["named"]) is None  # mentions too
    again = client.get(done.headers["location"])  # a reload: the same receipt, no second erasure
    assert again.status_code == 200 and len(_erasures(ws)) == 1
    assert ws.store.get_node(made["other"]) is not None


def test_without_mentions_they_are_kept_and_the_confirmation_says_so(site):
    ws, client, made = site
    asked = client.post("/memory/erase", data={"csrf": _csrf(client), "entity": "customer-4471"})
    assert "listed and kept" in asked.text and 'name="mentions"' not in asked.text
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', asked.text))
    client.post("/memory/erase", data=fields)
    assert ws.store.get_node(made["linked"]) is None and ws.store.get_node(made["named"]) is not None


@pytest.mark.parametrize("field", ["memory_id", "conversation", "user"])
def test_forget_asks_first_then_forgets(site, field):
    ws, client, made = site
    value = {"memory_id": made["chat"], "conversation": "c1", "user": "bob"}[field]
    asked = client.post("/memory/forget", data={"csrf": _csrf(client), field: value}, follow_redirects=False)
    assert asked.status_code == 200 and 'id="confirm-form"' in asked.text and value in asked.text
    assert ws.store.get_node(made["chat"]) is not None
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', asked.text))
    done = client.post("/memory/forget", data=fields, follow_redirects=False)
    assert done.status_code == 303 and "forgot+1+memories" in done.headers["location"]
    assert ws.store.get_node(made["chat"]) is None and ws.store.get_node(made["other"]) is not None


def test_a_receipt_page_for_no_erasure_is_not_found(site):
    _, client, _ = site
    assert client.get("/memory/receipt?entity=nobody").status_code == 404
