"""The web console in a real browser: Debian's headless Chromium driven by Selenium, against
`agentcontext serve web` started as a subprocess on a real SQLite workspace. One browser and one server for
the whole module; every page visited is screenshotted into build/screenshots/ (or $AGENTCONTEXT_SCREENSHOTS).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from agentcontext import access
from agentcontext.decisions.models import Policy
from agentcontext.decisions.policy import PolicyEngine
from agentcontext.decisions.recorder import DecisionRecorder
from agentcontext.graph.context_graph import workspace_graph
from agentcontext.knowledge import packs
from agentcontext.memory import AgentMemory
from agentcontext.workspace import Workspace
from tests.conftest import CLI, PACKS, ROOT
from tests.llm_server import ScriptedServer, openai_reply

pytestmark = pytest.mark.browser
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
if not (CHROMIUM and DRIVER):
    if os.environ.get("CI"):
        raise RuntimeError("CI must install chromium and chromium-driver (see .ci/run)")
    pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
                allow_module_level=True)

from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

AXE = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"
SHOTS = Path(os.environ.get("AGENTCONTEXT_SCREENSHOTS") or ROOT / "build" / "screenshots")
DOCS = "pkg:agentcontext.agentcontext.docs.guide"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000"]


def _vector(rng: np.random.Generator) -> list[float]:
    v = rng.standard_normal(384).astype(np.float32)
    return (v / np.linalg.norm(v)).tolist()


def build(home: Path) -> dict[str, str]:
    """Packs (lib:semdag, a secret lib: pack, the docs pkg: pack), memories, decisions, a reader token."""
    ws = Workspace.open(home=home, create=True)
    packs.install_folder(ws, PACKS / "semdag", defer_embeddings=True)
    packs.install_folder(ws, PACKS / "agentcontext-docs", defer_embeddings=True)
    packs.create_pack(ws, "secret")
    packs.put_doc(ws, "lib:secret", "salaries", title="Salaries", content="Secret bands.", embed=False)
    rng = np.random.default_rng(7)
    AgentMemory(workspace=ws, max_memory_size=None).batch_store([
        {"content": "Alice prefers tea in the morning", "conversation_id": "c1", "user_id": "alice",
         "metadata": {"entities": ["alice"]}, "vector": _vector(rng)},
        {"content": "Bob prefers coffee", "conversation_id": "c1", "user_id": "bob",
         "metadata": {"entities": ["bob"]}, "vector": _vector(rng)}])
    graph = workspace_graph(ws)
    recorder = DecisionRecorder(graph, actor=ws.owner)
    cause, effect = recorder.record_decisions([  # vectors supplied: no model to load in the test process
        {"decision_id": "dec_cause", "category": "access", "scenario": "Invitations must expire",
         "reasoning": "Leaked links", "outcome": "expire_7_days", "confidence": 0.9,
         "reasoning_embedding": _vector(rng)},
        {"decision_id": "dec_effect", "category": "access", "scenario": "Remind invitees before expiry",
         "reasoning": "Some missed it", "outcome": "remind", "confidence": 0.6, "caused_by": ["dec_cause"],
         "reasoning_embedding": _vector(rng)}])
    PolicyEngine(graph_store=graph, actor=ws.owner).add_policy(
        Policy("review", "Access review", "Confidence at least 0.8", {"min_confidence": 0.8}, "access"))
    explorer_graphs(ws)
    reader = access.create_token(ws, "reader")["token"]
    access.grant(ws, "reader", "lib:semdag", "read")
    access.grant(ws, "reader", "graph:default", "read")
    ws.close()
    return {"reader": reader, "cause": cause, "effect": effect}


def explorer_graphs(ws: Workspace) -> None:
    """graph:default gets a team of 49 (a 50-node neighbourhood), graph:hr a node the reader may not read,
    graph:big a 2,000-node tree (the explorer's largest view)."""
    graph = workspace_graph(ws)
    graph.add_nodes([{"node_id": "hub", "node_type": "team", "content": "The platform team",
                      "properties": {"name": "Platform team"}}]
                    + [{"node_id": f"member_{i:02d}", "node_type": "person", "content": f"Engineer {i} of the team",
                        "properties": {"name": f"Engineer number {i:02d}" + " of platform" * (i % 3)}}
                       for i in range(49)])
    graph.add_edges([{"source_id": f"member_{i:02d}", "target_id": "hub", "edge_type": "member_of"}
                     for i in range(49)])
    workspace_graph(ws, name="hr").add_node("salary_bands", "salary", "Secret salary bands for engineers")
    big = workspace_graph(ws, name="big")
    big.add_nodes([{"node_id": f"n{i}", "node_type": "thing", "content": f"Thing {i}"} for i in range(2000)])
    big.add_edges([{"source_id": f"n{(i - 1) // 45}", "target_id": f"n{i}", "edge_type": "contains"}
                   for i in range(1, 2000)])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    home = tmp_path_factory.mktemp("web") / ".agentcontext"
    facts = build(home)
    port = free_port()
    llm = ScriptedServer(lambda request: openai_reply("The platform team has 49 engineers [1]."))
    llm.__enter__()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "AGENTCONTEXT_LLM_BASE_URL": llm.url + "/v1",
           "AGENTCONTEXT_LLM_MODEL": "scripted-model", "AGENTCONTEXT_LLM_API_KEY": "sk-browser-secret"}
    server = subprocess.Popen([*CLI, "--home", str(home), "serve", "web", "--port", str(port), "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = server.stdout.readline()
        if not line:
            raise RuntimeError("serve web did not start: " + server.stderr.read())
        started = json.loads(line)
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        profile = tempfile.mkdtemp(prefix="actx-chromium-")
        for flag in [*FLAGS, f"--user-data-dir={profile}"]:
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(DRIVER), options=options)
        driver.set_page_load_timeout(30)
        SHOTS.mkdir(parents=True, exist_ok=True)
        yield {"driver": driver, "base": started["url"], "launch": started["login_url"], "home": home, **facts}
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    finally:
        llm.__exit__(None, None, None)
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


def shot(site, name: str) -> None:
    """A screenshot of the page (an artifact for reviewers, not an assertion): on a loaded machine the renderer
    can miss chromedriver's deadline for one (a TimeoutException from a fresh clone's suite at load ~3), so it is
    asked again before the test fails."""
    for attempt in range(3):
        try:
            site["driver"].save_screenshot(str(SHOTS / f"{name}.png"))
            return
        except TimeoutException:
            if attempt == 2:
                raise


def go(site, path: str, name: str | None = None):
    driver = site["driver"]
    driver.get(site["base"] + path)
    if name:
        shot(site, name)
    return driver


def as_owner(site):
    driver = site["driver"]
    driver.delete_all_cookies()
    driver.get(site["launch"])
    assert driver.find_element(By.ID, "principal").text == "owner"
    return driver


def click_and_wait(driver, element) -> None:
    """Click something that loads a new page, and wait until it has replaced the old one."""
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 15).until(lambda d: _stale(old) and d.execute_script("return document.readyState")
                                    == "complete")


