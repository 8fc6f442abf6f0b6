"""The web console's security model, in process (Starlette's test client over the real app and a real
SQLite workspace): login, cookie flags, CSRF, Host and Origin checks, what a reader sees, the audit log,
sanitised Markdown, and the host rule of `serve web`. The same in a real browser: test_web_browser.py."""
from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from agentcontext import access
from agentcontext.errors import ValidationError
from agentcontext.knowledge import packs
from agentcontext.web import allowed_hosts, check_host, create_app
from tests.conftest import PACKS


@pytest.fixture
def console(ws):
    packs.install_folder(ws, PACKS / "semdag", defer_embeddings=True)
    packs.create_pack(ws, "secret")
    packs.put_doc(ws, "lib:secret", "salaries", title="Salaries", content="<script>alert(1)</script>\n\n"
                  "[click](javascript:alert(2)) and [fine](https://example.org)", embed=False)
    reader = access.create_token(ws, "reader")["token"]
    access.grant(ws, "reader", "lib:semdag", "read")
    app = create_app(ws, allowed_hosts=["testserver"])
    return ws, app, reader


def login(app, token):
    client = TestClient(app)
    response = client.post("/login", data={"token": token, "next": "/packs"}, follow_redirects=False)
    return client, response


def csrf_of(client, path="/packs"):
    return re.search(r'name="csrf" value="([^"]+)"', client.get(path).text).group(1)


def test_login_sets_a_strict_httponly_cookie_and_audits(console):
    ws, app, reader = console
    client, response = login(app, reader)
    assert response.status_code == 303
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert client.get("/packs").status_code == 200
    bad, response = login(app, "actx_not-a-token")
    assert response.status_code == 401 and bad.get("/packs", follow_redirects=False).status_code == 303
    actions = [(r["principal"], r["action"], r["outcome"]) for r in ws.store.audit()]
    assert ("reader", "web.login", "ok") in actions and ("anonymous", "web.login", "denied") in actions


def test_pages_need_a_session(console):
    _, app, _ = console
    anonymous = TestClient(app)
    response = anonymous.get("/packs/lib:semdag", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].startswith("/login?next=")
    assert anonymous.post("/memory/forget", data={"user": "x"}).status_code == 401
    assert "Content-Security-Policy" in anonymous.get("/login").headers


