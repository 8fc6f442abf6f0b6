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
