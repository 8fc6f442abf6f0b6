"""Read a suite run's per-file report (``AGENTCONTEXT_CPU_REPORT=FILE make test``: tests/cpu_report.py) and print where
the time went: CPU seconds by file (the test process, its subprocesses, its PostgreSQL servers), each worker's busy
and idle seconds and when it finished, and the files a slowest-first order (tests/conftest.py SLOW_FILES) should
start with. Optionally compare CPU by file with a second report (``--before``).

Run: .venv/bin/python -m tools.suite_balance REPORT.jsonl [--before OTHER.jsonl] [--top 25]
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summary(rows: list[dict]) -> dict:
    """Per worker: its files' wall and CPU added up, its first start and last end (seconds from the run's start)."""
    start = min(r["at"] - r["wall"] for r in rows)
    workers: dict[str, dict] = defaultdict(lambda: {"files": 0, "wall": 0.0, "cpu": 0.0, "end": 0.0})
    for r in rows:
        w = workers[r["worker"]]
        w["files"] += 1
        w["wall"] += r["wall"]
        w["cpu"] += r["cpu"]
        w["end"] = max(w["end"], r["at"] - start)
    return dict(workers)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("report", type=Path)
    parser.add_argument("--before", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    rows = load(args.report)
    workers = summary(rows)
    span = max(w["end"] for w in workers.values())
    print(f"{len(rows)} files, {sum(r['cpu'] for r in rows):.0f} CPU s (own {sum(r['own'] for r in rows):.0f}, "
          f"subprocesses {sum(r['children'] for r in rows):.0f}, PostgreSQL {sum(r['server'] for r in rows):.0f}), "
          f"{span:.0f} s from the first file's start to the last file's end")
    for name, w in sorted(workers.items()):
        print(f"  {name}: {w['files']} files, busy {w['wall']:.0f} s, {w['cpu']:.0f} CPU s, ended at {w['end']:.0f} s "
              f"(idle at the end {span - w['end']:.0f} s)")
    print("\nslowest files by wall (a slowest-first order starts with these), with CPU s:")
    for r in sorted(rows, key=lambda r: -r["wall"])[:args.top]:
        print(f"  {r['file']:45s} wall {r['wall']:7.1f}  cpu {r['cpu']:6.1f}  ({r['worker']})")
    if args.before:
        before = {r["file"]: r for r in load(args.before)}
        both = [(r["file"], before[r["file"]]["cpu"], r["cpu"]) for r in rows if r["file"] in before]
        b, a = sum(x[1] for x in both), sum(x[2] for x in both)
        print(f"\nCPU s by file, before -> now ({len(both)} files in both): {b:.1f} -> {a:.1f} "
              f"({a / max(b, 1e-9):.2f}x)")
        for name, cb, ca in sorted(both, key=lambda x: x[2] - x[1])[:args.top]:
            print(f"  {name:45s} {cb:7.1f} -> {ca:7.1f}")


if __name__ == "__main__":
    main()
