"""Each operation declared once (issue 27, section 2): every declared operation is reachable from every door (the
MCP tool, the CLI command, the console's route) or says which door skips it and why; the doors take their
arguments, constraints and help from the declaration, so the same bad input is refused alike by each; and the
operations added for the console (edit a memory, its versions, reindex) keep history and check access."""
from __future__ import annotations

import json
import os
import subprocess
import threading

import jsonschema
import pytest

from agentcontext import access
from agentcontext.cli import declared as cli_declared
from agentcontext.cli.entry import DERIVED, command
from agentcontext.errors import AccessDeniedError, ConflictError, ValidationError
from agentcontext.knowledge import packs
from agentcontext.mcp_server.registry import tool_specs
from agentcontext.mcp_server.server import load_plugins
from agentcontext.memory import AgentMemory
from agentcontext.operations import DOORS, Caller, declared, operation
from agentcontext.web import operations as web_operations
from agentcontext.workspace import Workspace

from .conftest import CLI, PACKS


def mcp_served() -> set[str]:
    load_plugins()
    return {spec.name for spec in tool_specs()}


def cli_served() -> set[str]:
    found = set()

    def walk(group):
        for child in (getattr(group, "commands", None) or {}).values():
            walk(child)
        name = getattr(group, "declared", None)
        if name:
            found.add(name)
            if name in cli_declared.ALTERNATES:  # search --all runs search_all_knowledge
                found.add(cli_declared.ALTERNATES[name][1])

    walk(command())
    return found


def web_routes() -> list:
    """The console's routes of the modules that run declared operations (importing them registers what they serve)."""
    from agentcontext.web.routes import ask, audit, decisions, docs, memory, packs as pack_routes, rights

    return [*docs.ROUTES, *memory.ROUTES, *pack_routes.ROUTES, *decisions.ROUTES, *ask.ROUTES, *rights.ROUTES,
            *audit.ROUTES]


def web_served() -> dict[str, str]:
    web_routes()
    return dict(web_operations.SERVED)


def test_every_declared_operation_reaches_every_door_or_says_why():
    served = {"mcp": mcp_served(), "cli": cli_served(), "web": set(web_served())}
    problems = []
    for name, op in declared().items():
        for door in DOORS:
            skipped = op.skips.get(door, "").strip()
            if name in served[door] and skipped:
                problems.append(f"{name}: served by {door} but also says it skips it ({skipped})")
            elif name not in served[door] and not skipped:
                problems.append(f"{name}: {door} does not serve it and the declaration says nothing of why")
    assert problems == []
    # every MCP tool is declared (nothing of theirs is hand-written per door any more)
    assert {"list_knowledge_packs", "search_knowledge", "list_knowledge_neighbors", "read_knowledge_doc",
            "flash_knowledge", "store_memory", "retrieve_memories", "forget_memories", "get_memory",
            "conversation_history", "edit_memory", "memory_versions", "reindex_knowledge"} <= set(declared())
    assert served["mcp"] <= set(declared())
    assert {"record_decision", "find_precedents", "get_causal_chain", "check_compliance", "get_context",
            "predict_links", "find_paths"} <= served["cli"]


def test_the_console_routes_it_names_exist():
    assert set(web_served().values()) <= {r.path for r in web_routes()}


def test_help_lists_the_derived_commands_as_declared():
    """``entry.DERIVED`` lets help list the derived commands without importing pydantic; it must say exactly what
    the declarations say."""
    expected: dict[tuple[str, ...], dict[str, str]] = {}
    for path, cmd in cli_declared.derived(list(declared().values())):
        expected.setdefault(path[:-1], {})[path[-1]] = operation(cmd.declared).title
    assert expected == DERIVED


def test_a_cli_command_takes_its_options_and_help_from_the_declaration():
    root = command()
    search = root.commands["search"]
    options = {opt for p in search.params for opt in getattr(p, "opts", [])}
    assert {"--tag", "--kind", "--prefix", "--related-to", "--edge-type", "--limit", "--min-score", "--all",
            "--json", "--home", "--as"} <= options
    limit = next(p for p in search.params if p.name == "limit")
    assert limit.help == operation("search_knowledge").input.model_fields["limit"].description
    retrieve = root.commands["memory"].commands["retrieve"]
    assert {"--k", "-k", "--conversation", "-c", "--user", "-u", "--meta", "-m", "--namespace"} <= {
        opt for p in retrieve.params for opt in getattr(p, "opts", [])}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    target = tmp_path_factory.mktemp("ops") / ".agentcontext"
    ws = Workspace.open(home=target, create=True)
    packs.install_folder(ws, PACKS / "semdag", defer_embeddings=True)
    ws.close()
    return target


