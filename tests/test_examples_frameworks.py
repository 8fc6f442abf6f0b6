"""The framework examples (examples/openai_agents_session.py, langchain_retriever.py, llamaindex_memory.py) run, and
each is the code its docs page shows (integrations.openai_agents, .langchain, .llamaindex in the docs pack), so a new
user can work from the page alone."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from .conftest import EXAMPLES, PACKS

GUIDE = PACKS / "agentcontext-docs" / "guide" / "docs" / "integrations"
CASES = {  # example: (its page, the framework module, what its output shows)
    "openai_agents_session": ("openai_agents.md", "agents",
                              ["answer: Read accounts and membership first",
                               '"order": ["accounts", "membership", "invitations"]',
                               "I am Ana and I run the Berlin team account.", "session items: 7"]),
    "langchain_retriever": ("langchain.md", "langchain_core",
                            ["lib:handbook#invitations", "Ana asked how invitations",
                             "flash order: ['accounts', 'membership', 'invitations']"]),
    "llamaindex_memory": ("llamaindex.md", "llama_index.core",
                          ["Sources for the question at the end", "[1] doc lib:handbook#invitations",
                           "lib:handbook#accounts"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_example_is_its_docs_pages_code_and_runs(name, tmp_path):
    page, module, shown = CASES[name]
    pytest.importorskip(module)
    source = (EXAMPLES / f"{name}.py").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", (GUIDE / page).read_text(encoding="utf-8"), flags=re.S)
    assert blocks == [source[source.index("\nimport ") + 1:]], f"{page} must show examples/{name}.py"
    shutil.copy(EXAMPLES / f"{name}.py", tmp_path)  # alone, as a new user would have it: it needs no other file
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTCONTEXT_", "OPENAI_"))}
    for run in (1, 2):  # a second run in the same folder works too
        proc = subprocess.run([sys.executable, str(tmp_path / f"{name}.py"), str(tmp_path)], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        for text in shown:
            assert text in proc.stdout, (run, text, proc.stdout)
