"""Access control in the service layer: grants, doc patterns, single-user mode, tokens, pkg read-only.

A reader denied a pack sees it in no listing, search, neighbour list, read, render or flash; writes by
readers are refused and audited. (The same through the CLI and MCP is in test_access_interfaces.py.)
"""
from __future__ import annotations

import pytest

from agentcontext import access
from agentcontext.errors import AccessDeniedError, NotFoundError, ReadOnlyError, ValidationError
from agentcontext.knowledge import packs, tools
from agentcontext.knowledge.flash import flash
from agentcontext.knowledge.lint import lint
from agentcontext.knowledge.render import pack_index, render


def build_workspace(ws):
    """lib:open (readable by the reader), lib:secret (not), lib:eng (doc-level grants), owned by the owner."""
    for slug in ("open", "secret", "eng"):
        packs.create_pack(ws, slug)
    put = lambda pack, sel, deps=(), **kw: packs.put_doc(  # noqa: E731
        ws, pack, sel, title=kw.pop("title", sel.title()), summary=kw.pop("summary", f"About {sel}."),
        content=kw.pop("content", f"Body of {sel}."), related=[{"type": "depends_on", "target": d} for d in deps],
        embed=False, **kw)
    put("lib:open", "basics", content="Open basics about onboarding.")
    put("lib:open", "guide", ["basics"], content="The onboarding guide builds on the basics.")
    put("lib:secret", "salaries", content="Secret salary bands for onboarding staff.")
    put("lib:secret", "bonus", ["salaries"], content="Bonus rules.")
    put("lib:eng", "core.secret", content="Internal core secret.")
    put("lib:eng", "core.public", content="Public core.")
    put("lib:eng", "api.public", ["core.public"], content="Public API.")
    put("lib:eng", "api.leaky", ["core.secret"], content="An API resting on the secret core.")
    access.grant(ws, "reader", "lib:open", "read")
    access.grant(ws, "writer", "lib:open", "write")
    access.grant(ws, "apireader", "lib:eng/api.*", "read")
    access.grant(ws, "apireader", "lib:eng/core.public", "read")
    return ws


@pytest.fixture
def aws(ws):
    return build_workspace(ws)


def denied_audited(ws, who, action=None):
    rows = [r for r in ws.store.audit(principal=who) if r["outcome"] == "denied"]
    return [r for r in rows if action is None or r["action"] == action]


def test_single_user_until_a_grant(ws):
    packs.create_pack(ws, "a")
    assert not access.multi_user(ws)
    assert access.can(ws, "anyone", "lib:a", "admin")
    access.grant(ws, "bob", "lib:a", "read")
    assert access.multi_user(ws)
    assert not access.can(ws, "anyone", "lib:a", "read")
    assert access.can(ws, None, "lib:a", "admin")  # no principal = the owner


def test_revoking_the_last_grant_does_not_reopen_the_workspace(ws):
    packs.create_pack(ws, "a")
    access.grant(ws, "bob", "lib:a", "read")
    assert access.revoke(ws, "bob", "lib:a") is True
    assert access.grants(ws) == []
    assert not access.can(ws, "bob", "lib:a", "read")
    assert access.revoke(ws, "bob", "lib:a") is False


def test_reader_sees_only_readable_packs_everywhere(aws):
    ws = aws
    assert [p["pack"] for p in tools.list_knowledge_packs(ws, "reader")] == ["lib:open"]
    assert {p["pack"] for p in tools.list_knowledge_packs(ws)} == {"lib:open", "lib:secret", "lib:eng"}
    attempts = [
        lambda: tools.search_knowledge(ws, "lib:secret", "salary", principal="reader"),
        lambda: tools.list_knowledge_neighbors(ws, "lib:secret", "bonus", principal="reader"),
        lambda: tools.read_knowledge_doc(ws, "lib:secret", "salaries", principal="reader"),
        lambda: flash(ws, "lib:secret", "bonus", principal="reader"),
        lambda: pack_index(ws, "lib:secret", principal="reader"),
        lambda: render(ws, "{{ lib.secret }}", principal="reader"),
        lambda: render(ws, "{{ lib.secret.salaries }}", principal="reader"),
        lambda: lint(ws, "lib:secret", principal="reader"),
    ]
    for attempt in attempts:
        with pytest.raises(AccessDeniedError) as info:
            attempt()
        assert info.value.data["pack"] == "lib:secret" and info.value.data["principal"] == "reader"
        assert "Secret salary bands" not in info.value.message and "bonus rules" not in info.value.message.lower()
    assert len(denied_audited(ws, "reader")) == len(attempts)
    # The readable pack works as usual.
    assert tools.read_knowledge_doc(ws, "lib:open", "guide", principal="reader")["content"].startswith("The")
    assert flash(ws, "lib:open", "guide", principal="reader").order == ["basics", "guide"]


