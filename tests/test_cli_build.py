"""The CLI without Typer (issue 27, section 2): the plain commands (cli/build.py) and the declared ones refuse a bad
command line as they always did (exit 2, click's message naming the flag), take their values in click's types, and
the declared decision commands keep their exit codes; each through the real CLI in a subprocess."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from .conftest import CLI


def cli(home, *args):
    return subprocess.run([*CLI, "--home", str(home), *map(str, args)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    target = tmp_path_factory.mktemp("build") / ".agentcontext"
    assert cli(target, "init").returncode == 0
    return target


@pytest.mark.parametrize("args, message", [
    (("policy", "add", "p1"), "Missing option '--name'"),  # plain: a required option
    (("decision", "show"), "Missing argument 'DECISION_ID'"),  # plain: a required argument
    (("decision", "list", "--limit", "0"), "0 is not in the range x>=1"),  # plain: an int with min=1
    (("graph", "neighbors", "x", "--hops", "many"), "'many' is not a valid integer"),
    (("decision", "record", "refund", "a laptop"), "Missing option '--outcome'"),  # declared: required in its model
])
def test_a_bad_command_line_exits_2_naming_the_flag(home, args, message):
    proc = cli(home, *args)
    assert proc.returncode == 2 and message in proc.stderr, (proc.returncode, proc.stderr)
    as_json = cli(home, *args, "--json")
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["error"]["type"] == "UsageError"


def test_plain_and_declared_decision_commands_work_together(home):
    """``decision record`` (declared), ``decision list`` (plain), ``policy add`` (plain) and ``policy check``
    (declared: exits 1 on a violation) on one graph; --reasoning may be left out on the command line."""
    rec = cli(home, "decision", "record", "refund", "laptop returned after 60 days", "--outcome", "denied",
              "--confidence", "0.4", "--entity", "laptop", "--meta", "days=60", "--json")
    assert rec.returncode == 0, rec.stderr
    did = json.loads(rec.stdout)["decision_id"]
    listed = json.loads(cli(home, "decision", "list", "--json").stdout)["decisions"]
    assert [(d["decision_id"], d["reasoning"], d["metadata"]["days"]) for d in listed] == [(did, "", 60)]
    added = cli(home, "policy", "add", "sure", "--name", "Be sure", "--category", "refund", "--rule",
                "min_confidence=0.8", "--json")
    assert added.returncode == 0 and json.loads(added.stdout)["rules"] == {"min_confidence": 0.8}
    check = cli(home, "policy", "check", did, "sure", "--json")
    assert check.returncode == 1 and json.loads(check.stdout)["compliant"] is False
    human = cli(home, "policy", "check", did, "sure")
    assert human.returncode == 1 and "VIOLATION" in human.stdout


def test_groups_list_commands_in_their_order_and_json_objects_are_not_flags(home):
    listed = cli(home, "checkpoint", "-h").stdout
    assert listed.index("take") < listed.index("list") < listed.index("diff")
    for path in (("memory", "store"), ("memory", "retrieve"), ("decision", "record")):
        shown = cli(home, *path, "-h").stdout
        assert "--metadata" not in shown and "--filters" not in shown, path  # --meta builds them