def _stale(element) -> bool:
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    try:
        element.is_enabled()
        return False
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:  # Chromium's way of saying the same of a detached node
        if "does not belong to the document" in str(exc):
            return True
        raise


def text(driver, css: str) -> str:
    return driver.find_element(By.CSS_SELECTOR, css).text


def post_form(driver, action: str, fields: dict[str, str]) -> None:
    """Submit a form the page did not offer (what a forged or hand-made request would send)."""
    old = driver.find_element(By.TAG_NAME, "html")
    driver.execute_script("""
        const f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];
        for (const [k, v] of Object.entries(arguments[1])) {
          const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i); }
        document.body.appendChild(f); f.submit();""", action, fields)
    WebDriverWait(driver, 15).until(lambda d: _stale(old) and d.execute_script("return document.readyState")
                                    == "complete")


def test_log_in_with_a_token(site):
    driver = site["driver"]
    driver.delete_all_cookies()
    go(site, "/packs/lib:semdag")
    assert "/login" in driver.current_url
    shot(site, "login")
    driver.find_element(By.ID, "token").send_keys("actx_wrong")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/login'] button"))
    assert "unknown or was revoked" in text(driver, ".error")
    driver.find_element(By.ID, "token").send_keys(site["reader"])
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/login'] button"))
    assert driver.current_url.endswith("/packs/lib:semdag")  # back where the login began
    assert text(driver, "#principal") == "reader"
    cookie = driver.get_cookie("actx_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"


def test_open_a_pack(site):
    driver = as_owner(site)
    go(site, "/packs", "packs")
    click_and_wait(driver, driver.find_element(By.LINK_TEXT, "lib:semdag"))
    rows = driver.find_elements(By.CSS_SELECTOR, "#docs tbody tr")
    assert [r.find_element(By.TAG_NAME, "code").text for r in rows] == ["account", "identity", "invitations",
                                                                        "membership"]
    shot(site, "pack")
    click_and_wait(driver, driver.find_element(By.PARTIAL_LINK_TEXT, "title"))  # sort by title
    assert driver.find_elements(By.CSS_SELECTOR, "#docs tbody tr code")[0].text == "account"
    go(site, f"/packs/{DOCS}?tag=intent:concept", "pack-filtered")


def test_follow_an_edge_in_the_graph_view(site):
    driver = as_owner(site)
    go(site, "/packs/lib:semdag/graph")
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return window.__graphRendered"))
    shot(site, "graph")
    box = driver.find_element(By.ID, "graph")
    x, y = driver.execute_script("""
        const g = window.consoleGraph, p = g.getPositions(['invitations', 'membership']);
        const dom = g.canvasToDOM({x: (p.invitations.x + p.membership.x) / 2,
                                   y: (p.invitations.y + p.membership.y) / 2});
        return [dom.x, dom.y];""")
    size = box.size
    ActionChains(driver).move_to_element_with_offset(box, int(x - size["width"] / 2),
                                                      int(y - size["height"] / 2)).click().perform()
    WebDriverWait(driver, 10).until(lambda d: "/docs/membership" in d.current_url)
    assert driver.find_element(By.TAG_NAME, "h1").text == "Membership"


def test_edit_a_doc_and_see_the_new_version_in_history_and_through_the_cli(site):
    driver = as_owner(site)
    go(site, "/packs/lib:semdag/docs/account")
    click_and_wait(driver, driver.find_element(By.ID, "edit-link"))
    shot(site, "edit")
    summary = driver.find_element(By.NAME, "summary")
    summary.clear()
    summary.send_keys("Edited in the browser")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#edit-form button[type=submit]"))
    assert "Saved: version 2" in text(driver, ".notice")
    assert text(driver, "#doc-version") == "2"
    history = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#history tbody tr")]
    assert history[0].startswith("v2") and history[-1].startswith("v1")
    shot(site, "doc")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#history button"))
    assert "+summary: Edited in the browser" in text(driver, "#diff")
    shot(site, "diff")
    cli = subprocess.run([*CLI, "--home", str(site["home"]), "read", "lib:semdag", "account", "--json"],
                         capture_output=True, text=True, timeout=60)
    doc = json.loads(cli.stdout)
    assert doc["version"] == 2 and doc["summary"] == "Edited in the browser"


def test_a_stale_edit_shows_the_conflict_and_loses_nothing(site):
    driver = as_owner(site)
    go(site, "/packs/lib:semdag/docs/membership/edit")
    other = Workspace.open(home=site["home"])  # someone else saves first
    packs.put_doc(other, "lib:semdag", "membership", content="Changed meanwhile by someone else.", embed=False)
    other.close()
    body = driver.find_element(By.NAME, "content")
    body.clear()
    body.send_keys("My careful edit.")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#edit-form button[type=submit]"))
    assert "Someone saved this doc" in text(driver, "#conflict")
    assert "Changed meanwhile by someone else." in text(driver, "#conflict-theirs")
    assert "My careful edit." in text(driver, "#conflict-yours")
    assert driver.find_element(By.NAME, "content").get_attribute("value") == "My careful edit."
    shot(site, "conflict")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#edit-form button[type=submit]"))  # save it on purpose
    assert "Saved: version 3" in text(driver, ".notice")
    assert "My careful edit." in text(driver, "#doc-body")


def test_editing_a_pkg_doc_is_refused(site):
    driver = as_owner(site)
    go(site, f"/packs/{DOCS}/docs/concepts.flash", "doc-pkg")
    assert "read-only" in text(driver, "#readonly-reason") and not driver.find_elements(By.ID, "edit-link")
    go(site, f"/packs/{DOCS}/docs/concepts.flash/edit")
    assert "read-only" in text(driver, "#readonly-reason")
    csrf = driver.find_element(By.CSS_SELECTOR, "form.who input[name=csrf]").get_attribute("value")
    post_form(driver, f"/packs/{DOCS}/docs/concepts.flash/edit",
              {"csrf": csrf, "title": "Defaced", "content": "x", "expected_version": "1"})
    assert text(driver, "h1") == "Read-only"
    ws = Workspace.open(home=site["home"])
    assert ws.store.get_node(f"{DOCS}/concepts.flash").title != "Defaced"
    assert ws.store.audit(principal="owner")[-1]["outcome"] == "denied"
    ws.close()


def test_a_reader_cannot_see_a_denied_pack_and_its_url_answers_404(site):
    driver = site["driver"]
    driver.delete_all_cookies()
    go(site, "/login")
    driver.find_element(By.ID, "token").send_keys(site["reader"])
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/login'] button"))
    listing = text(driver, "#packs")
    assert "lib:semdag" in listing and "lib:secret" not in listing and DOCS not in listing
    status = driver.execute_script("return fetch('/packs/lib:secret').then(r => r.status)")
    assert status == 404
    go(site, "/packs/lib:secret/docs/salaries", "denied-404")
    assert text(driver, "h1") == "Not found" and "Salaries" not in driver.page_source


def test_a_post_without_the_csrf_token_is_refused(site):
    driver = as_owner(site)
    go(site, "/packs/lib:semdag/lint")
    post_form(driver, "/packs/lib:semdag/lint/drop-edge", {"selector": "invitations", "target": "account"})
    assert text(driver, "h1") == "Form refused"
    ws = Workspace.open(home=site["home"])
    assert any(e.dst == "lib:semdag/account" for e in ws.store.edges(src="lib:semdag/invitations"))
    assert ws.store.audit(principal="owner")[-1]["action"] == "web.csrf"
    ws.close()


def test_lint_fix_drops_a_redundant_edge_in_one_click(site):
    driver = as_owner(site)
    go(site, "/packs/lib:semdag/lint", "lint")
    click_and_wait(driver, driver.find_element(By.XPATH, "//button[text()='Drop membership → identity']"))
    assert "dropped membership depends_on identity" in text(driver, ".notice")
    assert "Drop membership → identity" not in text(driver, "#lint-redundant")


def test_flash_preview_of_the_seed_example(site):
    driver = as_owner(site)
    go(site, "/packs/lib:semdag/flash")
    driver.find_element(By.CSS_SELECTOR, "input[name=targets][value=invitations]").click()
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#flash-form button"))
    order = [r.find_elements(By.TAG_NAME, "td")[1].find_element(By.TAG_NAME, "a").text
             for r in driver.find_elements(By.CSS_SELECTOR, "#flash-order tbody tr")]
    assert order == ["Identity", "Account", "Membership", "Invitations"]
    assert "invitations →" in text(driver, "#flash-order")  # the why-path
    assert "## Identity (identity)" in driver.find_element(By.ID, "bundle-text").get_attribute("value")
    shot(site, "flash")
    go(site, "/packs/lib:semdag/flash?targets=invitations&budget=100", "flash-over-budget")
    assert "Over budget" in text(driver, "#over-budget")


def test_erasing_an_entity_from_the_memory_page_shows_the_receipt(site):
    driver = as_owner(site)
    go(site, "/memory", "memory")
    assert "Alice prefers tea" in text(driver, "#memories")
    driver.find_element(By.CSS_SELECTOR, "#erase-form input[name=entity]").send_keys("alice")
    driver.find_element(By.CSS_SELECTOR, "#erase-form input[name=reason]").send_keys("erasure request")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#erase-form button"))
    assert "This cannot be undone" in text(driver, "#confirm-what")  # a confirmation step: nothing erased yet
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#confirm-form button"))
    assert "/memory/receipt?" in driver.current_url  # the receipt is a page of its own (a reload erases nothing)
    receipt = text(driver, "#receipt")
    assert "memory erased items: 1" in receipt.replace("\n", " ") and "Complete" in text(driver, "#receipt-status")
    shot(site, "receipt")
    go(site, "/memory")
    assert "Alice prefers tea" not in text(driver, "#memories") and "Bob prefers coffee" in text(driver, "#memories")


def test_decisions_chain_policies_and_audit_pages(site):
    driver = as_owner(site)
    go(site, "/decisions", "decisions")
    go(site, f"/decisions/{site['effect']}")
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return window.__graphRendered"))
    assert "expire_7_days" in text(driver, "#upstream")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#check-form button"))
    assert "not compliant" in text(driver, ".notice")
    shot(site, "decision")
    go(site, "/policies/review", "policy")
    assert "violation" in text(driver, "#results")
    go(site, "/audit?outcome=denied", "audit")
    rows = driver.find_elements(By.CSS_SELECTOR, "#audit tbody tr")
    assert rows and all("denied" in r.text for r in rows)


# --- issue 28: the graph explorer and the Ask page (screenshots at 1280x800, axe-core) ---------------


def shot_1280(site, name: str) -> None:
    driver = site["driver"]
    driver.set_window_size(1280, 800)
    shot(site, name)


def axe_violations(driver) -> list[dict]:
    """axe-core's serious and critical violations on the page shown (axe injected by the test, not shipped)."""
    driver.execute_script(AXE.read_text(encoding="utf-8"))
    driver.set_script_timeout(60)
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document).then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, "
        "nodes: v.nodes.map(n => n.html).slice(0, 3)})))).catch(e => done([{id: 'axe-error', impact: 'critical', "
        "nodes: [String(e)]}]));")
    return [v for v in result if v["impact"] in ("serious", "critical")]