def test_an_unreadable_pack_and_a_missing_one_look_alike(aws):
    for pack in ("lib:secret", "lib:does-not-exist"):
        with pytest.raises(AccessDeniedError):
            tools.search_knowledge(aws, pack, "x", principal="reader")
        with pytest.raises(AccessDeniedError):
            tools.read_knowledge_doc(aws, pack, "salaries", principal="reader")
    with pytest.raises(NotFoundError):  # the owner is told the truth
        tools.read_knowledge_doc(aws, "lib:does-not-exist", "x")


def test_doc_patterns_filter_search_neighbours_index_and_listing(aws):
    ws = aws
    listing = tools.list_knowledge_packs(ws, "apireader")
    assert [(p["pack"], p["docs"], p["editable"]) for p in listing] == [("lib:eng", 3, False)]
    hits = tools.search_knowledge(ws, "lib:eng", "core secret api", principal="apireader")
    assert {h["selector"] for h in hits} <= {"api.public", "api.leaky", "core.public"}
    assert "core.secret" not in {h["selector"] for h in tools.search_knowledge(ws, "lib:eng", "", limit=50,
                                                                                principal="apireader")}
    assert tools.list_knowledge_neighbors(ws, "lib:eng", "api.leaky", principal="apireader") == []
    doc = tools.read_knowledge_doc(ws, "lib:eng", "api.leaky", principal="apireader")
    assert doc["related"] == []
    with pytest.raises(AccessDeniedError):
        tools.read_knowledge_doc(ws, "lib:eng", "core.secret", principal="apireader")
    with pytest.raises(AccessDeniedError):
        tools.search_knowledge(ws, "lib:eng", "", related_to="core.secret", principal="apireader")
    index = pack_index(ws, "lib:eng", principal="apireader")
    assert "core.secret" not in index and "api.leaky" in index


def test_flash_names_the_doc_that_needs_an_unreadable_one_never_a_partial_bundle(aws):
    # Issue 13 s2: a denial does not name hidden records, so it names the readable doc that needs one.
    ws = aws
    assert flash(ws, "lib:eng", "api.public", principal="apireader").order == ["core.public", "api.public"]
    with pytest.raises(AccessDeniedError) as info:
        flash(ws, "lib:eng", ["api.public", "api.leaky"], principal="apireader")
    assert info.value.data["selector"] == "api.leaky"
    assert "core.secret" not in info.value.message and "api.leaky" in info.value.message
    assert denied_audited(ws, "apireader", "flash")[-1]["target"] == "lib:eng/api.leaky"
    # A whole pack out of reach names the first target.
    with pytest.raises(AccessDeniedError) as info:
        flash(ws, "lib:secret", ["bonus"], principal="apireader")
    assert info.value.data["selector"] == "bonus"


def test_cycles_through_unreadable_docs_are_not_revealed(ws):
    packs.create_pack(ws, "cyc")
    packs.put_doc(ws, "lib:cyc", "api.a", related=[{"type": "depends_on", "target": "hidden.b"}], embed=False)
    packs.put_doc(ws, "lib:cyc", "hidden.b", related=[{"type": "depends_on", "target": "api.a"}], embed=False)
    access.grant(ws, "r", "lib:cyc/api.*", "read")
    with pytest.raises(AccessDeniedError) as info:
        flash(ws, "lib:cyc", "api.a", principal="r")
    assert info.value.data["selector"] == "api.a"  # the target, never the hidden doc (issue 13 s2)
    assert "hidden.b" not in str(info.value.to_dict())


def test_writes_by_readers_are_refused_and_audited(aws):
    ws = aws
    before = packs.put_doc(ws, "lib:open", "basics", content="v2", embed=False)["version"]
    for attempt, action in [
        (lambda: packs.put_doc(ws, "lib:open", "basics", content="hacked", principal="reader", embed=False), "doc.put"),
        (lambda: packs.delete_doc(ws, "lib:open", "basics", principal="reader"), "doc.delete"),
        (lambda: packs.set_edge(ws, "lib:open", "basics", "references", "guide", principal="reader"), "edge.put"),
        (lambda: packs.create_pack(ws, "mine", principal="reader"), "pack.create"),
    ]:
        with pytest.raises(AccessDeniedError):
            attempt()
        assert denied_audited(ws, "reader", action), action
    assert tools.read_knowledge_doc(ws, "lib:open", "basics")["version"] == before
    # A writer may write the pack it was granted, not others.
    assert packs.put_doc(ws, "lib:open", "new", content="n", principal="writer", embed=False)["version"] == 1
    with pytest.raises(AccessDeniedError):
        packs.put_doc(ws, "lib:secret", "x", content="n", principal="writer", embed=False)
    writes = [r for r in ws.store.audit(principal="writer") if r["outcome"] == "ok"]
    assert [r["action"] for r in writes] == ["doc.put"]


def test_pkg_packs_are_read_only_even_to_admins(ws, write_pack):
    folder = write_pack("core", {"a": ([], "A"), "b": (["a"], "B")}, selector="pkg:acme.tools.knowledge.core")
    packs.install_folder(ws, folder, defer_embeddings=True)
    access.grant(ws, "boss", "*", "admin")
    for who in (None, "boss"):
        with pytest.raises(ReadOnlyError):
            packs.put_doc(ws, "pkg:acme.tools.knowledge.core", "a", content="x", principal=who, embed=False)
        with pytest.raises(ReadOnlyError):
            packs.delete_doc(ws, "pkg:acme.tools.knowledge.core", "a", principal=who)
    refused = [r for r in ws.store.audit() if r["outcome"] == "denied" and r["detail"].get("reason") == "read-only"]
    assert len(refused) == 4


def test_only_admins_grant_and_revoke_once_multi_user(ws):
    for slug in ("hr-policies", "hr-pay", "eng"):
        packs.create_pack(ws, slug)
    access.grant(ws, "carol", "lib:hr-*", "admin")
    access.grant(ws, "bob", "lib:eng", "read")
    assert access.grant(ws, "dave", "lib:hr-policies", "read", actor="carol")["granted_by"] == "carol"
    with pytest.raises(AccessDeniedError):
        access.grant(ws, "dave", "lib:eng", "read", actor="carol")
    with pytest.raises(AccessDeniedError):
        access.grant(ws, "bob", "lib:*", "admin", actor="bob")
    with pytest.raises(AccessDeniedError):
        access.revoke(ws, "dave", "lib:hr-policies", actor="bob")
    assert access.revoke(ws, "dave", "lib:hr-policies", actor="carol")
    assert [r["action"] for r in ws.store.audit(principal="bob") if r["outcome"] == "denied"] == ["grant", "revoke"]
    # Non-admins see their own grants only; the owner sees all.
    assert [g["pattern"] for g in access.grants(ws, "bob")] == ["lib:eng"]
    assert len(access.grants(ws)) == 2


def test_bad_grants_are_validation_errors(ws):
    for principal, pattern, level in [("bob", "lib:a", "superuser"), ("", "lib:a", "read"),
                                      ("bob", "", "read"), ("bob", "lib a", "read"), ("owner", "lib:a", "read")]:
        with pytest.raises(ValidationError):
            access.grant(ws, principal, pattern, level)


def test_tokens_are_stored_hashed_and_name_their_principal(ws):
    issued = access.create_token(ws, "agent-1", note="ci")
    token = issued["token"]
    assert token.startswith("actx_") and len(token) > 30
    assert access.principal_for_token(ws, token) == "agent-1"
    for bad in (None, "", "actx_nope", token + "x", token.upper()):
        assert access.principal_for_token(ws, bad) is None
    stored = ws.store.list_records(access.TOKEN)
    assert stored and all(token not in key and token not in str(value) for key, value in stored)
    # A token makes the workspace multi-user: its principal holds nothing until granted.
    assert access.multi_user(ws)
    assert not access.can(ws, "agent-1", "lib:x", "read")
    with pytest.raises(AccessDeniedError):
        access.create_token(ws, "agent-2", actor="agent-1")
    assert [t["principal"] for t in access.tokens(ws)] == ["agent-1"]
    assert access.revoke_token(ws, issued["id"])
    assert access.principal_for_token(ws, token) is None