def cli(home, *args, who=None):
    env = {**os.environ, **({"AGENTCONTEXT_PRINCIPAL": who} if who else {})}
    return subprocess.run([*CLI, "--home", str(home), *args], capture_output=True, text=True, timeout=300, env=env)


def test_the_same_constraint_refuses_bad_input_at_every_door(home):
    """limit must be 1..1000 (SearchArgs): the CLI, a console form and MCP (strict) refuse 0 with the same error."""
    proc = cli(home, "search", "lib:semdag", "account", "--limit", "0", "--json")
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "ValidationError" and "argument 'limit'" in error["message"]
    op = operation("search_knowledge")
    with pytest.raises(ValidationError, match="argument 'limit'"):
        web_operations.form_input(op, {"pack": "lib:semdag", "limit": "0"})
    with pytest.raises(ValidationError, match="argument 'limit'"):
        op.parse({"pack": "lib:semdag", "limit": 0})
    with pytest.raises(ValidationError, match="argument 'limit'"):
        op.parse({"pack": "lib:semdag", "limit": "5"})  # MCP is strict: JSON has numbers
    assert op.parse({"pack": "lib:semdag", "limit": "5"}, strict=False).limit == 5  # text from a form or a shell


def test_search_all_rides_on_search_and_refuses_the_one_pack_filters(home):
    hits = json.loads(cli(home, "search", "--all", "account", "--limit", "3", "--json").stdout)
    assert hits and all(h["pack"] == "lib:semdag" for h in hits)
    proc = cli(home, "search", "--all", "account", "--kind", "design", "--json")
    assert proc.returncode == 1 and "search --all takes only" in json.loads(proc.stdout)["error"]["message"]


def test_edit_memory_writes_a_new_version_and_keeps_the_history(home):
    mid = cli(home, "memory", "store", "Dana drinks green tea", "-c", "c9", "-e", "dana").stdout.strip()
    edited = json.loads(cli(home, "memory", "edit", mid, "Dana drinks black coffee", "-m", "source=chat",
                            "--json").stdout)
    assert (edited["id"], edited["version"], edited["previous_version"]) == (mid, 2, 1)
    assert edited["metadata"]["entities"] == ["dana"] and edited["metadata"]["source"] == "chat"
    versions = json.loads(cli(home, "memory", "versions", mid, "--json").stdout)["versions"]
    assert [(v["version"], v["content"]) for v in versions] == [(1, "Dana drinks green tea"),
                                                                (2, "Dana drinks black coffee")]
    out = operation("memory_versions").output_schema()
    jsonschema.validate({"memory_id": mid, "namespace": "memory:default", "versions": versions}, out)


def test_edit_memory_needs_write_on_the_memory_store(home):
    ws = Workspace.open(home=home)
    try:
        mid = AgentMemory(workspace=ws, max_memory_size=None).store("Eve likes jazz")
        access.grant(ws, "reader", "memory:default", "read")
        op = operation("edit_memory")
        with pytest.raises(AccessDeniedError):
            op.run(Caller(ws, "reader"), op.parse({"memory_id": mid, "content": "Eve likes opera"}))
        assert AgentMemory(workspace=ws, max_memory_size=None).require(mid)["content"] == "Eve likes jazz"
        with pytest.raises(ValidationError, match="needs the new content or metadata"):
            op.run(Caller(ws), op.parse({"memory_id": mid}))
    finally:
        ws.close()


