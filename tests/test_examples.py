"""The README's examples and examples/demo.py are executed, so the docs stay true."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from .conftest import EXAMPLES, ROOT


def _blocks(lang: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _sandbox(tmp_path):
    shutil.copytree(EXAMPLES / "packs", tmp_path / "examples" / "packs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCONTEXT_")}
    return env


def test_readme_python_blocks(tmp_path):
    env = _sandbox(tmp_path)
    for block in _blocks("python"):
        proc = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr


def test_readme_cli_tour(tmp_path):
    env = _sandbox(tmp_path)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    # nothing is prepared here: the tour runs in an empty folder as a new user's would (it once needed an intro.md
    # that only this test wrote)
    tour = [b for b in _blocks("sh") if "agentcontext init" in b][0]
    admin = [b for b in _blocks("sh") if "token create" in b][0]
    for line in (tour + admin).splitlines():
        command = line.split("  #")[0].strip()
        if not command or "serve mcp" in command:  # the servers are exercised by tests/test_mcp_transports.py
            continue
        proc = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0 or command.startswith("agentcontext lint"), (command, proc.stderr)


def test_demo_runs(tmp_path):
    env = _sandbox(tmp_path)
    proc = subprocess.run([sys.executable, str(EXAMPLES / "demo.py"), str(tmp_path / "demo")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Identity -> Account -> Membership -> Invitations" in proc.stdout
