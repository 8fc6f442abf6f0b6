"""An edge to a missing doc is warned about when a pack is installed (issue 26 section 4), not silent: ``pack add``
prints a warning on stderr (with ``--json`` too) and its result lists it under ``missing_targets`` with the closest
existing selectors; the pack still installs (lint reports the same edge)."""
from __future__ import annotations

import json
import os
import subprocess

from agentcontext.knowledge import packs

from .conftest import CLI


def test_install_lists_edges_to_missing_docs(ws, write_pack):
    folder = write_pack("typo", {"basics": ((), "Basics."), "guide": (("basic", "basics"), "The guide.")})
    [result] = packs.install_folder(ws, folder)
    assert result["missing_targets"] == [{"selector": "guide", "type": "depends_on", "target": "basic",
                                          "did_you_mean": ["basics"]}]
    clean = write_pack("clean", {"basics": ((), "Basics."), "guide": (("basics",), "The guide.")})
    assert packs.install_folder(ws, clean)[0]["missing_targets"] == []


def test_pack_add_warns_on_stderr_with_and_without_json(write_pack, tmp_path):
    folder = write_pack("typo", {"basics": ((), "Basics."), "guide": (("basic",), "The guide.")})
    env = {**os.environ, "AGENTCONTEXT_HOME": str(tmp_path / ".agentcontext")}
    for extra in ([], ["--json"]):
        proc = subprocess.run([*CLI, "pack", "add", str(folder), "--defer-embeddings", *extra], capture_output=True,
                              text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "warning: lib:typo guide: depends_on edge to missing doc 'basic' (did you mean basics?)" in proc.stderr
        if extra:
            assert json.loads(proc.stdout)[0]["missing_targets"][0]["target"] == "basic"
