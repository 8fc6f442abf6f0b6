"""The 768-dimension embedder (all-mpnet-base-v2 in numpy, embed/mpnet.py) beside the default MiniLM int8:
speed (texts/s, median of ``--runs``) and LoCoMo dev recall (evidence recall@k, eval_locomo.evaluate) on the
conversations named (default conv-30, the smallest: the 768 model is slow on CPU).

    nice -n 10 python benchmarks/embed_768.py [--conversations conv-30,conv-26] [--runs 3] [--texts 64]
                                              [--speed-only]

Prints one JSON object and saves it in benchmarks/results/embed_768.json."""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from agentcontext.embed.base import default_embedder
from agentcontext.embed.mpnet import mpnet_embedder
from agentcontext.eval_locomo import evaluate, load, turn_text, turns

DEV = "/work/shared/data/locomo/locomo_dev.json"


def speed(embedder, texts, runs):
    embedder.embed(texts[:4])  # warm: the first call maps the model
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        embedder.embed(texts)
        times.append(time.perf_counter() - start)
    return {"texts": len(texts), "texts_per_s": round(len(texts) / statistics.median(times), 2),
            "runs_s": [round(t, 2) for t in times]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", default=DEV)
    ap.add_argument("--conversations", default="conv-30")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--texts", type=int, default=64, help="LoCoMo turns timed for speed")
    ap.add_argument("--speed-only", action="store_true", help="skip the LoCoMo recall runs")
    args = ap.parse_args()
    samples = [s for s in load(args.file) if s.get("sample_id") in set(args.conversations.split(","))]
    texts = [turn_text(t) for t in turns(samples[0])][:args.texts]
    out: dict = {"conversations": args.conversations, "file": args.file}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "subset.json"
        path.write_text(json.dumps(samples))
        for name, make in (("minilm-384", default_embedder), ("mpnet-768", mpnet_embedder)):
            start = time.perf_counter()
            emb = make()
            load_s = round(time.perf_counter() - start, 2)
            out[name] = {"load_s": load_s, "speed": speed(emb, texts, args.runs)}
            if not args.speed_only:
                out[name]["locomo"] = evaluate(path, (1, 5, 10), embedder=emb)
            print(name, json.dumps(out[name]), flush=True)
    a, b = out["mpnet-768"], out["minilm-384"]
    out["ratio_speed_768_over_384"] = round(a["speed"]["texts_per_s"] / b["speed"]["texts_per_s"], 4)
    if not args.speed_only:
        out["recall@5_768_minus_384"] = round(a["locomo"]["recall"]["5"] - b["locomo"]["recall"]["5"], 4)
    print(json.dumps(out, indent=1))
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "embed_768.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
