"""The graph explorer (/graph) and the Ask page (/ask) over HTTP, in process (Starlette's test client over the
real app and a real SQLite workspace): the neighbourhood with edge types and validity now and at a date, a
node's panel, filters, what a principal without the grant sees (404, nothing of a hidden graph), the cited
context with scores, signals and hops, and the grounded answer from the local scripted LLM server."""
from __future__ import annotations

import json
import re

import pytest
from starlette.testclient import TestClient

from agentcontext import access
from agentcontext.graph.context_graph import workspace_graph
from agentcontext.knowledge import packs
from agentcontext.web import create_app
from agentcontext.web.layout import label_width, layered
from tests.conftest import PACKS
from tests.llm_server import ScriptedServer, openai_reply


@pytest.fixture
def site(ws):
    graph = workspace_graph(ws)
    graph.add_node("alice", "person", "Alice Liddell, engineer", properties={"name": "Alice"})
    graph.add_node("acme", "company", "Acme Corporation", properties={"name": "Acme"})
    graph.add_node("bob", "person", "Bob Builder, manager", properties={"name": "Bob"})
    graph.add_edge("alice", "acme", "works_at", valid_from="2020-01-01", valid_until="2024-01-01")
    graph.add_edge("bob", "acme", "works_at", valid_from="2021-06-01")
    graph.add_edge("alice", "bob", "knows")
    hr = workspace_graph(ws, name="hr")
    hr.add_node("salary_alice", "salary", "Alice earns 99k, a hidden figure")
    hr.add_edge("salary_alice", "salary_alice", "self")
    packs.install_folder(ws, PACKS / "semdag", defer_embeddings=True)
    reader = access.create_token(ws, "reader")["token"]
    access.grant(ws, "reader", "graph:default", "read")
    access.grant(ws, "reader", "lib:semdag", "read")
    stranger = access.create_token(ws, "stranger")["token"]
    app = create_app(ws, allowed_hosts=["testserver"])
    return ws, app, reader, stranger


def client_for(app, token=None):
    client = TestClient(app)
    token = token or app.state.console.sessions.launch_token
    client.get(f"/login?launch={token}") if token == app.state.console.sessions.launch_token else \
        client.post("/login", data={"token": token, "next": "/graph"})
    return client


def test_the_explorer_draws_a_neighbourhood_with_edge_types_validity_and_analytics(site):
    _, app, _, _ = site
    owner = client_for(app)
    page = owner.get("/graph?node=alice&hops=2")
    assert page.status_code == 200
    text = page.text
    assert 'id="graph"' in text and 'role="region"' in text
    drawing = re.search(r'<script id="graph-data" type="application/json">(.*?)</script>', text).group(1)
    assert '"id":"acme"' in drawing and '"id":"bob"' in drawing and '"size"' in drawing and '"color"' in drawing
    table = text.split('id="edge-table"')[1]
    assert "works_at" in table and "knows" in table
    # alice worked at acme until 2024: that edge is not valid now, bob's is
    rows = re.findall(r"<tr><td><a[^>]*>(\w+)</a></td><td>(\w+)</td>.*?<td>(yes|no)</td></tr>", table, re.S)
    assert ("alice", "works_at", "no") in rows and ("bob", "works_at", "yes") in rows and ("alice", "knows", "yes") \
        in rows
    assert "Alice Liddell" in text and 'id="versions"' in text


def test_the_explorer_searches_filters_and_goes_back_in_time(site):
    _, app, _, _ = site
    owner = client_for(app)
    found = owner.get("/graph?q=manager").text
    assert 'id="hits"' in found and "node=bob" in found
    only_people = owner.get("/graph?node=alice&type=person").text
    drawing = re.search(r'id="graph-data" type="application/json">(.*?)</script>', only_people).group(1)
    assert '"id":"bob"' in drawing and '"id":"acme"' not in drawing
    assert owner.get("/graph?node=alice&as_of=2015-01-01").status_code == 404  # alice did not exist yet
    assert owner.get("/graph?node=alice&as_of=not-a-date").status_code == 400
    start = owner.get("/graph").text  # no node chosen: the most central ones
    assert 'id="top"' in start and "node=acme" in start


def test_a_principal_sees_only_the_graphs_it_may_read(site):
    _, app, reader, stranger = site
    owner = client_for(app)
    assert "graph:hr" in owner.get("/graph").text
    assert "salary_alice" in owner.get("/graph?graph=hr&node=salary_alice").text
    as_reader = client_for(app, reader)
    listing = as_reader.get("/graph")
    assert listing.status_code == 200 and "graph:hr" not in listing.text and "salary" not in listing.text
    for url in ("/graph?graph=hr", "/graph?graph=hr&node=salary_alice", "/graph?node=graph:hr/salary_alice",
                "/graph?graph=nothing"):
        response = as_reader.get(url)
        assert response.status_code == 404, url
        assert "salary" not in response.text.lower() and "99k" not in response.text
    assert "99k" not in as_reader.get("/graph?q=earns").text
    as_stranger = client_for(app, stranger)
    assert as_stranger.get("/graph").status_code == 404
    assert as_stranger.get("/graph?node=alice").status_code == 404


def test_labels_of_a_row_never_overlap():
    labels = {f"n{i}": "a rather long label " + "x" * (i % 9) for i in range(50)}
    pos = layered(list(labels), [(f"n{i}", "n0") for i in range(1, 50)], labels=labels)
    boxes = [(pos[n][0] - label_width(t) / 2, pos[n][0] + label_width(t) / 2, pos[n][1]) for n, t in labels.items()]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[2] != b[2] or a[1] <= b[0] or b[1] <= a[0], (a, b)


def test_ask_shows_the_cited_context_with_scores_signals_and_hops(site, monkeypatch):
    monkeypatch.delenv("AGENTCONTEXT_LLM_BASE_URL", raising=False)
    _, app, _, _ = site
    owner = client_for(app)
    blank = owner.get("/ask").text
    assert "No model configured" in blank and 'name="max_hops"' in blank and 'name="min_score"' in blank
    page = owner.get("/ask?q=Alice+engineer&graph=1&max_hops=1&max_results=5").text
    assert 'id="sources"' in page and "Alice" in page
    assert re.search(r"\d\.\d{3}</td>", page)  # a score
    assert "=" in page.split('id="sources"')[1]  # signals
    assert owner.get("/ask?q=x&min_score=3").status_code == 400


def test_ask_answers_with_the_configured_model_and_links_its_citations(site, monkeypatch):
    _, app, _, _ = site
    with ScriptedServer([openai_reply("Alice is an engineer [1].")]) as server:
        monkeypatch.setenv("AGENTCONTEXT_LLM_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("AGENTCONTEXT_LLM_MODEL", "scripted-model")
        monkeypatch.setenv("AGENTCONTEXT_LLM_API_KEY", "sk-very-secret-key")
        owner = client_for(app)
        form = owner.get("/ask").text
        assert "scripted-model" in form and "sk-very-secret-key" not in form
        page = owner.get("/ask?q=Alice+engineer&graph=1&answer=1").text
    assert "Alice is an engineer [1]." in page and 'href="#source-1"' in page and 'id="source-1"' in page
    assert "confidence" in page and "sk-very-secret-key" not in page
    assert server.requests[0].headers["authorization"] == "Bearer sk-very-secret-key"


def test_a_reader_without_the_graph_grant_gets_no_graph_source(site):
    _, app, _, stranger = site
    page = client_for(app, stranger).get("/ask?q=Alice+engineer").text
    assert "Alice Liddell" not in page and "99k" not in page


def test_a_node_keeps_its_place_when_the_view_grows(site):
    ws, app, _, _ = site
    graph = workspace_graph(ws)
    graph.add_node("carol", "person", "Carol, Bob's report")
    graph.add_node("dave", "person", "Dave, Carol's report")
    graph.add_edge("carol", "bob", "reports_to")
    graph.add_edge("dave", "carol", "reports_to")
    owner = client_for(app)

    def positions(hops):
        page = owner.get(f"/graph?node=alice&hops={hops}").text
        drawing = re.search(r'id="graph-data" type="application/json">(.*?)</script>', page).group(1)
        return {n["id"]: (n["x"], n["y"]) for n in json.loads(drawing)["nodes"]}

    one, two, three = positions(1), positions(2), positions(3)
    assert set(one) < set(two) < set(three)
    assert all(two[n] == p for n, p in one.items()) and all(three[n] == p for n, p in two.items())


def test_the_home_page_counts_what_the_principal_may_read(site):
    ws, app, reader, stranger = site
    packs.create_pack(ws, "secret")
    packs.put_doc(ws, "lib:secret", "salaries", title="Salaries", content="bands", related=[
        {"type": "depends_on", "target": "nowhere"}], embed=False)
    home = client_for(app).get("/").text
    assert 'id="store"' in home and "sqlite" in home.lower() and "schema" in home
    assert "lib:secret" in home.split('id="lint"')[1] and "missing targets" in home  # lint across packs
    assert 'id="recent"' in home
    as_reader = client_for(app, reader).get("/").text
    assert 'id="store"' not in as_reader and "lib:secret" not in as_reader
    assert "nodes" in as_reader.split('id="counts"')[1]  # it reads graph:default
    as_stranger = client_for(app, stranger).get("/").text
    assert "not yours to read" in as_stranger and "salaries" not in as_stranger.lower()


def _csrf(client, path):
    return re.search(r'name="csrf" value="([^"]+)"', client.get(path).text).group(1)


def test_tokens_and_grants_from_the_browser_with_confirmation_and_a_result_page(site):
    ws, app, reader, _ = site
    owner = client_for(app)
    csrf = _csrf(owner, "/rights")
    made = owner.post("/rights/tokens", data={"csrf": csrf, "principal": "carol", "note": "laptop"})
    assert made.status_code == 200 and "shown this once" in made.text
    token = re.search(r'id="new-token" readonly value="([^"]+)"', made.text).group(1)
    assert access.principal_for_token(ws, token) == "carol"
    listing = owner.get("/rights").text
    assert token not in listing and "laptop" in listing
    granted = owner.post("/rights/grants", data={"csrf": csrf, "principal": "carol", "pattern": "lib:semdag",
                                                 "level": "read"})
    assert granted.status_code == 200 and "granted read on lib:semdag to carol" in granted.text
    carol = client_for(app, token)
    assert "lib:semdag" in carol.get("/packs").text
    confirm = owner.get("/rights/grants/revoke?principal=carol&pattern=lib:semdag")
    assert 'id="confirm-form"' in confirm.text and "Revoke carol" in confirm.text
    assert any(g["principal"] == "carol" for g in access.grants(ws))  # asking changed nothing
    asked = owner.post("/rights/grants/revoke", data={"csrf": csrf, "principal": "carol", "pattern": "lib:semdag"})
    assert 'id="confirm-form"' in asked.text and any(g["principal"] == "carol" for g in access.grants(ws))
    done = owner.post("/rights/grants/revoke", data={"csrf": csrf, "principal": "carol", "pattern": "lib:semdag",
                                                     "confirmed": "yes"})
    assert "revoked." in done.text and not any(g["principal"] == "carol" for g in access.grants(ws))
    tid = next(t["id"] for t in access.tokens(ws) if t["principal"] == "carol")
    assert "Revoke token" in owner.get(f"/rights/tokens/{tid}/revoke").text
    gone = owner.post(f"/rights/tokens/{tid}/revoke", data={"csrf": csrf, "confirmed": "yes"})
    assert "is revoked" in gone.text and access.principal_for_token(ws, token) is None
    assert carol.get("/packs", follow_redirects=False).status_code == 303  # its session ended
    assert owner.post("/rights/grants/revoke", data={"principal": "x", "pattern": "y"}).status_code == 403  # no csrf


def test_a_reader_cannot_issue_tokens_or_grant(site):
    ws, app, reader, _ = site
    client = client_for(app, reader)
    page = client.get("/rights").text
    assert 'id="tokens"' not in page and "graph:default" in page and "stranger" not in page
    csrf = _csrf(client, "/rights")
    assert client.post("/rights/tokens", data={"csrf": csrf, "principal": "mallory"}).status_code == 403
    assert client.post("/rights/grants", data={"csrf": csrf, "principal": "reader", "pattern": "*",
                                               "level": "admin"}).status_code == 403
    assert client.get("/rights/tokens/abc/revoke").status_code == 403
    assert not any(t["principal"] == "mallory" for t in access.tokens(ws))


def _zip(folder, prefix="pack", evil=False):
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for file in folder.rglob("*"):
            if file.is_file():
                archive.write(file, f"{prefix}/{file.relative_to(folder)}")
        if evil:
            archive.writestr("../escaped.txt", "out")
    return buffer.getvalue()


def test_add_a_pack_as_a_zip_and_export_it(site, tmp_path):
    import io
    import zipfile

    ws, app, reader, _ = site
    owner = client_for(app)
    form = owner.get("/add-pack").text
    assert 'id="upload-form"' in form and 'id="path-form"' in form
    csrf = _csrf(owner, "/add-pack")
    done = owner.post("/add-pack", data={"csrf": csrf},
                      files={"archive": ("flat.zip", _zip(PACKS / "semdag"), "application/zip")})
    assert done.status_code == 200 and 'id="installed"' in done.text and "lib:semdag" in done.text
    exported = owner.get("/packs/lib:semdag/export.zip")
    assert exported.status_code == 200 and exported.headers["content-type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(exported.content)).namelist()
    assert any(n.endswith(".md") for n in names)
    evil = owner.post("/add-pack", data={"csrf": csrf},
                      files={"archive": ("evil.zip", _zip(PACKS / "semdag", evil=True), "application/zip")})
    assert evil.status_code == 400 and "unsafe member" in evil.text
    assert not (tmp_path.parent / "escaped.txt").exists()
    assert owner.post("/add-pack", data={"csrf": csrf},
                      files={"archive": ("x.zip", b"not a zip", "application/zip")}).status_code == 400


def test_a_reader_cannot_install_or_use_a_server_path_or_export_what_it_cannot_read(site):
    ws, app, reader, stranger = site
    client = client_for(app, reader)
    assert 'id="path-form"' not in client.get("/add-pack").text
    csrf = _csrf(client, "/add-pack")
    refused = client.post("/add-pack", data={"csrf": csrf},
                          files={"archive": ("p.zip", _zip(PACKS / "semdag"), "application/zip")})
    assert refused.status_code == 403  # read on lib:semdag is not write
    assert client.post("/add-pack", data={"csrf": csrf, "path": str(PACKS / "semdag")}).status_code == 400
    assert client_for(app, stranger).get("/packs/lib:semdag/export.zip").status_code == 404
