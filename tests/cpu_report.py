"""Per test file: its wall seconds and the CPU seconds it cost, written as one JSON line a file to the path in
``AGENTCONTEXT_CPU_REPORT`` (each xdist worker appends its own lines; off when the variable is unset).

The CPU is three parts: the test process itself (user + system), the processes it started and waited for (a CLI
in a subprocess, an MCP server: ``os.times()``'s children), and the PostgreSQL servers this process started
(``pg_server.servers_cpu``: the postmaster, its live backends and the exited ones it reaped). On a machine shared
with other work, the CPU seconds compare runs where the wall seconds do not."""
from __future__ import annotations

import json
import os
import time

import pytest

from tests.pg_server import servers_cpu


def _cpu() -> tuple[float, float, float]:
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system, servers_cpu()


class CpuReport:
    def __init__(self, path: str) -> None:
        self.path = path
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.start: tuple[float, tuple[float, float, float]] | None = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if self.start is None:
            self.start = (time.perf_counter(), _cpu())
        yield
        if nextitem is not None and nextitem.path == item.path:
            return
        (t0, before), now = self.start, _cpu()
        self.start = None
        own, children, server = (b - a for a, b in zip(before, now))
        line = {"file": item.path.name, "worker": self.worker, "wall": round(time.perf_counter() - t0, 2),
                "cpu": round(own + children + server, 2), "own": round(own, 2), "children": round(children, 2),
                "server": round(server, 2), "at": round(time.time(), 1)}
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


def register(config) -> None:
    path = os.environ.get("AGENTCONTEXT_CPU_REPORT")
    if path and (hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None)):
        config.pluginmanager.register(CpuReport(path), "agentcontext-cpu-report")
