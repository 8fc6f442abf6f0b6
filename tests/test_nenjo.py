"""Packs as people already write them (issue 12, section 2), tried on the real Nenjo packages repository in
``../shared/data/nenjo-packages``: its knowledge package, its context package (folder modules of context
blocks), and every prompt of its abilities, its agent and its commands rendered."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from agentcontext import access
from agentcontext.errors import AccessDeniedError, NotFoundError, ValidationError
from agentcontext.knowledge import packs, tools
from agentcontext.knowledge.catalog import list_docs
from agentcontext.knowledge.render import render, variables
from agentcontext.workspace import Workspace

# A verbatim copy of the public repository (MIT; see its SOURCE.md), so the suite runs anywhere.
NENJO = Path(__file__).resolve().parent / "data" / "nenjo-packages"
REPO = NENJO / "nenjo"
CORE = "pkg:nenjo-ai.packages.knowledge.core"
SOURCE = {"scope": "nenjo-ai", "repo": "packages"}


@pytest.fixture(scope="module")
def nws(tmp_path_factory):
    ws = Workspace.open(home=tmp_path_factory.mktemp("nenjo") / ".agentcontext", create=True)
    installed = {}
    for name in ("knowledge", "context"):
        for result in packs.install_folder(ws, REPO / name, defer_embeddings=True, **SOURCE):
            installed[result["pack"]] = result
    yield ws, installed
    ws.close()


def manifest_docs() -> list[dict]:
    return yaml.safe_load((REPO / "knowledge" / "core" / "manifest.yaml").read_text())["manifest"]["docs"]


def block(path: str) -> dict:
    return yaml.safe_load((REPO / "context" / path).read_text())["manifest"]


# --- the knowledge package ----------------------------------------------------------------------
def test_knowledge_package_installs_every_doc_and_edge(nws):
    ws, installed = nws
    docs = manifest_docs()
    assert installed[CORE]["docs"] == len(docs) == 46
    assert installed[CORE]["edges"] == sum(len(d.get("related") or []) for d in docs)
    for d in docs:
        got = tools.read_knowledge_doc(ws, CORE, d["selector"])
        assert got["content"] == (REPO / "knowledge" / "core" / d["source_path"]).read_text(encoding="utf-8")
        assert got["related"] == [{"type": r["type"], "target": r["target"]} for r in d.get("related") or []]
    assert [p["pack"] for p in tools.list_knowledge_packs(ws)].count(CORE) == 1


def test_template_names_find_the_pack_and_one_doc(nws):
    ws, _ = nws
    index = render(ws, "{{ pkg.nenjo_ai.packages.knowledge.core }}")
    assert index.startswith(f"# Knowledge pack: Nenjo Core ({CORE})")
    assert "- `resources.agents` [resource] Agents" in index and index.count("\n- `") == 46
    assert "Agents are the primary behavioral units" not in index  # an index never holds bodies
    one = render(ws, "{{ pkg.nenjo_ai.packages.knowledge.core.resources.agents }}")
    body = (REPO / "knowledge/core/docs/resources/agents.md").read_text()
    assert one == f"# Agents ({'resources.agents'})\n\n{body.strip()}\n"
    assert render(ws, "{{ pkg.nenjo-ai.packages.knowledge.core.resources.agents }}") == one  # as installed
    with pytest.raises(NotFoundError, match="not installed"):
        render(ws, "{{ pkg.nenjo_ai.packages.knowledge.nothing }}")
    with pytest.raises(NotFoundError):
        render(ws, "{{ pkg.nenjo_ai.packages.knowledge.core.resources.nothing }}")


def test_runtime_variables_are_left_and_strict_refuses_them(nws):
    ws, _ = nws
    template = "Task {{ task.title }} for {{agent.name}}: {% if task %}{{ task }}{% endif %} \\{{ lib.x }}"
    assert render(ws, template) == "Task {{ task.title }} for {{agent.name}}: {% if task %}{{ task }}{% endif %} " \
                                   "{{ lib.x }}"
    with pytest.raises(ValidationError) as info:
        render(ws, template, strict=True)
    assert info.value.data["variables"] == ["task.title", "agent.name", "task"]
    assert render(ws, "{{ pkg.nenjo_ai.packages.context.memory }}", strict=True).startswith("# Knowledge pack")
    with pytest.raises(ValidationError, match="not lib"):
        render(ws, "{{ pkg.* }}")  # a malformed pack reference is an error, not a runtime variable


def test_render_checks_access_like_every_read(ws):
    packs.install_folder(ws, REPO / "knowledge", defer_embeddings=True)
    packs.create_pack(ws, "readable")
    access.grant(ws, "reader", "lib:readable", "read")
    for ref in ("pkg.nenjo_ai.packages.knowledge.core", "pkg.nenjo_ai.packages.knowledge.core.resources.agents",
                "pkg.nenjo_ai.packages.knowledge.ghost"):  # hidden and missing answer alike
        with pytest.raises(AccessDeniedError):
            render(ws, "{{ %s }}" % ref, principal="reader")
    access.grant(ws, "reader", CORE, "read")
    assert render(ws, "{{ pkg.nenjo_ai.packages.knowledge.core }}", principal="reader").startswith("# Knowledge")


# --- the context package: folder modules of context blocks --------------------------------------
def test_context_package_folders_become_packs_of_blocks(nws):
    ws, installed = nws
    folders = yaml.safe_load((REPO / "context" / "package.yaml").read_text())["modules"]
    expected = {f"pkg:nenjo-ai.packages.context.{f.rstrip('/')}" for f in folders}
    assert expected <= set(installed) and len(expected) == 7
    blocks = [p for p in (REPO / "context").glob("*/*.y*ml") if "context_block" in p.read_text()]
    assert sum(installed[p]["docs"] for p in expected) == len(blocks) == 14
    host = render(ws, "{{ pkg.nenjo_ai.packages.context.tools.host_tools }}")
    assert host == block("tools/host_tools.yml")["template"]  # a block renders as its own text
    memory = render(ws, "<m>{{ pkg.nenjo_ai.packages.context.memory.remembrance }}</m>")
    assert "{{ memory_profile }}" in memory and "{% if memories %}" in memory  # the block's runtime variables stay
    doc = tools.read_knowledge_doc(ws, "pkg:nenjo-ai.packages.context.agents", "sub_agents")
    assert (doc["title"], doc["kind"]) == ("Sub-Agent Delegation", "context_block")
    assert doc["summary"].startswith("Shared rules for deciding when to use sub-agents")


def test_context_blocks_need_a_scope_unless_the_folder_is_a_clone(tmp_path, ws):
    plain = tmp_path / "plain" / "context"  # outside any repository (the vendored copy sits in ours)
    shutil.copytree(REPO / "context", plain)
    with pytest.raises(ValidationError, match="--scope nenjo-ai --repo packages"):
        packs.install_folder(ws, plain, defer_embeddings=True)
    clone = tmp_path / "packages"
    shutil.copytree(REPO / "context", clone / "nenjo" / "context")
    (clone / ".git").mkdir()
    (clone / ".git" / "config").write_text('[core]\n\tbare = false\n[remote "origin"]\n'
                                          "\turl = git@github.com:nenjo-ai/packages.git\n")
    result = packs.install_folder(ws, clone / "nenjo" / "context", defer_embeddings=True)
    assert "pkg:nenjo-ai.packages.context.tools" in {r["pack"] for r in result}


def test_runtime_modules_are_refused_by_name_or_skipped(ws):
    with pytest.raises(ValidationError) as info:
        packs.install_folder(ws, REPO / "nenji", defer_embeddings=True, **SOURCE)
    assert "agent.yaml" in str(info.value) and "nenjo.agent.v1" in str(info.value)
    assert "skip" in str(info.value) and ws.store.list_records("pack") == []
    result = packs.install_folder(ws, REPO / "nenji", defer_embeddings=True, skip_unsupported=True, **SOURCE)
    assert [r["pack"] for r in result] == ["pkg:nenjo-ai.packages.nenji.context"]
    assert result[0]["docs"] == 2
    assert [(s["module"], s["schema"]) for s in result[0]["skipped"]] == [("agent.yaml", "nenjo.agent.v1")]
    with pytest.raises(ValidationError, match="nothing here is knowledge"):
        packs.install_folder(ws, REPO / "capabilities", defer_embeddings=True, skip_unsupported=True, **SOURCE)


def test_whole_registry_installs_its_knowledge(ws):
    result = packs.install_folder(ws, NENJO, defer_embeddings=True, skip_unsupported=True, **SOURCE)
    names = {r["pack"] for r in result}
    assert CORE in names and "pkg:nenjo-ai.packages.nenji.context" in names and len(names) == 9
    skipped = {s["schema"] for s in result[0]["skipped"]}
    assert skipped == {"nenjo.ability.v1", "nenjo.agent.v1", "nenjo.command.v1", "nenjo.mcp_server.v1"}


def test_folder_module_needs_an_index(tmp_path, ws):
    root = tmp_path / "pkg"
    (root / "blocks").mkdir(parents=True)
    (root / "blocks" / "a.yml").write_text("schema: nenjo.context_block.v1\nslug: a\nmanifest: {name: a, "
                                           "template: hi}\n")
    (root / "package.yaml").write_text("schema: nenjo.package.v1\nname: p\nmodules: [blocks/]\n")
    with pytest.raises(ValidationError, match="folder without index.yml"):
        packs.install_folder(ws, root, defer_embeddings=True, **SOURCE)
    (root / "blocks" / "index.yaml").write_text("schema: nenjo.module_index.v1\nmodules: [a.yml]\n")
    assert packs.install_folder(ws, root, defer_embeddings=True, **SOURCE)[0]["pack"] == \
        "pkg:nenjo-ai.packages.p.blocks"


# --- the prompts of the repository, rendered -----------------------------------------------------
def _prompts() -> list[tuple[str, str]]:
    out = []
    for path in sorted((REPO / "capabilities" / "build").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        if data["schema"] == "nenjo.ability.v1":
            out.append((f"ability {data['slug']}", data["manifest"]["prompt_config"]["developer_prompt"]))
    agent = yaml.safe_load((REPO / "nenji" / "agent.yaml").read_text())["manifest"]["prompt_config"]
    out += [(f"agent nenji {k}", agent[k]) for k in ("system_prompt", "developer_prompt")]
    out += [(f"agent nenji template {k}", v) for k, v in agent["templates"].items()]
    out += [(f"command {p.parent.name}", p.read_text()) for p in sorted((REPO / "commands").glob("*/command.md"))]
    return out


def test_every_ability_agent_and_command_prompt_renders(nws):
    ws, _ = nws
    prompts = _prompts()
    assert sum(name.startswith("ability") for name, _ in prompts) == 9 and len(prompts) == 16
    for name, prompt in prompts:
        text = render(ws, prompt)
        refs = re.findall(r"(?<!\\)\{\{\s*(pkg\.[^}]*?)\s*\}\}", prompt)
        assert refs, name
        for ref in refs:  # every reference is replaced by its doc or block (whose body may quote references)
            assert render(ws, "{{ %s }}" % ref) in text, (name, ref)
        assert all(v in variables(text) for v in variables(prompt)), name  # runtime variables stay
    build_agent = dict(prompts)["ability build-agent"]
    text = render(ws, build_agent)
    assert "\\{{" not in text and "`{{ lib.<pack_slug> }}`" in text  # Nenjo's escaped example, literal
    assert block("operations/write_discipline.yml")["template"] in text
    assert "# Agents (resources.agents)" in text


def test_agent_prompt_with_runtime_variables(nws):
    ws, _ = nws
    agent = yaml.safe_load((REPO / "nenji" / "agent.yaml").read_text())["manifest"]["prompt_config"]
    text = render(ws, agent["system_prompt"])
    assert "{{ self }}" in text and "{{ context.methodology }}" in text  # the runtime's, and a local import
    assert "{{ memory_profile }}" in text  # from the remembrance block, left for the runtime
    with pytest.raises(ValidationError, match="self"):
        render(ws, agent["system_prompt"], strict=True)


# --- browsing ------------------------------------------------------------------------------------
def test_docs_lists_every_doc_in_pages(nws):
    ws, _ = nws
    seen, offset = [], 0
    while True:
        page = list_docs(ws, CORE, offset=offset, limit=20)
        seen += [d["selector"] for d in page["docs"]]
        offset += 20
        if offset >= page["total"]:
            break
    assert seen == sorted(d["selector"] for d in manifest_docs())
