"""Install a generated 10,000-doc pack with embeddings (target <= 90 s) and time search_knowledge on it
(target median <= 20 ms, each query new: its embedding is part of the call; repeated queries are shown
apart). Run: .venv/bin/python benchmarks/packs.py [--docs 10000]
"""
from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import median, ms, p95, report  # noqa: E402

from agentcontext.knowledge.packs import install_folder  # noqa: E402
from agentcontext.knowledge.tools import search_knowledge  # noqa: E402
from agentcontext.workspace import Workspace  # noqa: E402

SUBJECTS = ["billing", "invoices", "refunds", "accounts", "identity", "sessions", "tokens", "agents", "prompts",
            "tools", "memory", "policies", "audits", "exports", "imports", "search", "indexes", "backups",
            "alerts", "quotas", "webhooks", "teams", "roles", "projects", "deployments", "queues", "caches"]
ASPECTS = ["overview", "rules", "limits", "errors", "lifecycle", "migration", "api", "security", "faq", "design"]
VERBS = ["create", "validate", "retry", "expire", "archive", "approve", "reject", "notify", "sync", "rotate"]


def generate(root: Path, n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    (root / "docs").mkdir(parents=True)
    docs, queries = [], []
    for i in range(n):
        subject, aspect = SUBJECTS[i % len(SUBJECTS)], ASPECTS[(i // len(SUBJECTS)) % len(ASPECTS)]
        selector = f"{subject}.{aspect}_{i}"
        verbs = rng.sample(VERBS, 3)
        body = (f"# {subject.title()} {aspect}\n\nThis document covers how the platform handles {subject} "
                f"({aspect}). Agents {verbs[0]} {subject} records, then {verbs[1]} them when limits are reached; "
                f"operators {verbs[2]} stale items nightly. Reference number {i}.\n")
        (root / "docs" / f"d{i}.md").write_text(body, encoding="utf-8")
        related = [{"type": "depends_on", "target": docs[j]["selector"]} for j in
                   sorted({rng.randrange(i) for _ in range(2)})] if i > 10 else []
        docs.append({"selector": selector, "source_path": f"docs/d{i}.md", "title": f"{subject.title()} {aspect}",
                     "summary": f"How {subject} {aspect} works and when agents {verbs[0]} them.",
                     "kind": "reference", "tags": [f"topic:{subject}", f"aspect:{aspect}"], "related": related})
        if i % 97 == 0:
            queries.append(f"how do agents {verbs[0]} {subject}")
    manifest = {"schema": "nenjo.knowledge.v1", "slug": "big",
                "manifest": {"name": "Big", "pack_id": "big", "docs": docs}}
    (root / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
    return queries


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=10_000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-packs-"))
    queries = generate(tmp / "pack", args.docs)
    ws = Workspace.open(home=tmp / ".agentcontext", create=True)
    t = time.perf_counter()
    install_folder(ws, tmp / "pack")
    install_s = time.perf_counter() - t
    search_knowledge(ws, "lib:big", "warm up the model and caches")
    times, repeats = [], []
    for rep in range(3):  # the first pass embeds each query; later passes find it in the workspace's LRU
        for q in queries:
            t = time.perf_counter()
            hits = search_knowledge(ws, "lib:big", q)
            (repeats if rep else times).append(time.perf_counter() - t)
            assert hits
    filtered = []
    for q in queries:
        t = time.perf_counter()
        search_knowledge(ws, "lib:big", q + " (filtered)", tags=["aspect:rules"])  # a new query: embedded
        filtered.append(time.perf_counter() - t)
    report("packs", {
        "docs": args.docs, "install_with_embeddings_seconds": round(install_s, 1), "install_target": "<= 90 s",
        "search_queries": len(times), "search_median": ms(median(times)), "search_p95": ms(p95(times)),
        "search_target": "median <= 20 ms", "search_repeated_query_median": ms(median(repeats)),
        "search_with_tag_filter_median": ms(median(filtered)),
    })
    ws.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
