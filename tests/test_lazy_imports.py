"""What ``import agentcontext`` and the CLI's ``--version`` / ``--help`` load: the package root exports its names
lazily and cli/ imports the services inside its commands, so these stay fast (each CLI process the suite starts
paid ~0.45 CPU s when they loaded everything)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import agentcontext

# The embedding runtime, the store and the other heavy third-party modules a bare process must not load.
HEAVY = ("agentcontext.store", "agentcontext.embed", "agentcontext.workspace", "agentcontext.context",
         "agentcontext.memory", "agentcontext.knowledge", "agentcontext.decisions", "agentcontext.mcp_server",
         "agentcontext.web", "sqlite3", "numpy", "onnxruntime", "tokenizers", "pydantic", "httpx", "yaml", "jinja2",
         "starlette", "mcp")

RUN = """
import json, sys
sys.argv = ["agentcontext", *json.loads(sys.argv[1])]
try:
    {body}
except SystemExit as exc:
    assert not exc.code, exc.code
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def loaded_by(body: str, *args: str) -> tuple[str, set[str]]:
    proc = subprocess.run([sys.executable, "-c", RUN.format(body=body), json.dumps(args)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    modules = json.loads(proc.stderr.rsplit("MODULES ", 1)[1])
    return proc.stdout, set(modules)


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("memory", "--help")])
def test_cli_version_and_help_load_neither_the_store_nor_the_embedding_runtime(args):
    stdout, modules = loaded_by("from agentcontext.cli import main; main()", *args)
    assert ("agentcontext 0.1.0" if args == ("--version",) else "Usage:") in stdout
    assert not [m for m in HEAVY if m in modules]


def test_import_agentcontext_loads_no_service():
    _, modules = loaded_by("import agentcontext")
    assert not [m for m in HEAVY if m in modules]
    assert not [m for m in modules if m.startswith("agentcontext.") and m != "agentcontext.errors"]


def test_every_exported_name_resolves_to_its_defining_class():
    from agentcontext import AgentContext
    from agentcontext.context import AgentContext as defined

    assert AgentContext is defined
    assert len(set(agentcontext.__all__)) == len(agentcontext.__all__) == 28  # + RetrievalConfig (issue 27 s5)
    for name in agentcontext.__all__:
        value = getattr(agentcontext, name)
        assert value.__name__ == name and value.__module__.startswith("agentcontext.")
    assert set(agentcontext.__all__) <= set(dir(agentcontext))
    assert "__version__" in dir(agentcontext)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        agentcontext.NoSuchThing  # noqa: B018
    from agentcontext import memory  # a submodule, not an export, still imports

    assert memory.AgentMemory is agentcontext.AgentMemory


def test_a_command_coerces_its_options_without_pydantic(tmp_path):
    """A plain command (cli/build.py) coerces its values with click alone: no pydantic (Typer built an adapter per
    option, ~0.28 CPU s a process), and no Typer at all."""
    stdout, modules = loaded_by("from agentcontext.cli import main; main()", "--home", str(tmp_path / "ws"), "init",
                                "--json")
    assert json.loads(stdout)["store"].startswith("sqlite:")
    assert "agentcontext.store" in modules and "pydantic" not in modules and "typer" not in modules


def test_a_graph_and_the_memory_service_load_neither_igraph_nor_yaml():
    """igraph loads when an algorithm runs (graph/extras.py only finds it); YAML when memories go to or come from
    Markdown files (memory/io.py)."""
    _, modules = loaded_by("from agentcontext.graph import ContextGraph; ContextGraph(); import agentcontext.memory")
    assert "agentcontext.memory.service" in modules
    assert not {"igraph", "yaml", "agentcontext.memory.markdown"} & modules