def label_overlaps(driver) -> tuple[int, list]:
    """How many labels the drawn graph has, and the pairs of label boxes (canvas coordinates) that overlap."""
    boxes = driver.execute_script("""  // the measured text size, placed where vis draws it (in a box, or under a dot)
        return Object.values(window.consoleGraph.body.nodes).filter(n => n.labelModule && n.labelModule.size)
          .map(n => { const w = n.labelModule.size.width, h = n.labelModule.size.height;
                      const cy = n.options.shape === 'dot' ? n.y + n.options.size + 2 + h / 2 : n.y;
                      return {id: n.id, l: n.x - w / 2, t: cy - h / 2, w: w, h: h}; });""")
    assert boxes and all(b["w"] > 0 for b in boxes)
    overlaps = [(a["id"], b["id"]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                if not (a["l"] + a["w"] <= b["l"] or b["l"] + b["w"] <= a["l"] or
                        a["t"] + a["h"] <= b["t"] or b["t"] + b["h"] <= a["t"])]
    return len(boxes), overlaps


def rendered(driver, timeout: float = 60) -> float:
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return window.__graphRendered"))
    return driver.execute_script("return window.__graphRendered")


def test_the_explorer_draws_fifty_nodes_without_overlapping_labels(site):
    driver = as_owner(site)
    driver.set_window_size(1280, 800)
    go(site, "/graph")
    shot_1280(site, "explore-start")
    assert "graph:hr" in text(driver, "#explore-form") and "graph:big" in text(driver, "#explore-form")
    assert not axe_violations(driver)
    go(site, "/graph?q=platform+team")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#hits a[href*='node=hub']"))
    rendered(driver)
    shot_1280(site, "explore-hub")
    assert label_overlaps(driver) == (50, [])
    assert "member_of" in text(driver, "#edge-table") and "Platform team" in text(driver, "#node-props")
    x, y = driver.execute_script("""
        const g = window.consoleGraph, p = g.getPositions(['member_07'])['member_07'];
        const dom = g.canvasToDOM(p); return [dom.x, dom.y];""")
    assert driver.execute_script("return window.consoleGraph.getNodeAt({x: arguments[0], y: arguments[1]})", x, y) \
        == "member_07"  # the dot is where it is drawn; a click on it (vis's click event) opens it
    old = driver.find_element(By.TAG_NAME, "html")
    driver.execute_script("window.consoleGraph.body.emitter.emit('click', {nodes: ['member_07'], edges: []})")
    WebDriverWait(driver, 10).until(lambda d: _stale(old) and "node=member_07" in d.current_url)
    assert text(driver, "#focus") == "member_07"


def test_the_explorer_draws_two_thousand_nodes_with_labels_by_zoom(site):
    driver = as_owner(site)
    driver.set_window_size(1280, 800)
    go(site, "/graph?graph=big&node=n0&hops=3&limit=2000")
    took = rendered(driver)
    shot_1280(site, "explore-2000")
    count, shown_far = driver.execute_script("""
        const g = window.consoleGraph, nodes = Object.values(g.body.nodes);
        return [nodes.length, nodes.filter(n => n.labelModule.visible()).length];""")
    shown_near = driver.execute_script("""
        const g = window.consoleGraph; g.moveTo({scale: 1.5, animation: false});
        return Object.values(g.body.nodes).filter(n => n.labelModule.visible()).length;""")
    assert count == 2000 and shown_far == 0 and shown_near == 2000
    print(f"explorer: 2,000 nodes drawn {took:.0f} ms after navigation (target 2,000 ms)")
    assert took < 6000  # the benchmark holds it to 2 s; a busy test machine gets slack here


def test_a_reader_sees_no_hidden_graph_in_the_explorer(site):
    driver = site["driver"]
    driver.delete_all_cookies()
    go(site, "/login")
    driver.find_element(By.ID, "token").send_keys(site["reader"])
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/login'] button"))
    driver.set_window_size(1280, 800)
    go(site, "/graph?node=hub&hops=1")
    rendered(driver)
    assert "graph:hr" not in text(driver, "#explore-form")
    shot_1280(site, "explore-reader")
    status = driver.execute_script("return fetch('/graph?graph=hr&node=salary_bands').then(r => r.status)")
    assert status == 404
    go(site, "/graph?graph=hr&node=salary_bands", "explore-denied-404")
    assert text(driver, "h1") == "Not found" and "salary" not in driver.page_source.lower()
    go(site, "/ask?q=salary+bands+for+engineers")
    assert "Secret salary bands" not in driver.page_source
    shot_1280(site, "ask-reader")


def test_ask_shows_the_context_and_the_grounded_answer(site):
    driver = as_owner(site)
    driver.set_window_size(1280, 800)
    go(site, "/ask")
    driver.find_element(By.NAME, "q").send_keys("platform team engineers")
    max_hops = driver.find_element(By.NAME, "max_hops")
    max_hops.clear()
    max_hops.send_keys("1")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#ask-form button[type=submit]"))
    assert "max_hops=1" in driver.current_url
    assert driver.find_elements(By.CSS_SELECTOR, "#sources tbody tr[id^=source-]")
    shot_1280(site, "ask-context")
    assert not axe_violations(driver)
    click_and_wait(driver, driver.find_element(By.ID, "answer-button"))
    assert "49 engineers [1]" in text(driver, "#answer-text")
    assert "confidence" in text(driver, "#answer") and "sk-browser-secret" not in driver.page_source
    link = driver.find_element(By.CSS_SELECTOR, "#answer a[href='#source-1']")
    assert driver.find_element(By.ID, "source-1")
    shot_1280(site, "ask-answer")
    assert not axe_violations(driver)
    link.click()


def test_the_docs_pack_graph_draws_no_label_over_another(site):
    driver = as_owner(site)
    go(site, f"/packs/{DOCS}/graph")
    rendered(driver)
    shot_1280(site, "graph-docs-pack")
    count, overlaps = label_overlaps(driver)
    assert count > 40 and overlaps == []


def test_create_and_revoke_a_token_in_the_rights_page(site):
    driver = as_owner(site)
    driver.set_window_size(1280, 800)
    go(site, "/rights")
    shot_1280(site, "rights")
    assert not axe_violations(driver)
    driver.find_element(By.CSS_SELECTOR, "#token-form input[name=principal]").send_keys("dora")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#token-form button"))
    token = driver.find_element(By.ID, "new-token").get_attribute("value")
    assert token.startswith("actx_")
    shot_1280(site, "rights-token-created")
    assert not axe_violations(driver)
    go(site, "/rights")
    row = next(r for r in driver.find_elements(By.CSS_SELECTOR, "#tokens tbody tr") if "dora" in r.text)
    click_and_wait(driver, row.find_element(By.LINK_TEXT, "revoke…"))
    shot_1280(site, "rights-confirm")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#confirm-form button"))
    assert "is revoked" in text(driver, ".notice")
    shot_1280(site, "rights-revoked")


def test_todays_graph_pages_pass_axe(site):
    driver = as_owner(site)
    driver.set_window_size(1280, 800)
    go(site, "/")
    shot_1280(site, "home")
    assert "sqlite" in text(driver, "#store").lower() and text(driver, "#recent")
    for path in ("/", "/packs/lib:semdag", "/packs/lib:semdag/graph", f"/decisions/{site['effect']}"):
        go(site, path)
        assert not axe_violations(driver), path


def wait_for_page(driver, element, seconds: int = 180) -> None:
    """``click_and_wait`` with room for slow work (reindexing embeds with the real model in the server)."""
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, seconds).until(lambda d: _stale(old) and d.execute_script("return document.readyState")
                                         == "complete")


def as_reader(site):
    driver = site["driver"]
    driver.delete_all_cookies()
    go(site, "/login")
    driver.find_element(By.ID, "token").send_keys(site["reader"])
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/login'] button"))
    assert text(driver, "#principal") == "reader"
    return driver


def bobs_memory(site) -> str:
    ws = Workspace.open(home=site["home"])
    try:
        found = [m for m in AgentMemory(workspace=ws, max_memory_size=None).list_memories() if m["user_id"] == "bob"]
        return found[0]["id"]
    finally:
        ws.close()


def test_edit_a_memory_writes_a_new_version_and_keeps_its_history(site):
    """Issue 28 s3: edit a memory from the browser (the declared edit_memory operation): a new version with its own
    result page, the history on the memory's page, the CLI seeing the same; forgetting it asks first."""
    driver = as_owner(site)
    driver.set_window_size(1280, 800)
    mid = bobs_memory(site)
    go(site, "/memory")
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, f"a[aria-label='edit {mid}']"))
    assert driver.current_url.endswith(f"/memory/edit/{mid}")
    shot_1280(site, "memory-edit")
    assert not axe_violations(driver)
    box = driver.find_element(By.ID, "memory-content")
    assert box.get_attribute("value") == "Bob prefers coffee"
    box.clear()
    box.send_keys("Bob prefers espresso")
    click_and_wait(driver, driver.find_element(By.ID, "memory-save"))
    assert text(driver, "h1") == "Memory edited" and "is now version 2" in text(driver, ".notice")
    shot_1280(site, "memory-edited")
    assert not axe_violations(driver)
    click_and_wait(driver, driver.find_element(By.ID, "result-back"))
    rows = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#memory-versions tbody tr")]
    assert rows[0].startswith("2 Bob prefers espresso") and rows[1].startswith("1 Bob prefers coffee")
    versions = json.loads(subprocess.run([*CLI, "--home", str(site["home"]), "memory", "versions", mid, "--json"],
                                         capture_output=True, text=True, timeout=120, check=True).stdout)
    assert [v["content"] for v in versions["versions"]] == ["Bob prefers coffee", "Bob prefers espresso"]
    click_and_wait(driver, driver.find_element(By.ID, "memory-forget"))
    assert "cannot be undone" in text(driver, "#confirm-what")  # destructive: confirmed first, nothing gone yet
    shot_1280(site, "memory-forget-confirm")
    go(site, f"/memory/edit/{mid}")
    assert driver.find_element(By.ID, "memory-content").get_attribute("value") == "Bob prefers espresso"


