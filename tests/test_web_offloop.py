"""A slow console request does not delay a fast one (issue 27 s5): pages run off the server's event loop.

The slow request is real contention, not a stub: another writer holds the workspace store's transaction, so the
packs page waits for it. Before, the handler waited on the event loop and every other request (a static file, the
login page) waited with it."""
from __future__ import annotations

import threading
import time

from starlette.testclient import TestClient

from agentcontext.knowledge import packs
from agentcontext.web import create_app
from tests.conftest import PACKS

HOLD = 3.0  # the fast requests are allowed a third of it (before they waited ~HOLD - 0.2 s): room on a loaded machine


def test_a_slow_page_does_not_delay_a_fast_one(ws):
    packs.install_folder(ws, PACKS / "semdag", defer_embeddings=True)
    app = create_app(ws, allowed_hosts=["testserver"])
    with TestClient(app) as client:  # one event loop for every request, as under uvicorn
        assert client.get(f"/login?launch={app.state.console.sessions.launch_token}").status_code == 200
        held, slow = threading.Event(), {}

        def writer() -> None:
            with ws.store.transaction():
                held.set()
                time.sleep(HOLD)

        def slow_page() -> None:
            started = time.monotonic()
            slow["status"] = client.get("/packs").status_code
            slow["took"] = time.monotonic() - started

        threading.Thread(target=writer).start()
        held.wait(5)
        reader = threading.Thread(target=slow_page)
        reader.start()
        time.sleep(0.2)  # the packs page is now waiting for the store
        for path in ("/static/app.css", "/login"):
            started = time.monotonic()
            assert client.get(path).status_code == 200
            assert time.monotonic() - started < HOLD / 3, path  # before: about HOLD - 0.2 s
        reader.join(10)
    assert slow["status"] == 200 and slow["took"] >= HOLD - 0.3  # the slow page was slow, and then answered


def test_forms_still_post_through_the_worker_threads(ws):
    """The body is read on the server's loop and parsed in the worker (a CSRF-checked form, a login form)."""
    packs.create_pack(ws, "notes")
    app = create_app(ws, allowed_hosts=["testserver"])
    client = TestClient(app)
    bad = client.post("/login", data={"token": "nope", "next": "/packs"}, follow_redirects=False)
    assert bad.status_code == 401
    ok = client.post("/login", data={"token": app.state.console.sessions.launch_token, "next": "/packs"},
                     follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"] == "/packs"
    assert "notes" in client.get("/packs").text
