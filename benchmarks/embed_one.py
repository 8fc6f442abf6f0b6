"""One text's embedding (what every ``store()`` and every new query pays) and the model's throughput on pack
texts, new embedder against the old two-thread session (``OldMiniLM`` in benchmarks/packs.py, kept verbatim),
measured in the same run with the calls interleaved so a busy machine slows both alike.

Printed: p50/p95 of one short text for the old session, the new embedder as callers get it (it picks its
session per call: one model run over both cores on onnxruntime's own pool since issue 27, before that chosen per
call from /proc/loadavg, see benchmarks/embed_threads.py; the share of calls that took the all-cores session is
printed) and the new embedder forced onto one thread, each as ratios
over the old session, in two regimes: calls back to back (a loop) and at an agent's pace (``--pace`` seconds
between calls); with ``--busy`` the same while a spinning process holds one core (the "no slower under load"
check); and texts per CPU-second on pack-like texts for the old session, the plain new model and the
fused new model, with the minimum cosine of the new vectors against the old ones.

Run: .venv/bin/python benchmarks/embed_one.py [--calls 300] [--paced-calls 100] [--pace 0.05] [--texts 512] [--busy]
"""
from __future__ import annotations

import argparse
import os
import sys
import subprocess
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import median, p95, report  # noqa: E402
from packs import OldMiniLM, generate  # noqa: E402

from agentcontext.embed.base import MiniLMEmbedder  # noqa: E402

TEXT = "how do agents rotate tokens when the billing quota is reached"


def one_text(embedders: dict[str, object], calls: int, pause: float = 0.0,
             blocks: int = 4) -> dict[str, dict[str, float]]:
    """p50/p95 of one text per embedder, ``calls`` each, ``pause`` seconds between calls (0: back to back, as a
    bulk loop calls; 0.05: an agent's pace). Each embedder runs its calls in ``blocks`` runs of consecutive calls,
    the embedders' blocks alternating, so load moments are shared while no embedder's spinning threads fall
    between another's calls (interleaving single calls made each see the other's spinners as a busy core)."""
    times: dict[str, list[float]] = {k: [] for k in embedders}
    for e in embedders.values():
        e.embed([TEXT])  # type: ignore[attr-defined]
    per_block = max(1, calls // blocks)
    for block in range(blocks):
        for label, e in embedders.items():
            time.sleep(0.15)  # the previous block's spinning threads stop
            e.embed([f"{TEXT} warm {block}"])  # type: ignore[attr-defined]
            for i in range(per_block):
                if pause:
                    time.sleep(pause)
                t = time.perf_counter()
                e.embed([f"{TEXT} {block} {i}"])  # type: ignore[attr-defined]
                times[label].append(time.perf_counter() - t)
    return {k: {"p50_ms": round(median(v) * 1000, 2), "p95_ms": round(p95(v) * 1000, 2)} for k, v in times.items()}


class Narrow(MiniLMEmbedder):
    """The new embedder held to its one-thread session for lone batches (what it does on a busy machine)."""

    def _wide_session(self) -> object:
        return self._session


class Counting(MiniLMEmbedder):
    """The new embedder as callers get it. Since issue 27 every lone batch takes the all-cores session (onnxruntime's
    own pool, not spinning), so the share printed is 1; benchmarks/embed_threads.py compares it with the per-call
    choice from /proc/loadavg it replaced."""

    wide = calls = 0

    def _wide_session(self) -> object:
        self.calls += 1
        self.wide += self.threads > 1
        return super()._wide_session()


def ratios(figures: dict[str, dict[str, float]]) -> dict[str, float]:
    old = figures["old_two_thread_session"]["p50_ms"]
    return {k: round(v["p50_ms"] / old, 3) for k, v in figures.items() if k != "old_two_thread_session"}


def regimes(embedders: dict[str, object], new: Counting, calls: int, paced: int, pace: float) -> dict:
    out: dict = {}
    for label, n, pause in (("back_to_back", calls, 0.0), (f"every_{round(pace * 1000)}_ms", paced, pace)):
        new.wide = new.calls = 0
        out[label] = one_text(embedders, n, pause)
        out[label + "_p50_ratio_over_old"] = ratios(out[label])
        out[label + "_wide_session_share"] = round(new.wide / max(1, new.calls), 3)
    return out


def throughput(embedders: dict[str, object], texts: list[str], rounds: int = 3) -> dict[str, float]:
    """Texts per CPU-second, best of ``rounds`` (the model on one core: threads=1 where it applies)."""
    best: dict[str, float] = {}
    for _ in range(rounds):
        for label, e in embedders.items():
            cpu = time.process_time()
            e.embed(texts)  # type: ignore[attr-defined]
            best[label] = max(best.get(label, 0.0), len(texts) / (time.process_time() - cpu))
    return {k: round(v, 1) for k, v in best.items()}


def pack_texts(n: int) -> list[str]:
    import tempfile

    from agentcontext.knowledge.package import load_packages
    from agentcontext.knowledge.packs import embed_text

    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp) / "pack", n)
        docs = load_packages(Path(tmp) / "pack").packs[0].docs
        return [embed_text(d.title, d.summary, d.tags, d.content) for d in docs]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--paced-calls", type=int, default=100, help="calls at an agent's pace")
    parser.add_argument("--pace", type=float, default=0.05, help="seconds between paced calls")
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--busy", action="store_true", help="also measure with one core held by a busy process")
    args = parser.parse_args()
    load_before = os.getloadavg()
    new = Counting()
    figures: dict = {"cores": os.cpu_count(), "load_average_before": [round(x, 1) for x in load_before],
                     "fused_model": new.fused}
    embedders = {"old_two_thread_session": OldMiniLM(), "new": new, "new_one_thread": Narrow()}
    figures["one_text"] = regimes(embedders, new, args.calls, args.paced_calls, args.pace)
    figures["one_text_target"] = "new p50 <= old p50 (ratio <= 1) on an idle machine, and no slower under load"
    figures["load_average_after_one_text"] = [round(x, 1) for x in os.getloadavg()]
    if args.busy:
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # holds one core
        try:
            time.sleep(0.5)
            figures["one_text_one_core_busy"] = regimes(embedders, new, args.calls // 2, args.paced_calls // 2,
                                                        args.pace)
        finally:
            hog.kill()
            hog.wait()
    texts = pack_texts(args.texts)
    model = {"old_two_thread_session": OldMiniLM(threads=1), "new_plain": MiniLMEmbedder(threads=1, fuse=False),
             "new_fused": MiniLMEmbedder(threads=1)}
    rates = throughput(model, texts)
    figures["texts_per_cpu_second_one_thread"] = rates
    figures["fused_over_old_rate"] = round(rates["new_fused"] / rates["old_two_thread_session"], 3)
    ref = model["old_two_thread_session"].embed(texts)
    figures["min_cosine_vs_old"] = {k: round(float((model[k].embed(texts) * ref).sum(axis=1).min()), 7)
                                    for k in ("new_plain", "new_fused")}
    figures["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
    report("embed_one", figures)


if __name__ == "__main__":
    main()
