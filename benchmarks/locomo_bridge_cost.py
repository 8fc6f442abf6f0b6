"""Issue 29: the bridge stage's cost on LoCoMo's own conversations (memory/bridge.py reads the first hits' texts and
queries the text index once per rare name, and LoCoMo's turns hold many names; benchmarks/memory_cost.py --bridge
measures it at 10,000 memories, whose facts hold few rare names): retrieve p50 with the stage off and on, interleaved
question by question on one SQLite store per conversation (the first two of the dev split, 60 questions each).

Run: nice -n 5 .venv/bin/python benchmarks/locomo_bridge_cost.py [FILE]

Session 20 (recall32), three runs at load 10-13: off 41.8 / 45.9 / 42.9 ms, on 44.0 / 55.0 / 46.8 ms: ratio 1.05 / 1.20
/ 1.09.
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from embed_models import DEV  # noqa: E402

from agentcontext.engine.fusion import FusionWeights  # noqa: E402
from agentcontext.eval_locomo import load, turn_text, turns  # noqa: E402
from agentcontext.memory import AgentMemory  # noqa: E402
from agentcontext.memory.bridge import BRIDGE  # noqa: E402
from agentcontext.vector_store import VectorStore  # noqa: E402


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else str(DEV)
    lat: dict[str, list[float]] = {"off": [], "on": []}
    for sample in load(path)[:2]:
        with tempfile.TemporaryDirectory() as d:
            m = AgentMemory(VectorStore(home=d + "/.agentcontext"), max_memory_size=None)
            m.batch_store([{"content": turn_text(t), "conversation_id": "c",
                            "metadata": {"speaker": t.get("speaker", "")}, "created_at": t["created_at"]}
                           for t in turns(sample)])
            m.retrieve("warm up", max_results=10)
            qs = [q["question"] for q in sample["qa"] if q.get("category") != 5][:60]
            for i, q in enumerate(qs):
                for name in (("off", "on") if i % 2 else ("on", "off")):
                    m.weights = replace(FusionWeights(), bridge=BRIDGE) if name == "on" else FusionWeights()
                    started = time.perf_counter()
                    m.retrieve(f"{q} ({name})", max_results=10)  # distinct: the query embedding is part of each call
                    lat[name].append((time.perf_counter() - started) * 1000)
            m.workspace.close()
    off, on = statistics.median(lat["off"]), statistics.median(lat["on"])
    print(f"LoCoMo conversations (SQLite, {len(lat['on'])} questions each way, interleaved): retrieve p50 with the "
          f"bridge stage off {off:.1f} ms, on {on:.1f} ms, ratio {on / off:.2f} (issue 29's target at 10,000 memories: "
          f"<= 50 ms)")


if __name__ == "__main__":
    main()
