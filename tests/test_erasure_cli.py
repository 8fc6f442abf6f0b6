"""``agentcontext erase`` in a subprocess: the same receipt as the library (legs, mentions, copies, physical)."""
from __future__ import annotations

import json
import subprocess
import sys

from agentcontext import AgentMemory, ContextGraph, VectorStore
from agentcontext.workspace import Workspace


def cli(home, *args):
    proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_cli_erase_prints_the_whole_receipt_and_erases_mentions_on_request(tmp_path):
    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    graph = ContextGraph(workspace=ws)
    graph.add_node("customer-4471", "customer", properties={"name": "Jane Roe"})
    graph.add_node("customer-9", "customer", properties={"name": "John Doe"})
    memory = AgentMemory(vector_store=VectorStore(workspace=ws))
    linked = memory.store("Refund asked", metadata={"entities": ["customer-4471"]})
    named = memory.store("Jane Roe called")
    other = memory.store("John Doe called")
    memory.export(format="json", destination=tmp_path / "backup.json")
    ws.close()
    human = cli(home, "erase", "customer-4471", "--reason", "GDPR")
    assert "complete" in human and "physical" in human and "may remain:" in human
    assert f"mention {named}" in human and "kept" in human and "backup.json" in human
    receipt = json.loads(cli(home, "erase", "customer-9", "--mentions", "--json"))
    assert receipt["complete"] and receipt["stores"]["graph"]["status"] == "erased"
    assert receipt["stores"]["mentions"]["memories"] == 1 and receipt["physical"]["status"] == "clean"
    assert [m["id"] for m in receipt["mentions"]] == [other] and receipt["mentions"][0]["erased"]
    listed = json.loads(cli(home, "receipts", "--json"))
    assert [r["entity_id"] for r in listed] == ["customer-4471", "customer-9"]
    assert all("physical" in r and "mentions" in r for r in listed)
    ws = Workspace.open(home=home)
    assert ws.store.get_node(linked) is None and ws.store.get_node(other) is None
    assert ws.store.get_node(named) is not None  # listed, kept: erased only with --mentions
    ws.close()


def test_cli_erase_mentions_finds_a_name_held_only_in_metadata(tmp_path):
    """``memory store -m customer_name="Jane Roe"``: the name is in no text, only a metadata value."""
    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    ContextGraph(workspace=ws).add_node("customer-4471", "customer", properties={"name": "Jane Roe"})
    ws.close()
    stored = json.loads(cli(home, "memory", "store", "Card blocked after the call", "-m", "customer_name=Jane Roe",
                            "--json"))
    mid = stored["id"] if isinstance(stored, dict) else stored
    receipt = json.loads(cli(home, "erase", "customer-4471", "--mentions", "--json"))
    assert [(m["id"], m["via"], m["erased"]) for m in receipt["mentions"]] == [(mid, ["props"], True)]
    ws = Workspace.open(home=home)
    assert ws.store.get_node(mid, include_retracted=True) is None and not ws.store.node_versions(mid)
    ws.close()
