"""Pack install speed (issue 9 s3: 10,000 docs with embeddings <= 45 s, was 74-80 s) and search_knowledge on
the installed pack (median <= 20 ms; each query new, so its embedding is part of the call; repeated queries
are shown apart), beside the old path measured in the same run, as ratios.

The old path (the baseline) is kept runnable here: ``OldMiniLM`` is the embedder as it was (one model run
spread over two spinning threads, batches of 64 sorted only within each call of 256 texts, padded to the
batch's longest) and ``old_embed_missing`` the loop that called it, after the same install transaction.
New and old installs alternate so a busy machine slows both alike; CPU seconds are printed beside wall time.

``--before-src DIR`` also times the code before a change (a source tree, e.g. ``git archive main`` unpacked: DIR/src
is put first on its path), each install of both in a fresh process, the two alternating, so the change is
measured against the code it replaces in the same run ("before" in the output, with its own ratio).

``--timeline`` runs one install of the new path with each phase timed (start, end, calls, wall and CPU of the thread
that ran it: reading the manifest, building docs, hashing, tokenizing, the model runs, the writes, the commit) and
the model threads' busy share second by second, to show what is on the critical path and where a core is idle.

Run: .venv/bin/python benchmarks/packs.py [--docs 10000] [--runs 3] [--no-baseline] [--sweep] [--before-src DIR]
     [--timeline]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import median, ms, p95, report  # noqa: E402

from agentcontext.embed.base import MiniLMEmbedder  # noqa: E402

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


class OldMiniLM:
    """The embedder before issue 9 s3, verbatim apart from the class name (the baseline)."""

    name = MiniLMEmbedder.name
    dimension = 384
    max_tokens = 256

    def __init__(self, batch_size: int = 64, threads: int | None = None) -> None:
        import threading

        import onnxruntime as ort
        from tokenizers import Tokenizer

        from agentcontext.embed.model_files import default_model, default_tokenizer

        model, tok = default_model(), default_tokenizer()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(tok))
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.enable_padding()
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def embed(self, texts):
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                idx = order[start: start + self.batch_size]
                encs = self._tokenizer.encode_batch([texts[i] or " " for i in idx])
                ids = np.array([e.ids for e in encs], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
                hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                                  "token_type_ids": np.zeros_like(ids)})[0]
                m = mask[..., None].astype(np.float32)
                pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
                pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
                out[idx] = pooled
        return out


def old_embed_missing(store, embedder, namespace, batch: int = 256) -> int:
    """embed/cache.py:embed_missing before issue 9 s3: store order, 256 texts a call, no overlap."""
    missing = store.missing_vectors(embedder.name, namespace)
    for start in range(0, len(missing), batch):
        part = missing[start: start + batch]
        vecs = embedder.embed([t for _, t in part])
        store.put_vectors({h: v for (h, _), v in zip(part, vecs)}, embedder.name)
    return len(missing)


def install_new(folder: Path, home: Path) -> tuple[Workspace, float, float]:
    ws = Workspace.open(home=home, create=True)
    ws.embedder.embed(["load the model before the clock starts"])
    wall, cpu = time.perf_counter(), time.process_time()
    install_folder(ws, folder)
    return ws, time.perf_counter() - wall, time.process_time() - cpu


def install_old(folder: Path, home: Path) -> tuple[Workspace, float, float]:
    ws = Workspace.open(home=home, create=True, embedder=OldMiniLM())
    ws.embedder.embed(["load the model before the clock starts"])
    wall, cpu = time.perf_counter(), time.process_time()
    results = install_folder(ws, folder, defer_embeddings=True)
    for result in results:
        old_embed_missing(ws.store, ws.embedder, result["pack"])
    return ws, time.perf_counter() - wall, time.process_time() - cpu


def search_figures(ws: Workspace, queries: list[str]) -> dict[str, float]:
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
    return {"median": median(times), "p95": p95(times), "repeated": median(repeats), "filtered": median(filtered)}


def min_cosine(a: Workspace, b: Workspace) -> float:
    ids_a, va = a.store.load_vectors(a.embedder.name, "lib:big")
    ids_b, vb = b.store.load_vectors(b.embedder.name, "lib:big")
    assert ids_a == ids_b, "the two installs hold different docs"
    return float((va * vb).sum(axis=1).min())


def one_text_ms(embedder, runs: int = 200) -> dict[str, str]:
    """Embedding one short text (what store() and a new query pay), p50 and p95 over ``runs`` calls."""
    text = "how do agents rotate tokens when the billing quota is reached"
    embedder.embed([text])
    times = []
    for i in range(runs):
        t = time.perf_counter()
        embedder.embed([f"{text} {i}"])
        times.append(time.perf_counter() - t)
    return {"p50": ms(median(times)), "p95": ms(p95(times))}


def sweep(folder: Path, count: int = 1024) -> dict[str, str]:
    """Texts per second (wall and CPU) of the new embedder by batch token budget, on the pack's texts."""
    from agentcontext.knowledge.package import load_packages
    from agentcontext.knowledge.packs import embed_text

    docs = load_packages(folder).packs[0].docs[:count]
    texts = [embed_text(d.title, d.summary, d.tags, d.content) for d in docs]
    embedder = MiniLMEmbedder()
    embedder.embed(texts[:32])
    out = {}
    for budget in (256, 512, 1024, 2048, 4096):
        embedder.batch_tokens = budget
        wall, cpu = time.perf_counter(), time.process_time()
        embedder.embed(texts)
        out[str(budget)] = (f"{len(texts) / (time.perf_counter() - wall):.0f}/s wall, "
                            f"{len(texts) / (time.process_time() - cpu):.0f}/s per CPU second")
    return out


def install_in_process(folder: Path, home: Path, src: Path | None) -> tuple[float, float]:
    """One install of the new path in a fresh process (``src``: the source tree it imports agentcontext from)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src / "src")] + [p for p in [env.get("PYTHONPATH")] if p])
    out = subprocess.run([sys.executable, __file__, "--child", str(folder), str(home)], env=env, check=True,
                         capture_output=True, text=True).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    if src is not None and not Path(figures["package"]).is_relative_to(src.resolve()):
        raise SystemExit(f"the 'before' process imported agentcontext from {figures['package']}, not {src}")
    return figures["wall"], figures["cpu"]


def child(folder: Path, home: Path) -> None:
    ws, wall, cpu = install_new(folder, home)
    import agentcontext

    print(json.dumps({"wall": wall, "cpu": cpu, "docs": ws.store.count_nodes(namespace="lib:big"),
                      "package": str(Path(agentcontext.__file__).parent)}))
    ws.close()


def before_figures(folder: Path, tmp: Path, runs: int, before: Path) -> dict:
    """The new path and the code before it (``before``), alternating, each install in its own process."""
    times: dict[str, list[tuple[float, float]]] = {"now": [], "before": []}
    for run in range(runs):
        for label, src in (("now", None), ("before", before)):
            wall, cpu = install_in_process(folder, tmp / f"proc-{label}{run}", src)
            times[label].append((wall, cpu))
            print(f"run {run + 1} {label} (own process): {wall:.1f} s wall, {cpu:.1f} s CPU, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
            shutil.rmtree(tmp / f"proc-{label}{run}", ignore_errors=True)
    now_s, before_s = (median([w for w, _ in times[k]]) for k in ("now", "before"))
    return {"before_src": str(before), "processes_install_seconds": round(now_s, 1),
            "processes_install_seconds_range": [round(min(w for w, _ in times["now"]), 1),
                                                round(max(w for w, _ in times["now"]), 1)],
            "processes_install_cpu_seconds": round(median([c for _, c in times["now"]]), 1),
            "before_install_seconds": round(before_s, 1),
            "before_install_seconds_range": [round(min(w for w, _ in times["before"]), 1),
                                             round(max(w for w, _ in times["before"]), 1)],
            "before_install_cpu_seconds": round(median([c for _, c in times["before"]]), 1),
            "speedup_vs_before": round(before_s / now_s, 3),
            "runs_now": [[round(w, 1), round(c, 1)] for w, c in times["now"]],
            "runs_before": [[round(w, 1), round(c, 1)] for w, c in times["before"]]}


PHASES = [  # (module, owner attribute or None, function, label)
    ("agentcontext.knowledge.packs", None, "load_packages", "read and check the manifest"),
    ("agentcontext.safe_yaml", None, "load", "  YAML"),
    ("agentcontext.knowledge.manifest", None, "resolve_source", "  resolve doc paths"),
    ("agentcontext.knowledge.manifest", None, "_read_doc", "  read doc files"),
    ("agentcontext.knowledge.packs", None, "embed_ahead", "hash and dedupe texts, start the stream"),
    ("agentcontext.embed.base", "MiniLMEmbedder", "_tokens", "tokenize"),
    ("agentcontext.embed.base", "MiniLMEmbedder", "_run", "model run"),
    ("agentcontext.knowledge.packs", None, "install_spec", "install transaction"),
    ("agentcontext.knowledge.packs", None, "doc_node", "  build doc nodes (token counts)"),
    ("agentcontext.store.sql_base", "SQLStore", "put_nodes", "  write nodes (+ text index)"),
    ("agentcontext.store.sql_base", "SQLStore", "put_edges", "  write edges"),
    ("agentcontext.store.sql_base", "SQLStore", "put_vectors", "write vectors"),
    ("agentcontext.embed.cache", "PendingVectors", "write", "wait for and write the vectors"),
    ("agentcontext.knowledge.packs", None, "embed_pack", "embed what is still missing"),
]


def timeline(folder: Path, home: Path) -> dict:
    """One install with every phase of ``PHASES`` timed (see the module's note)."""
    import functools
    import importlib
    import threading

    events: list[tuple[str, str, float, float, float]] = []
    origin = [0.0]

    def timed(fn, label):
        @functools.wraps(fn)
        def inner(*a, **k):
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                name = threading.current_thread().name
                events.append((label, "model" if name.startswith("agentcontext-embed_") else name,
                               start - origin[0], time.perf_counter() - origin[0], time.thread_time() - cpu))
        return inner

    for module, owner, name, label in PHASES:
        target = importlib.import_module(module)
        target = getattr(target, owner) if owner else target
        setattr(target, name, timed(getattr(target, name), label))
    ws = Workspace.open(home=home, create=True)
    ws.embedder.embed(["load the model before the clock starts"])
    events.clear()
    origin[0], cpu = time.perf_counter(), time.process_time()
    install_folder(ws, folder)
    wall, cpu = time.perf_counter() - origin[0], time.process_time() - cpu
    ws.close()
    phases: dict[tuple[str, str], list[float]] = {}
    for label, thread, start, end, used in events:
        row = phases.setdefault((label, thread), [start, end, 0, 0.0, 0.0])
        row[0], row[1] = min(row[0], start), max(row[1], end)
        row[2], row[3], row[4] = row[2] + 1, row[3] + end - start, row[4] + used
    busy = [0.0] * (int(wall) + 1)
    for label, _, start, end, _ in events:
        while label == "model run" and start < end:
            second = int(start)
            step = min(end, second + 1) - start
            busy[min(second, len(busy) - 1)] += step
            start += step
    print(f"{'phase':42s} {'thread':26s} {'start':>7s} {'end':>7s} {'calls':>6s} {'wall s':>8s} {'CPU s':>7s}")
    rows = sorted(phases.items(), key=lambda kv: kv[1][0])
    for (label, thread), (start, end, calls, spent, used) in rows:
        print(f"{label:42s} {thread:26s} {start:7.2f} {end:7.2f} {int(calls):6d} {spent:8.2f} {used:7.2f}")
    first_model = min((r[0] for (label, _), r in rows if label == "model run"), default=0.0)
    print(f"install {wall:.1f} s wall, {cpu:.1f} s CPU; first model run at {first_model:.2f} s; model threads busy "
          "per second (of 2): " + " ".join(f"{b:.1f}" for b in busy))
    return {"wall": round(wall, 2), "cpu": round(cpu, 2), "first_model_run_at": round(first_model, 2),
            "phases": [{"phase": label.strip(), "thread": thread, "start": round(start, 2), "end": round(end, 2),
                        "calls": int(calls), "wall": round(spent, 2), "thread_cpu": round(used, 2)}
                       for (label, thread), (start, end, calls, spent, used) in rows],
            "model_threads_busy_per_second": [round(b, 2) for b in busy]}


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        return child(Path(sys.argv[2]), Path(sys.argv[3]))
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-baseline", action="store_true", help="skip the old path")
    parser.add_argument("--sweep", action="store_true", help="also time the embedder by batch token budget")
    parser.add_argument("--before-src", type=Path, help="a source tree of the code before: also time it, "
                        "alternating, each install in its own process")
    parser.add_argument("--only-before", action="store_true", help="with --before-src: only that comparison")
    parser.add_argument("--timeline", action="store_true", help="only one install, each phase timed")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-packs-"))
    queries = generate(tmp / "pack", args.docs)
    load_before = os.getloadavg()
    if args.timeline:
        report("packs_timeline", {"docs": args.docs, "load_average_before": [round(x, 1) for x in load_before],
                                  **timeline(tmp / "pack", tmp / "timeline"),
                                  "load_average_after": [round(x, 1) for x in os.getloadavg()]}, quiet=True)
        shutil.rmtree(tmp, ignore_errors=True)
        return
    compared = before_figures(tmp / "pack", tmp, args.runs, args.before_src) if args.before_src else {}
    if args.only_before:
        report("packs_before", {"docs": args.docs, "runs": args.runs, "cores": os.cpu_count(),
                                "load_average_before": [round(x, 1) for x in load_before], **compared,
                                "install_target": "<= 45 s", "target_met": compared["processes_install_seconds"] <= 45,
                                "load_average_after": [round(x, 1) for x in os.getloadavg()]})
        shutil.rmtree(tmp, ignore_errors=True)
        return
    new, old = [], []
    kept: dict[str, Workspace] = {}
    for run in range(args.runs):
        for label, install, out in (("new", install_new, new), ("old", install_old, old)):
            if label == "old" and args.no_baseline:
                continue
            ws, wall, cpu = install(tmp / "pack", tmp / f"{label}{run}")
            out.append((wall, cpu))
            print(f"run {run + 1} {label}: {wall:.1f} s wall, {cpu:.1f} s CPU, load {os.getloadavg()[0]:.1f}",
                  flush=True)
            if run == args.runs - 1:
                kept[label] = ws
            else:
                ws.close()
    figures: dict = {"docs": args.docs, "runs": args.runs, "cores": os.cpu_count(),
                     "load_average_before": [round(x, 1) for x in load_before]}
    new_s = median([w for w, _ in new])
    figures.update({
        "install_seconds": round(new_s, 1), "install_seconds_range": [round(min(w for w, _ in new), 1),
                                                                      round(max(w for w, _ in new), 1)],
        "install_cpu_seconds": round(median([c for _, c in new]), 1), "install_target": "<= 45 s",
        "install_target_met": new_s <= 45,
    })
    if old:
        old_s = median([w for w, _ in old])
        figures.update({
            "baseline_install_seconds": round(old_s, 1),
            "baseline_install_seconds_range": [round(min(w for w, _ in old), 1), round(max(w for w, _ in old), 1)],
            "baseline_install_cpu_seconds": round(median([c for _, c in old]), 1),
            "baseline_issue_figure": "74-80 s", "speedup_vs_baseline": round(old_s / new_s, 2),
            "min_cosine_new_vs_old_vectors": round(min_cosine(kept["new"], kept["old"]), 6),
        })
    searched = {label: search_figures(ws, queries) for label, ws in kept.items()}
    for label, ws in kept.items():
        figures[f"{'baseline_' if label == 'old' else ''}one_text_embed"] = one_text_ms(ws.embedder)
    figures.update({
        "search_queries": len(queries), "search_median": ms(searched["new"]["median"]),
        "search_p95": ms(searched["new"]["p95"]), "search_target": "median <= 20 ms",
        "search_repeated_query_median": ms(searched["new"]["repeated"]),
        "search_with_tag_filter_median": ms(searched["new"]["filtered"]),
    })
    if "old" in searched:
        figures.update({
            "baseline_search_median": ms(searched["old"]["median"]), "baseline_search_p95": ms(searched["old"]["p95"]),
            "baseline_search_with_tag_filter_median": ms(searched["old"]["filtered"]),
            "search_median_ratio_new_over_old": round(searched["new"]["median"] / searched["old"]["median"], 2),
        })
    if args.sweep:
        figures["embedder_by_batch_tokens"] = sweep(tmp / "pack")
    figures.update(compared)
    figures["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
    report("packs", figures)
    for ws in kept.values():
        ws.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
