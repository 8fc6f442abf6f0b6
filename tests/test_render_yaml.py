"""`agentcontext render` of whole Nenjo agent and ability files (issue 26 s4): field by field, so the output is
YAML that parses and each prompt field equals that field rendered alone; the agent's own ``{{ context.* }}`` blocks
render when installed; the runtime variables of inlined blocks are reported too. Real files of the Nenjo packages
repository (tests/data/nenjo-packages), the CLI in a subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from agentcontext.knowledge import packs
from agentcontext.knowledge.render import render_with_variables
from agentcontext.knowledge.render_file import own_blocks, render_file
from agentcontext.workspace import Workspace

from .test_nenjo import REPO, SOURCE

FILES = ("nenji/agent.yaml", "capabilities/build/agent.yaml", "capabilities/build/council.yaml")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A workspace with the knowledge and context packages and nenji's own context blocks installed."""
    home = tmp_path_factory.mktemp("render-yaml") / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    for name in ("knowledge", "context", "nenji"):
        packs.install_folder(ws, REPO / name, defer_embeddings=True, skip_unsupported=True, **SOURCE)
    ws.close()
    return home


def cli(home, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCONTEXT_")}
    proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


def fields(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from fields(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from fields(v, (*path, i))
    else:
        yield path, value


@pytest.mark.parametrize("name", FILES)
def test_a_whole_file_renders_to_yaml_that_parses_field_by_field(home, name):
    source = yaml.safe_load((REPO / name).read_text())
    out = json.loads(cli(home, "render", str(REPO / name), "--json").stdout)
    rendered = yaml.safe_load(out["text"])  # parses (it did not: inlined docs landed at column 0)
    ws = Workspace.open(home=home)
    try:
        context = own_blocks(ws, source, REPO / name, None)
        got, want = dict(fields(rendered)), dict(fields(source))
        assert got.keys() == want.keys()
        changed = 0
        for key, value in want.items():
            if isinstance(value, str) and "{{" in value:
                alone = render_with_variables(ws, value, context=context)[0]
                assert got[key] == alone, key
                changed += got[key] != value
            else:
                assert got[key] == value, key
        assert changed >= 1
    finally:
        ws.close()


def test_the_agents_own_context_blocks_render_and_inlined_variables_are_reported(home):
    out = json.loads(cli(home, "render", str(REPO / "nenji/agent.yaml"), "--json").stdout)
    prompt = yaml.safe_load(out["text"])["manifest"]["prompt_config"]["system_prompt"]
    assert "Follow the methodology defined below" in prompt and "{{ context.methodology }}" not in prompt
    assert "context.methodology" not in out["variables"]
    # self is the prompt's own; memory_profile arrives inside the inlined remembrance block
    assert out["variables"][:2] == ["self", "memory_profile"] and "chat.message" in out["variables"]
    human = cli(home, "render", str(REPO / "nenji/agent.yaml"))
    assert "memory_profile" in human.stderr


def test_a_block_not_installed_stays_for_the_runtime(tmp_path):
    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    try:
        for name in ("knowledge", "context"):
            packs.install_folder(ws, REPO / name, defer_embeddings=True, **SOURCE)
        path = REPO / "nenji/agent.yaml"
        result = render_file(ws, path.read_text(), path)
        prompt = yaml.safe_load(result.text)["manifest"]["prompt_config"]["system_prompt"]
        assert "{{ context.methodology }}" in prompt and "context.methodology" in result.variables
    finally:
        ws.close()


def test_a_principal_without_the_grant_gets_the_same_refusal_as_for_a_template(home):
    """A YAML file renders through the same access checks as a template: a principal who may read no pack gets the
    refusal a template gets (nothing of a pack or block is printed), and one who may read only the knowledge pack
    gets neither the context blocks' text nor the file's own blocks."""
    from agentcontext import access
    from agentcontext.errors import AccessDeniedError, NotFoundError

    ws = Workspace.open(home=home)
    try:
        access.create_token(ws, "stranger")
        path = REPO / "capabilities/build/council.yaml"
        with pytest.raises((AccessDeniedError, NotFoundError)):
            render_file(ws, path.read_text(), path, principal="stranger")
        assert own_blocks(ws, yaml.safe_load((REPO / "nenji/agent.yaml").read_text()), REPO / "nenji/agent.yaml",
                          "stranger") == {}  # its own blocks are not resolved for a principal who cannot see them
    finally:
        ws.close()
