"""One text's embedding (every ``store()``, every new query) with onnxruntime's own thread pool against the
session chosen per call from ``/proc/loadavg`` (issue 27 section 3), measured in the same run.

``before``: the embedder as it was up to issue 27 (``LoadavgMiniLM`` below, its lone-batch logic kept verbatim):
each lone batch read the machine's runnable tasks (``/proc/loadavg``) and this process's threads
(``/proc/self/task``) and ran over both cores on a spin-waiting session when they looked idle, else on one
thread. ``after``: ``MiniLMEmbedder`` today: every lone batch on one session over ``threads`` cores whose
onnxruntime workers do not spin (they sleep when the machine is busy). Both on the same model file (the fused
artifact when it is installed or named by ``AGENTCONTEXT_MODEL_ARTIFACT``). Calls run in blocks, the two
embedders' blocks alternating so load moments are shared; back to back and at an agent's pace (``--pace``);
with ``--busy`` also while a spinning process holds one core. Printed: p50/p95 per regime and after/before p50
ratios over ``--repeats`` repeats (each ratio's median and range), and multi-batch throughput (pack texts, the
same pool path in both) as texts per second.

Run: nice -n 10 .venv/bin/python benchmarks/embed_threads.py [--calls 200] [--repeats 3] [--busy]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import median, p95, report  # noqa: E402
from embed_one import pack_texts  # noqa: E402

from agentcontext.embed.base import MiniLMEmbedder, Pending, plan_batches  # noqa: E402

TEXT = "how do agents rotate tokens when the billing quota is reached"


# --- before: the per-call sizing from /proc/loadavg, verbatim from embed/base.py before issue 27 ----------------

def runnable_tasks() -> int:
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            return int(fh.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):  # pragma: no cover
        return round(os.getloadavg()[0]) + 1


def idle_from(cores: int, running: int, own_spinning: int = 0) -> int:
    return max(0, cores - max(0, running - 1 - max(0, own_spinning)))


def idle_cores(threads: int, own_spinning: int = 0) -> int:
    return idle_from(threads, runnable_tasks(), own_spinning)


class _ThreadWatch:
    def __init__(self, tids: list[int]) -> None:
        self._fds: list[int] = []
        for tid in tids:
            try:
                self._fds.append(os.open(f"/proc/self/task/{tid}/stat", os.O_RDONLY))
            except OSError:  # pragma: no cover
                pass

    @staticmethod
    def tids() -> set[int]:
        try:
            return {int(t) for t in os.listdir("/proc/self/task")}
        except OSError:  # pragma: no cover
            return set()

    def running(self) -> int:
        count = 0
        for fd in self._fds:
            try:
                stat = os.pread(fd, 512, 0)
            except OSError:
                continue
            end = stat.rfind(b")")
            count += stat[end + 2:end + 3] == b"R"
        return count


class LoadavgMiniLM(MiniLMEmbedder):
    """The embedder before issue 27: a lone batch over both cores, spinning, only when ``/proc`` shows them idle."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._wide_workers = _ThreadWatch([])
        self._lock = threading.Lock()
        self._spinning: object | None = None
        self.wide = self.calls = 0

    def _wide_session(self) -> object:
        with self._lock:
            if self._spinning is None:
                before = _ThreadWatch.tids()
                self._spinning = self._open(str(self.model_path), threads=self.threads, spin=True)
                workers = _ThreadWatch.tids() - before
                self._wide_workers = _ThreadWatch(sorted(workers) if len(workers) == self.threads - 1 else [])
            return self._spinning

    def _lone_batch_wide(self) -> bool:
        if self.threads < 2:
            return False
        return idle_cores(self.threads, self._wide_workers.running()) >= self.threads

    def submit(self, texts):
        texts = list(texts)
        tokens = self._tokens(texts)
        batches = plan_batches([len(t) for t in tokens], self.batch_tokens, self.max_batch, self.float_below)
        if len(batches) != 1:
            return super().submit(texts)
        import numpy as np

        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        wide = self._lone_batch_wide()
        self.calls += 1
        self.wide += wide
        out[batches[0]] = self._run(self._wide_session() if wide else self._session, tokens, batches[0])
        return Pending(out, [])


# --- the measurement ---------------------------------------------------------------------------------------------

def one_text(embedders: dict[str, MiniLMEmbedder], calls: int, pause: float, blocks: int = 4) -> dict:
    times: dict[str, list[float]] = {k: [] for k in embedders}
    for e in embedders.values():
        e.embed([TEXT])
    per_block = max(1, calls // blocks)
    for block in range(blocks):
        for label, e in embedders.items():
            time.sleep(0.15)  # the previous block's spinning threads stop
            e.embed([f"{TEXT} warm {block}"])
            for i in range(per_block):
                if pause:
                    time.sleep(pause)
                t = time.perf_counter()
                e.embed([f"{TEXT} {block} {i}"])
                times[label].append(time.perf_counter() - t)
    return {k: {"p50_ms": round(median(v) * 1000, 2), "p95_ms": round(p95(v) * 1000, 2)} for k, v in times.items()}


def regimes(embedders: dict, calls: int, pace: float, repeats: int) -> dict:
    out: dict = {}
    for label, pause in (("back_to_back", 0.0), (f"every_{round(pace * 1000)}_ms", pace)):
        runs, ratios, shares = [], [], []
        for _ in range(repeats):
            before = embedders["before"]
            before.wide = before.calls = 0
            figures = one_text(embedders, calls, pause)
            runs.append(figures)
            ratios.append(figures["after"]["p50_ms"] / figures["before"]["p50_ms"])
            shares.append(before.wide / max(1, before.calls))
        out[label] = {"runs": runs, "after_over_before_p50": {
            "median": round(median(ratios), 3), "range": [round(min(ratios), 3), round(max(ratios), 3)]},
            "before_took_the_wide_session": [round(s, 3) for s in shares]}
    return out


def throughput(embedders: dict, texts: list[str], rounds: int = 3) -> dict:
    walls: dict[str, list[float]] = {k: [] for k in embedders}
    for _ in range(rounds):
        for label, e in embedders.items():
            t = time.perf_counter()
            e.embed(texts)
            walls[label].append(time.perf_counter() - t)
    rates = {k: round(len(texts) / median(v), 1) for k, v in walls.items()}
    return {"texts_per_second": rates, "after_over_before": round(rates["after"] / rates["before"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--pace", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--busy", action="store_true", help="also with one core held by a spinning process")
    args = parser.parse_args()
    embedders = {"before": LoadavgMiniLM(), "after": MiniLMEmbedder()}
    figures: dict = {"cores": os.cpu_count(), "fused_model": embedders["after"].fused,
                     "load_average_before": [round(x, 1) for x in os.getloadavg()],
                     "target": "after/before p50 <= 1 (no slower) in every regime"}
    figures["one_text"] = regimes(embedders, args.calls, args.pace, args.repeats)
    if args.busy:
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.5)
            figures["one_text_one_core_busy"] = regimes(embedders, args.calls // 2, args.pace, args.repeats)
        finally:
            hog.kill()
            hog.wait()
    figures["pack_texts"] = throughput(embedders, pack_texts(args.texts))
    figures["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
    report("embed_threads", figures)


if __name__ == "__main__":
    main()
