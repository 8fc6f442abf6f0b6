"""Shared fixtures: real workspaces on real SQLite files, the real embedding model, the example packs."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.pg_server import pg_server, pg_url  # noqa: F401  (session PostgreSQL server fixtures)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PACKS = EXAMPLES / "packs"
CLI = [sys.executable, "-m", "agentcontext.cli"]

os.environ.setdefault("HYPOTHESIS_PROFILE", "ci")


@pytest.fixture
def ws(tmp_path):
    """A fresh workspace on a real SQLite file."""
    from agentcontext.workspace import Workspace

    workspace = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    yield workspace
    workspace.close()


@pytest.fixture
def write_pack(tmp_path):
    """Write a pack folder from {selector: (deps, body)} or full doc dicts; returns its path."""
    import yaml

    def write(slug: str, docs: dict, selector: str | None = None, folder: Path | None = None) -> Path:
        root = folder or tmp_path / f"pack-{slug}"
        (root / "docs").mkdir(parents=True, exist_ok=True)
        entries = []
        for sel, spec in docs.items():
            if isinstance(spec, tuple):
                deps, body = spec
                spec = {"related": [{"type": "depends_on", "target": d} for d in deps], "body": body}
            body = spec.pop("body", f"Body of {sel}.")
            path = f"docs/{sel.replace('.', '/')}.md"
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(body, encoding="utf-8")
            entries.append({"selector": sel, "source_path": path, "title": spec.pop("title", sel.title()),
                            "summary": spec.pop("summary", f"About {sel}."), **spec})
        manifest = {"schema": "nenjo.knowledge.v1", "slug": slug,
                    "manifest": {"name": slug, "pack_id": slug, "docs": entries}}
        if selector:
            manifest["manifest"]["selector"] = selector
        (root / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
        return root

    return write


# --- several workers (pytest-xdist, `make test`): the slowest files first, a line per test file -----------------

# The files that took longest (wall seconds per file from session 18's `--durations=0` run of the whole suite on two
# workers, at load 5-10 on the 2-core machine; each file of 20 s and more, slowest first; then the
# rest of the earlier list). Under xdist each file runs
# whole on one worker and files are handed out in collection order (`--no-loadscope-reorder`), so these go first and
# the last minute is not one worker finishing a long file alone (test_mpnet_int8.py, 161 s there, was not listed and
# started at 940 s of 1,386). Only the order changes; a file missing here runs after them, in its usual place.
SLOW_FILES = ("test_mpnet_int8.py", "test_conformance_shards.py", "test_parity.py", "test_examples.py",
              "test_mcp_inspector.py", "test_server_rank.py", "test_operations.py", "test_embed_models.py",
              "test_web_browser.py", "test_index_files.py", "test_graph_oracle.py", "test_precedent_scope.py",
              "test_pg_shards.py", "test_conformance_postgres.py", "test_embed_fusion.py", "test_memory_cli.py",
              "test_cli_habits.py", "test_erasure_bytescan.py", "test_pg_shard_commit.py", "test_mcp_fuzz.py",
              "test_cli_knowledge.py", "test_cli_build.py", "test_pg_prewarm.py", "test_examples_frameworks.py",
              "test_embed_batching.py", "test_import_safety.py", "test_cli_literal.py", "test_pg_bulk.py",
              "test_locomo.py", "test_text_stats_scope.py", "test_node2vec.py", "test_memory_writes.py",
              "test_pg_replicas.py", "test_record_ids.py", "test_layers.py", "test_graph_doors.py",
              "test_memory_postgres.py", "test_access_interfaces.py", "test_pg_delta.py", "test_access_paths.py",
              "test_cli_store.py", "test_nenjo_cli.py", "test_graph_algorithms.py", "test_mcp_stdio_frames.py",
              "test_existence_oracle.py", "test_packs.py", "test_langgraph.py", "test_mcp_transports.py",
              "test_postgres_concurrency.py", "test_store_postgres.py", "test_memory_reliability.py",
              "test_memory_chains.py", "test_mcp_config.py", "test_versions.py")


def pytest_collection_modifyitems(config, items) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts the same way
        rank = {name: i for i, name in enumerate(SLOW_FILES)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its order


class FileProgress:
    """On the xdist controller: one line per test file once all its tests have reported, with its outcomes, the
    seconds they took and the suite's progress; the dots of passing tests are left out (failures still show)."""

    def __init__(self, reporter) -> None:
        from collections import Counter, defaultdict

        self.reporter = reporter
        self.totals: Counter = Counter()
        self.done: Counter = Counter()
        self.outcomes: dict = defaultdict(Counter)
        self.seconds: Counter = Counter()
        self.failed: set = set()
        self.finished = 0

    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        if not self.totals:  # every worker collects the same tests
            self.totals.update(nodeid.split("::")[0] for nodeid in ids)

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report):
        if report.when == "call" and report.passed and not hasattr(report, "wasxfail"):
            return "passed", "", "PASSED"
        return None

    def pytest_runtest_logreport(self, report) -> None:
        path = report.nodeid.split("::")[0]
        self.seconds[path] += report.duration
        if report.failed:
            self.failed.add(report.nodeid)
        if report.when == "call" or (report.when == "setup" and not report.passed):
            outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
            self.outcomes[path][outcome] += 1
        if report.when != "teardown":
            return
        self.done[path] += 1
        self.finished += 1
        if self.done[path] == self.totals.get(path):
            counts = self.outcomes[path]
            if any(n.startswith(path + "::") for n in self.failed):
                counts["failed"] = max(counts["failed"], 1)
            told = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
            share = 100 * self.finished // max(sum(self.totals.values()), 1)
            self.reporter.write_line(f"{path}: {told} in {self.seconds[path]:.1f} s [{share:3d}%]")


def compile_package() -> None:
    """Byte-compile the package under test, once per session, before any test starts a process. With
    PYTHONDONTWRITEBYTECODE=1 (set on this machine) nothing else writes the .pyc files of a checkout, so every CLI,
    MCP server and worker process the suite starts compiled each module it imports from source again (~0.35 CPU s
    for `agentcontext --version`, more for a command). compileall only rewrites files older than their source."""
    import compileall

    import agentcontext

    compileall.compile_dir(Path(agentcontext.__file__).parent, quiet=1)


@pytest.hookimpl(trylast=True)  # after the terminal reporter is registered
def pytest_configure(config) -> None:
    if not hasattr(config, "workerinput"):  # the one process that runs the session (not an xdist worker)
        compile_package()
    from tests import cpu_report

    cpu_report.register(config)  # per-file CPU seconds, when AGENTCONTEXT_CPU_REPORT names a file
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            config.pluginmanager.register(FileProgress(reporter), "agentcontext-file-progress")
