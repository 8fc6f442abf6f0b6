"""Deeply nested input is our ValidationError, never a raw RecursionError (issue 26 section 2): ``memory import`` of
deeply nested JSON (the CLI with ``--json`` too), ``AgentMemory.import_data`` and a memory's metadata when stored."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from agentcontext import AgentMemory, VectorStore
from agentcontext.errors import ValidationError

from .conftest import CLI


def nested(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.fixture
def mem():
    return AgentMemory(vector_store=VectorStore(backend="inmemory", dimension=384))


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,
    '[{"content": "x", "metadata": {"k": ' + "[" * 5000 + "]" * 5000 + "}}]",
    '{"memories": [{"content": "x", "metadata": {"k": ' + "[" * 900 + "]" * 900 + "}}]}",
])
def test_import_data_of_deep_json_is_a_validation_error(mem, text):
    with pytest.raises(ValidationError, match="nested"):
        mem.import_data(text, format="json")
    assert mem.count() == 0


def test_deep_metadata_is_refused_in_a_dict_import_and_a_store(mem):
    with pytest.raises(ValidationError, match="nested more than 64 levels"):
        mem.import_data([{"content": "x", "metadata": {"k": nested(100_000)}}], format="dict")
    with pytest.raises(ValidationError, match="nested more than 64 levels"):
        mem.store("hello", metadata={"k": nested(100_000)})
    mem.store("hello", metadata={"k": nested(10)})  # moderate nesting still works
    assert mem.count() == 1


def test_memory_import_cli_of_deep_json_answers_with_our_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    env = {**os.environ, "AGENTCONTEXT_HOME": str(tmp_path / "ws")}
    subprocess.run([*CLI, "init", "--json"], capture_output=True, text=True, timeout=120, env=env, check=True)
    proc = subprocess.run([*CLI, "memory", "import", str(path), "--json"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["error"]["type"] == "ValidationError"
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr
