"""Entities found in text (issue 11 s3): memories linked per second against 10,000 known entities.

Usage: .venv/bin/python benchmarks/entities.py [--entities 10000] [--memories 20000] [--runs 5]

Target: >= 5,000 memories/s against 10,000 known entities. Measured in the same run:
- scan: the matcher alone (engine/mentions.py) over the memory texts;
- link: AgentMemory.link_mentions over memories already stored (scan + reading existing links + writing
  the ``mentions`` edges to a SQLite file), the bulk path for existing memories;
- store: batch_store with entity linking on against off (vectors supplied, so the model's time is left out:
  the difference is what linking costs at store time);
- baseline: the EntityLinker's earlier way of finding names in text (one regular expression per entity,
  ``EntityLinker._find_mentions``'s loop), on a sample, as a ratio.
Figures are medians of --runs runs on a shared 2-core machine while other engineers' work ran.
"""
from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import report  # noqa: E402

from agentcontext import AgentMemory, ContextGraph, Workspace  # noqa: E402
from agentcontext.engine.names import normalize  # noqa: E402
from agentcontext.graph import mentions  # noqa: E402

FIRST = ["alice", "bob", "carol", "dmitri", "erin", "farah", "gwen", "hiro", "ines", "jamal", "kofi", "lena",
         "marco", "nadia", "oscar", "priya", "quinn", "rosa", "sven", "tara", "umar", "vera", "wei", "xena"]
LAST = ["smith", "ng", "okafor", "garcia", "muller", "rossi", "tanaka", "kowalski", "haddad", "silva", "berg",
        "novak", "dubois", "khan", "ivanova", "lee", "moreau", "park", "santos", "weber"]
WORDS = ("the team met on tuesday to review the quarterly plan and agreed that the launch should move to "
         "march because the supplier was late with parts we also discussed hiring budget travel and the new "
         "office lease which needs a decision before the end of the month").split()
SUFFIX = ["Inc.", "Corp", "Ltd", "GmbH", "LLC", ""]


def names(n: int, rng: random.Random) -> list[tuple[str, str]]:
    out, seen = [], set()
    syll = ["ac", "me", "zo", "ri", "ta", "lo", "ven", "dra", "qui", "nex", "ora", "pel", "tus", "kin", "bar"]
    while len(out) < n:
        if len(out) % 2:
            name = f"{rng.choice(FIRST).title()} {rng.choice(LAST).title()} {rng.choice(syll).upper()}{len(out)}"
            kind = "person"
        else:
            stem = "".join(rng.choice(syll) for _ in range(rng.randint(2, 3))).title() + str(len(out))
            name = f"{stem} {rng.choice(['Labs', 'Systems', 'Foods', 'Bank', 'Motors'])}"
            kind = "company"
        if name not in seen:
            seen.add(name)
            out.append((name, kind))
    return out


def texts(n: int, ents: list[tuple[str, str]], rng: random.Random) -> list[str]:
    out = []
    for _ in range(n):
        words = rng.sample(WORDS, 18)
        for _ in range(rng.randint(1, 3)):
            name, kind = rng.choice(ents)
            surface = f"{name} {rng.choice(SUFFIX)}".strip() if kind == "company" else name
            words.insert(rng.randrange(len(words)), surface)
        out.append(" ".join(words).capitalize() + ".")
    return out


def baseline_find(ents: list[tuple[str, str]], text: str) -> int:
    """The EntityLinker's earlier scan: one regex per entity name over the normalised text."""
    lowered = normalize(text)
    return sum(1 for name, _ in ents if re.search(rf"\b{re.escape(normalize(name))}\b", lowered))


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=10_000)
    ap.add_argument("--memories", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(7)
    ents = names(args.entities, rng)
    docs = texts(args.memories, ents, rng)
    print(f"{args.entities:,} known entities, {args.memories:,} memories; runs={args.runs}; shared 2-core machine")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.open(home=Path(tmp) / ".agentcontext", create=True)
        graph = ContextGraph(workspace=ws)
        graph.add_nodes({"id": f"e{i}", "type": kind, "properties": {"name": name}}
                        for i, (name, kind) in enumerate(ents))
        t = time.perf_counter()
        m = mentions.matcher(graph)
        build_s = time.perf_counter() - t
        print(f"matcher build: {build_s:.2f} s for {len(m):,} entities")

        scan = []
        found = 0
        for _ in range(args.runs):
            t = time.perf_counter()
            found = sum(len(m.scan(d)) for d in docs)
            scan.append(time.perf_counter() - t)
        scan_rate = args.memories / median(scan)
        print(f"scan: {scan_rate:,.0f} memories/s ({found:,} mentions found)")

        dim = ws.embedder.dimension
        vecs = np.random.default_rng(1).standard_normal((len(docs), dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        plain = AgentMemory(workspace=ws, namespace="plain", max_memory_size=None, context_turns=False)
        ids = plain.batch_store([{"content": d, "vector": v} for d, v in zip(docs, vecs)])
        linked_mem = AgentMemory(workspace=ws, namespace="plain", max_memory_size=None, context_turns=False,
                                 entity_graph=graph)
        link = []
        made = 0
        for _ in range(args.runs):
            ws.store.retract_edges([e.id for e in ws.store.edges(src=ids, type=mentions.MENTIONS)])
            t = time.perf_counter()
            made = linked_mem.link_mentions()["linked"]
            link.append(time.perf_counter() - t)
        link_rate = args.memories / median(link)
        print(f"link existing memories (scan + edges written): {link_rate:,.0f} memories/s ({made:,} links)")

        step = 1000
        sample = [{"content": d, "vector": v} for d, v in zip(docs[:step], vecs[:step])]
        on, off = [], []
        for r in range(args.runs):
            a = AgentMemory(workspace=ws, namespace=f"on{r}", max_memory_size=None, context_turns=False,
                            entity_graph=graph)
            b = AgentMemory(workspace=ws, namespace=f"off{r}", max_memory_size=None, context_turns=False)
            t = time.perf_counter()
            a.batch_store(sample)
            on.append(time.perf_counter() - t)
            t = time.perf_counter()
            b.batch_store(sample)
            off.append(time.perf_counter() - t)
        linking_cost = max(median(on) - median(off), 1e-9)
        store_rate = step / linking_cost
        print(f"store 1,000 (vectors supplied): {median(on):.3f} s linked vs {median(off):.3f} s not; "
              f"linking at store time: {store_rate:,.0f} memories/s")

        sample_n = 50
        t = time.perf_counter()
        for d in docs[:sample_n]:
            baseline_find(ents, d)
        base_rate = sample_n / (time.perf_counter() - t)
        print(f"baseline (one regex per entity, {sample_n} memories): {base_rate:,.1f} memories/s")
        print(f"ratio scan/baseline: {scan_rate / base_rate:,.0f}x; target >= 5,000 memories/s: "
              f"scan {'met' if scan_rate >= 5000 else 'MISSED'}, link {'met' if link_rate >= 5000 else 'MISSED'}")
        report("entities", {
            "entities": args.entities, "memories": args.memories, "runs": args.runs,
            "matcher_build_s": round(build_s, 3),
            "scan_memories_per_s": round(scan_rate), "link_existing_memories_per_s": round(link_rate),
            "store_time_linking_memories_per_s": round(store_rate),
            "store_1000_s": {"linked": round(median(on), 3), "not_linked": round(median(off), 3)},
            "baseline_regex_per_entity_memories_per_s": round(base_rate, 1),
            "ratio_scan_to_baseline": round(scan_rate / base_rate), "target_memories_per_s": 5000,
            "mentions_found": found, "links_written": made,
            "note": "medians; shared 2-core machine under load",
        }, quiet=True)
        ws.close()


if __name__ == "__main__":
    main()