def test_launch_link_logs_in_as_the_starting_principal_and_leaves_no_token_in_the_url(console):
    _, app, _ = console
    client = TestClient(app)
    response = client.get(f"/login?launch={app.state.console.sessions.launch_token}", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/packs"
    assert ">owner<" in client.get("/packs").text


def test_a_reader_sees_what_the_cli_shows_and_denied_urls_are_404(console):
    ws, app, reader = console
    client, _ = login(app, reader)
    listing = client.get("/packs").text
    assert "lib:semdag" in listing and "lib:secret" not in listing
    for url in ("/packs/lib:secret", "/packs/lib:secret/graph", "/packs/lib:secret/docs/salaries",
                "/packs/lib:secret/flash?targets=salaries", "/packs/lib:nothing"):
        response = client.get(url)
        assert response.status_code == 404, url
        assert "salaries" not in response.text.lower()
    assert client.get("/packs/lib:secret").text == client.get("/packs/lib:nothing").text  # nothing told apart
    denied = [r for r in ws.store.audit(principal="reader") if r["outcome"] == "denied"]
    assert {r["target"].split("/")[0] for r in denied} >= {"lib:secret", "lib:nothing"}


def test_writes_by_a_reader_are_refused_and_audited(console):
    ws, app, reader = console
    client, _ = login(app, reader)
    token = csrf_of(client)
    response = client.post("/packs/lib:semdag/docs/identity/edit", data={
        "csrf": token, "title": "Hijacked", "summary": "", "kind": "", "tags": "", "related": "", "content": "x",
        "expected_version": "1"})
    assert response.status_code == 403
    assert ws.store.get_node("lib:semdag/identity").title == "Identity"
    assert ws.store.audit(principal="reader")[-1]["outcome"] == "denied"


def test_a_post_without_the_csrf_token_is_refused_and_audited(console):
    ws, app, _ = console
    client = TestClient(app)
    client.get(f"/login?launch={app.state.console.sessions.launch_token}")
    for data in ({}, {"csrf": "forged"}):
        response = client.post("/packs/lib:semdag/lint/drop-edge",
                               data={**data, "selector": "membership", "target": "identity"})
        assert response.status_code == 403 and "Form refused" in response.text
    assert any(e.type == "depends_on" and e.dst == "lib:semdag/identity"
               for e in ws.store.edges(src="lib:semdag/membership"))
    assert [r["action"] for r in ws.store.audit(principal="owner")][-2:] == ["web.csrf", "web.csrf"]
    token = csrf_of(client)
    assert client.post("/packs/lib:semdag/lint/drop-edge", data={"csrf": token, "selector": "membership",
                                                                 "target": "identity"}).status_code == 200
    assert not any(e.dst == "lib:semdag/identity" for e in ws.store.edges(src="lib:semdag/membership"))


def test_foreign_host_and_cross_site_origin_are_refused(console):
    _, app, reader = console
    client, _ = login(app, reader)
    assert client.get("/packs", headers={"host": "attacker.example"}).status_code == 421  # DNS rebinding
    token = csrf_of(client)
    response = client.post("/logout", data={"csrf": token}, headers={"origin": "http://attacker.example"})
    assert response.status_code == 403
    assert client.get("/packs").status_code == 200  # still logged in


def test_revoking_the_token_ends_its_sessions(console):
    ws, app, _ = console
    issued = access.create_token(ws, "temp")
    access.grant(ws, "temp", "lib:semdag", "read")
    client, _ = login(app, issued["token"])
    assert client.get("/packs").status_code == 200
    access.revoke_token(ws, issued["id"])
    assert client.get("/packs", follow_redirects=False).status_code == 303


def test_logout_ends_the_session(console):
    _, app, reader = console
    client, _ = login(app, reader)
    assert client.post("/logout", data={"csrf": csrf_of(client)}, follow_redirects=False).status_code == 303
    assert client.get("/packs", follow_redirects=False).status_code == 303


def test_markdown_is_sanitised(console):
    _, app, _ = console
    client = TestClient(app)
    client.get(f"/login?launch={app.state.console.sessions.launch_token}")
    body = client.get("/packs/lib:secret/docs/salaries").text
    assert "<script>alert(1)" not in body and "&lt;script&gt;alert(1)" in body
    assert 'href="javascript:' not in body and 'href="https://example.org"' in body


def test_serve_web_refuses_other_hosts_until_tokens_exist(ws):
    check_host(ws, "127.0.0.1")
    check_host(ws, "::1")
    with pytest.raises(ValidationError, match="token create"):
        check_host(ws, "192.0.2.10")
    access.create_token(ws, "someone")
    check_host(ws, "192.0.2.10")
    assert "127.0.0.1:8766" in allowed_hosts("127.0.0.1", 8766) and "localhost:8766" in allowed_hosts("localhost", 8766)


def test_the_consoles_doc_forms_run_the_declared_create_and_update_operations(console):
    """New doc, lint's stub and the edit form run create_knowledge_doc / update_knowledge_doc (parsed by their
    input models): a doc created twice is a conflict, a field the model refuses is a 400 naming it, nothing
    written; a reader is refused and audited."""
    ws, app, reader = console
    writer = access.create_token(ws, "writer")["token"]
    access.grant(ws, "writer", "lib:secret", "write")
    client, _ = login(app, writer)
    token = csrf_of(client)
    made = client.post("/packs/lib:secret/new", data={"csrf": token, "selector": "bonuses", "title": " "},
                       follow_redirects=False)
    assert made.status_code == 303 and ws.store.get_node("lib:secret/bonuses").title == "bonuses"
    assert client.post("/packs/lib:secret/new", data={"csrf": token, "selector": "bonuses"}).status_code == 409
    stub = client.post("/packs/lib:secret/lint/stub", data={"csrf": token, "target": "perks", "needed_by": "bonuses"},
                       follow_redirects=False)
    assert stub.status_code == 303 and ws.store.get_node("lib:secret/perks").kind == "stub"
    bad = client.post("/packs/lib:secret/docs/bonuses/edit", data={
        "csrf": token, "title": "Bonuses", "summary": "", "kind": "", "tags": "", "content": "paid in May",
        "related": "t" * 600 + " depends_on", "expected_version": "1"})
    assert bad.status_code == 400 and ws.store.get_node("lib:secret/bonuses").version == 1
    saved = client.post("/packs/lib:secret/docs/bonuses/edit", data={
        "csrf": token, "title": "Bonuses", "summary": "", "kind": "", "tags": "pay", "content": "paid in May",
        "related": "", "expected_version": "1"}, follow_redirects=False)
    doc = ws.store.get_node("lib:secret/bonuses")
    assert saved.status_code == 303 and (doc.title, doc.content, doc.tags, doc.version) == (
        "Bonuses", "paid in May", ["pay"], 2)
    reading, _ = login(app, reader)
    refused = reading.post("/packs/lib:semdag/new", data={"csrf": csrf_of(reading), "selector": "x"})
    assert refused.status_code == 403 and ws.store.get_node("lib:semdag/x") is None
    assert ws.store.audit(principal="reader")[-1]["outcome"] == "denied"


def test_a_reindex_post_asking_for_place_glosses_is_the_owners(console):
    """The console's reindex form runs the declared reindex_knowledge; a POST naming ``places`` (the form offers no
    such field) glosses every memory namespace, so only the owner's is run: a reader's is a 403, audited, and nothing
    is glossed; the owner's says how many memories were glossed."""
    ws, app, reader = console
    client, _ = login(app, reader)
    response = client.post("/reindex", data={"csrf": csrf_of(client), "places": "true"})
    assert response.status_code == 403
    assert [r["outcome"] for r in access.audit_log(ws, None, action="memory.places")] == ["denied"]
    owner = TestClient(app)
    owner.get(f"/login?launch={app.state.console.sessions.launch_token}")
    done = owner.post("/reindex", data={"csrf": csrf_of(owner), "pack": "lib:secret"})
    assert done.status_code == 200 and "Memories given their place glosses" not in done.text
    bad = owner.post("/reindex", data={"csrf": csrf_of(owner), "pack": "lib:secret", "places": "true"})
    assert bad.status_code == 400 and "--places glosses the memories of the whole workspace" in bad.text
    glossed = owner.post("/reindex", data={"csrf": csrf_of(owner), "places": "true"})
    assert glossed.status_code == 200 and "Memories given their place glosses: 0." in glossed.text
    assert [r["outcome"] for r in access.audit_log(ws, None, action="memory.places")] == ["denied", "ok"]
