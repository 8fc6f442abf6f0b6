"""``make check-dist``: the installed wheel runs, from a bare environment as a GUI MCP client starts it.

Usage: ``python tests/check_dist.py VENV HOME``, VENV holding the installed wheel (not this checkout). Standard
library only, so any Python runs it. Checks what ships beside the code: ``init`` and its migrations, a pack
install and a flash (the embedding model and tokenizer data), and the web console (its templates and static
files): the login page, the launch link, a stylesheet, the vendored graph script and a flash page that shows the
same bundle as the CLI. Exits non-zero with a line saying what failed.
"""
from __future__ import annotations

import http.cookiejar
import json
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BARE = {"PATH": "/usr/bin:/bin"}


def run(exe: Path, home: Path, *args: str) -> str:
    proc = subprocess.run([str(exe), "--home", str(home), *args], capture_output=True, text=True, env=BARE,
                          timeout=300)
    if proc.returncode != 0:
        sys.exit(f"check-dist: agentcontext {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expect(ok: bool, what: str) -> None:
    if not ok:
        sys.exit(f"check-dist: {what}")


def log_text(log) -> str:
    log.seek(0)
    return log.read()


def check_web(exe: Path, home: Path, tokens: int) -> None:
    port = free_port()
    log = open(home / "serve-web.log", "w+", encoding="utf-8")
    server = subprocess.Popen([str(exe), "--home", str(home), "serve", "web", "--port", str(port), "--json"],
                              stdout=subprocess.PIPE, stderr=log, text=True, env=BARE)
    try:
        line = server.stdout.readline() if server.stdout else ""
        expect(bool(line), f"serve web printed no login link: {log_text(log)}")
        urls = json.loads(line)
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

        def get(path: str) -> tuple[int, str]:
            with browser.open(urls["url"] + path if path.startswith("/") else path, timeout=60) as response:
                return response.status, response.read().decode("utf-8")

        status, page = get("/login")
        expect(status == 200 and "<title>Log in" in page, f"login page: {status}")
        status, page = get(urls["login_url"])  # the launch link logs in and lands on the packs
        expect(status == 200 and "lib:semdag" in page, "the launch link did not open the packs page")
        for asset in ("/static/app.css", "/static/console.js", "/static/vendor/vis-network/vis-network.min.js"):
            expect(get(asset)[0] == 200, f"{asset} is not served (not in the wheel?)")
        status, page = get("/packs/lib:semdag/flash?targets=invitations")
        expect(status == 200 and f"{tokens} tokens" in page, f"the flash page does not show {tokens} tokens")
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def main(venv: Path, home: Path) -> None:
    exe = venv / "bin" / "agentcontext"
    run(exe, home, "init")
    run(exe, home, "pack", "add", str(ROOT / "examples" / "packs" / "semdag"))
    bundle = json.loads(run(exe, home, "flash", "lib:semdag", "invitations", "--json"))
    order = [doc["selector"] for doc in bundle["docs"]]
    expect(order == ["identity", "account", "membership", "invitations"], f"flash order {order}")
    check_web(exe, home, bundle["tokens"])
    print(f"check-dist: agentcontext installed in {venv} runs "
          "(init, pack add, flash, web console login and flash page)")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve())
