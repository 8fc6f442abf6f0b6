"""The Nenjo repository through the CLI in a subprocess: pack add of a registry with --scope/--repo and
--skip-unsupported, render of a real prompt (--strict too), docs paging, search --all, pack export."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT

NENJO = Path(__file__).resolve().parent / "data" / "nenjo-packages"


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    home = tmp_path_factory.mktemp("nenjo-cli") / ".agentcontext"
    env = {**os.environ, "AGENTCONTEXT_HOME": str(home)}
    env.pop("AGENTCONTEXT_URL", None)

    def run(*args, input=None, ok=True):
        proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", *args], capture_output=True, text=True,
                              env=env, input=input, timeout=300, cwd=ROOT)
        if ok:
            assert proc.returncode == 0, proc.stderr + proc.stdout
        return proc

    run("init")
    return run


def test_registry_install_render_docs_search_export(cli, tmp_path):
    refused = cli("pack", "add", str(NENJO), "--scope", "nenjo-ai", "--repo", "packages", "--json", ok=False)
    assert refused.returncode == 1
    error = json.loads(refused.stdout)["error"]
    assert error["type"] == "ValidationError" and "--skip-unsupported" in error["message"]
    added = cli("pack", "add", str(NENJO), "--scope", "nenjo-ai", "--repo", "packages", "--skip-unsupported",
                "--defer-embeddings")
    assert "installed pkg:nenjo-ai.packages.knowledge.core: 46 docs, 202 edges" in added.stdout
    assert "skipped nenji/agent.yaml" in added.stderr

    ability = yaml.safe_load((NENJO / "nenjo/capabilities/build/build_library.yaml").read_text())
    prompt = ability["manifest"]["prompt_config"]["developer_prompt"]
    rendered = cli("render", "-", input=prompt)
    assert "# Library (resources.library)" in rendered.stdout and "{{ pkg." not in rendered.stdout
    agent = yaml.safe_load((NENJO / "nenjo/nenji/agent.yaml").read_text())["manifest"]["prompt_config"]
    out = json.loads(cli("render", "-", "--json", input=agent["system_prompt"]).stdout)
    # the prompt's own variables, then those of the blocks inlined into it (issue 26 s4)
    assert "{{ self }}" in out["text"] and out["variables"] == ["self", "context.methodology", "memory_profile",
                                                                "memories", "artifacts"]
    strict = cli("render", "-", "--strict", input=agent["system_prompt"], ok=False)
    assert strict.returncode == 1 and "self" in strict.stderr

    first = cli("docs", "pkg:nenjo-ai.packages.knowledge.core", "--limit", "40")
    assert "docs 1-40 of 46; --offset 40 for more" in first.stderr and "resources.agents" in first.stdout
    rest = json.loads(cli("docs", "pkg:nenjo-ai.packages.knowledge.core", "--offset", "40", "--json").stdout)
    assert rest["total"] == 46 and len(rest["docs"]) == 6

    hits = json.loads(cli("search", "--all", "write discipline", "--json").stdout)
    assert {"pkg:nenjo-ai.packages.context.operations", "pkg:nenjo-ai.packages.knowledge.core"} <= \
        {h["pack"] for h in hits}
    assert hits[0]["selector"] == "write_discipline"

    target = tmp_path / "ops"
    exported = json.loads(cli("pack", "export", "pkg:nenjo-ai.packages.context.operations", str(target),
                              "--json").stdout)
    assert exported["docs"] == 2 and (target / "manifest.yaml").is_file()
    again = cli("pack", "add", str(target), "--as-lib", "ops", "--defer-embeddings", "--json")
    assert json.loads(again.stdout)[0]["docs"] == 2
