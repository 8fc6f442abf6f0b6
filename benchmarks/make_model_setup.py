"""The model part of a fresh clone's `make test` (the fused model's build and install, Makefile `$(MODELSTAMP)`): this
tree's Makefile with an empty model cache (cold) and with a warm one, beside the Makefile of ``--before`` (which ran
``pip install -e '.[model-build]'`` and built the model every time), in the same run; median of ``--runs``.

    python benchmarks/make_model_setup.py --before /work/wt/before --venv /tmp/clone/.venv [--runs 3]

``--venv`` must be a disposable virtualenv with the dev extras (a fresh clone's ``.venv`` after ``make dev``): each
tree is copied into a temporary folder beside a link to it, and the before Makefile's editable install points it at
that copy. Never pass a virtualenv that other work uses.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("Makefile", "pyproject.toml", "README.md", "LICENSE", "tools", "src")


def tree_copy(source: Path, into: Path, venv: Path) -> Path:
    into.mkdir(parents=True)
    for name in PARTS:
        path = source / name
        if path.is_dir():
            shutil.copytree(path, into / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        elif path.exists():
            shutil.copy(path, into / name)
    (into / ".venv").symlink_to(venv)
    return into


def timed_make(tree: Path, cache: Path | None) -> float:
    """Seconds for `make .venv/.installed-model` with no build/model folder and the stamp removed (a fresh clone
    whose virtualenv is made)."""
    shutil.rmtree(tree / "build", ignore_errors=True)
    (tree / ".venv" / ".installed-model").unlink(missing_ok=True)
    for stamp in (".installed", ".installed-dev"):
        (tree / ".venv" / stamp).touch()
    (tree / ".venv" / ".installed").touch()
    env = dict(os.environ)
    args = ["make", "-s", ".venv/.installed-model"]
    if cache is not None:
        args.append(f"MODEL_CACHE={cache}")
    started = time.perf_counter()
    subprocess.run(args, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the tree before (its Makefile is measured)")
    parser.add_argument("--venv", type=Path, required=True, help="a disposable virtualenv with the dev extras")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    venv = args.venv.resolve()
    with tempfile.TemporaryDirectory(prefix="make-model-") as tmp:
        before = tree_copy(args.before, Path(tmp) / "before", venv)
        ours = tree_copy(ROOT, Path(tmp) / "ours", venv)
        times: dict[str, list[float]] = {"before": [], "cold cache": [], "warm cache": []}
        for run in range(args.runs):
            times["before"].append(timed_make(before, None))
            cold = Path(tmp) / f"cache-{run}"
            times["cold cache"].append(timed_make(ours, cold))
            times["warm cache"].append(timed_make(ours, cold))
        # leave the virtualenv's editable install on this tree, not on a deleted temporary copy
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "-e", str(ROOT)], check=True)
    base = statistics.median(times["before"])
    for name, values in times.items():
        med = statistics.median(values)
        print(f"{name:11s} median {med:6.2f} s (runs {', '.join(f'{v:.2f}' for v in values)}) "
              f"= {med / base:.2f}x the before Makefile's {base:.2f} s")


if __name__ == "__main__":
    main()
