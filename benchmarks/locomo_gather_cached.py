"""Memory search's signals for every LoCoMo dev question (benchmarks/locomo_loco.py ``gather_questions``) with a
registered embedding model, its vectors cached on disk (benchmarks/embed_disk_cache.py) and the questions pickled, so
benchmarks/locomo_fit_models.py refits weights without embedding again.

    nice -n 10 .venv/bin/python benchmarks/locomo_gather_cached.py --models minilm,e5-small,mpnet
        [--cache /work/recall29-cache] [FILE]
"""
from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from embed_disk_cache import cached  # noqa: E402
from locomo_loco import DEFAULT, gather_questions  # noqa: E402

from agentcontext.embed.models import load_model, spec_of  # noqa: E402

CACHE = Path("/work/recall29-cache")


def questions(path: str, model: str, cache: Path = CACHE, places: bool = False) -> list:
    """The questions of ``gather_questions`` with ``model``, from ``cache`` when gathered before; ``places``: the
    turns stored with their place glosses (memory/places.py)."""
    name = spec_of(model).name
    pickled = cache / f"questions-{name}{'-places' if places else ''}-{Path(path).stem}.pkl"
    if pickled.exists():
        with open(pickled, "rb") as f:
            return pickle.load(f)
    parts = [cached(load_model(name), cache)]
    embedder = parts[0]
    started = time.perf_counter()
    try:
        qs = gather_questions(path, name, embedder=embedder, places=places)
    finally:
        for part in parts:
            part.save()
    print(f"{name}: gathered {len(qs)} questions in {time.perf_counter() - started:.0f} s "
          f"({sum(p.loaded for p in parts)} vectors from the cache, {sum(p.embedded for p in parts)} embedded)",
          flush=True)
    with open(pickled, "wb") as f:
        pickle.dump(qs, f)
    return qs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--models", default="minilm,e5-small")
    ap.add_argument("--cache", default=str(CACHE))
    args = ap.parse_args()
    for m in args.models.split(","):
        questions(args.file, m.strip(), Path(args.cache))


if __name__ == "__main__":
    main()