def test_reindex_from_the_packs_page_shows_its_result(site):
    """Issue 28 s3: reindex from the browser (the declared reindex_knowledge operation), a result page of its own."""
    driver = as_owner(site)
    driver.set_window_size(1280, 800)
    go(site, "/packs")
    driver.find_element(By.CSS_SELECTOR, "#reindex-pack option[value='lib:semdag']").click()
    shot_1280(site, "reindex-form")
    wait_for_page(driver, driver.find_element(By.ID, "reindex-submit"))
    assert text(driver, "h1") == "Reindexed"
    assert "lib:semdag: embedded" in text(driver, ".notice")
    shot_1280(site, "reindexed")
    assert not axe_violations(driver)
    wait_for_page(driver, driver.find_element(By.ID, "result-back"))
    driver.find_element(By.CSS_SELECTOR, "#reindex-pack option[value='lib:semdag']").click()
    wait_for_page(driver, driver.find_element(By.ID, "reindex-submit"))
    assert "embedded 0 texts (nothing was missing)" in text(driver, ".notice")
    go(site, "/packs/lib:semdag?q=who+may+join+an+account")  # the pack's search runs the declared search_knowledge
    assert text(driver, "#search-hits tbody tr:first-child code") in ("account", "membership", "invitations")
    shot_1280(site, "pack-search")
    assert not axe_violations(driver)


def test_a_reader_may_neither_edit_a_memory_nor_reindex_a_pack(site):
    """The principal without the grant: the memory page answers as a missing one (no read on memory:default), and
    a reindex of a pack it may only read is refused with what it needs; nothing changes, the denials are audited."""
    mid = bobs_memory(site)
    driver = as_reader(site)
    driver.set_window_size(1280, 800)
    go(site, f"/memory/edit/{mid}")
    assert text(driver, "h1") == "Not found" and "Bob prefers" not in driver.page_source
    shot_1280(site, "memory-edit-denied")
    go(site, "/packs")
    driver.find_element(By.CSS_SELECTOR, "#reindex-pack option[value='lib:semdag']").click()
    click_and_wait(driver, driver.find_element(By.ID, "reindex-submit"))
    assert text(driver, "h1") == "Not allowed" and "needs write" in driver.page_source
    shot_1280(site, "reindex-denied")
    assert not axe_violations(driver)
    ws = Workspace.open(home=site["home"])
    try:
        denied = {(r["action"], r["target"]) for r in access.audit_log(ws, None, principal="reader")
                  if r["outcome"] == "denied"}
        assert ("pack.reindex", "lib:semdag") in denied
    finally:
        ws.close()
