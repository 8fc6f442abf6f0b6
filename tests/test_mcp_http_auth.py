"""MCP over HTTP answers as a bearer-token server (issue 26 section 4): no OAuth discovery is offered (no
``resource_metadata`` in WWW-Authenticate, 404 for every /.well-known/oauth-* document), a missing token gets
``Bearer realm=...`` without an error code (RFC 6750 section 3.1), a wrong one ``error="invalid_token"``, and the
body says how to get a token. A real ``agentcontext serve mcp --http`` subprocess."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from agentcontext import access

from .test_mcp_transports import aws, home, http_server  # noqa: F401  (fixtures)


def post(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def get_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.timeout(180)
def test_http_401s_offer_no_oauth_and_say_what_to_do(aws, http_server):  # noqa: F811
    status, headers, body = post(http_server, {})
    challenge = headers["www-authenticate"]
    assert status == 401 and challenge.startswith("Bearer ") and "realm=" in challenge
    assert "error=" not in challenge and "resource_metadata" not in challenge  # no credentials: no error code
    assert "agentcontext token create" in json.loads(body)["error_description"]

    status, headers, body = post(http_server, {"Authorization": "Bearer actx_wrong"})
    challenge = headers["www-authenticate"]
    assert status == 401 and 'error="invalid_token"' in challenge and "resource_metadata" not in challenge
    assert json.loads(body)["error"] == "invalid_token"

    token = access.create_token(aws, "reader")["token"]
    assert post(http_server, {"Authorization": f"Bearer {token}"})[0] != 401

    base = "{0.scheme}://{0.netloc}".format(urlsplit(http_server))
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", "/register",
                 "/authorize", "/token"):
        assert get_status(base + path) == 404, path