def test_edit_memory_with_a_stale_version_is_refused_and_two_racing_edits_make_one_version(home):
    """The version check and the write are one store transaction: of two editors who read version 1, exactly one
    writes version 2 and the other gets ConflictError (the console's form posts the version it showed)."""
    ws = Workspace.open(home=home)
    try:
        mid = AgentMemory(workspace=ws, max_memory_size=None).store("Fay likes tea")
        proc = cli(home, "memory", "edit", mid, "Fay likes mate", "--expected-version", "3", "--json")
        assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["type"] == "ConflictError"
        assert "at version 1, not 3" in json.loads(proc.stdout)["error"]["message"]
        op = operation("edit_memory")
        outcomes: list[str] = []

        def edit(text: str) -> None:
            try:
                op.run(Caller(ws), op.parse({"memory_id": mid, "content": text, "expected_version": 1}))
                outcomes.append("written")
            except ConflictError:
                outcomes.append("conflict")

        threads = [threading.Thread(target=edit, args=(f"Fay likes coffee {i}",)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["conflict", "conflict", "conflict", "written"]
        assert [n.version for n in ws.store.node_versions(mid)] == [1, 2]
    finally:
        ws.close()


def test_reindex_needs_write_on_the_pack_or_the_owner_for_every_pack(home):
    ws = Workspace.open(home=home)
    try:
        op = operation("reindex_knowledge")
        access.grant(ws, "reader", "lib:semdag", "read")
        for args in ({"pack": "lib:semdag"}, {}):
            with pytest.raises(AccessDeniedError):
                op.run(Caller(ws, "reader"), op.parse(args))
        denied = [r for r in access.audit_log(ws, None, action="pack.reindex") if r["outcome"] == "denied"]
        assert len(denied) == 2
        done = op.run(Caller(ws), op.parse({"pack": "lib:semdag"}))
        jsonschema.validate(done, op.output_schema())
        assert done["pack"] == "lib:semdag" and done["embedded"] >= 0
        assert op.run(Caller(ws), op.parse({"pack": "lib:semdag"}))["embedded"] == 0  # nothing left to embed
        access.grant(ws, "editor", "lib:semdag", "write")  # glossing every memory is the owner's (memory/reglossed.py)
        with pytest.raises(AccessDeniedError):
            op.run(Caller(ws, "editor"), op.parse({"places": True}))
        assert [r["outcome"] for r in access.audit_log(ws, None, action="memory.places")] == ["denied"]
        glossed = op.run(Caller(ws), op.parse({"places": True}))
        jsonschema.validate(glossed, op.output_schema())
        assert glossed["glossed"] == 0 and [r["outcome"] for r in access.audit_log(ws, None, action="memory.places")
                                            ] == ["denied", "ok"]
    finally:
        ws.close()


RIGHTS = ("grant_access", "revoke_access", "list_grants", "create_token", "list_tokens", "revoke_token",
          "read_audit_log")


def test_tokens_and_grants_are_declared_once_for_the_cli_and_the_console_and_never_reach_mcp(home):
    """The access commands run their declared operations; MCP skips them (they are not for agents) and says so;
    the same bad principal is refused alike by the command line and a console form; the token is shown once."""
    assert set(RIGHTS) <= set(declared())
    served = {"mcp": mcp_served(), "cli": cli_served(), "web": set(web_served())}
    for name in RIGHTS:
        assert name in served["cli"] and name in served["web"] and name not in served["mcp"]
        assert "agents" in operation(name).skips["mcp"]
    too_long = "p" * 101
    proc = cli(home, "grant", too_long, "lib:semdag", "read", "--json")
    assert proc.returncode == 1 and "argument 'who'" in json.loads(proc.stdout)["error"]["message"]
    with pytest.raises(ValidationError, match="argument 'who'"):
        web_operations.form_input(operation("grant_access"), {"principal": too_long, "pattern": "lib:semdag",
                                                              "level": "read"}, {"who": "principal"})
    granted = json.loads(cli(home, "grant", "bob", "lib:semdag", "read", "--json").stdout)
    assert granted["principal"] == "bob" and granted["granted_by"] == "owner"  # the argument is not --as
    jsonschema.validate(granted, operation("grant_access").output_schema())
    issued = json.loads(cli(home, "token", "create", "bot", "--note", "ci", "--json").stdout)
    jsonschema.validate(issued, operation("create_token").output_schema())
    assert issued["token"].startswith("actx_")
    listed = cli(home, "token", "list", "--json").stdout
    assert issued["id"] in listed and issued["token"] not in listed  # shown once, never listed
    assert "token" not in operation("list_tokens").output_schema()["properties"]["tokens"]["items"]["properties"]
    assert json.loads(cli(home, "revoke", "bob", "lib:semdag", "--json").stdout)["revoked"] is True
    assert json.loads(cli(home, "token", "revoke", issued["id"], "--json").stdout) == {"id": issued["id"],
                                                                                       "revoked": True}
    log = json.loads(cli(home, "audit", "--action", "token.*", "--json").stdout)  # --action: the console's filter
    assert [r["action"] for r in log[-2:]] == ["token.create", "token.revoke"]
    assert issued["token"] not in json.dumps(log)
    jsonschema.validate({"entries": log}, operation("read_audit_log").output_schema())
