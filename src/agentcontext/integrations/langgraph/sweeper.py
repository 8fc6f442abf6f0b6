"""The TTL sweeper LangGraph's stores offer (``start_ttl_sweeper`` / ``stop_ttl_sweeper``): a daemon thread that
purges expired items every ``sweep_interval_minutes``."""
from __future__ import annotations

import concurrent.futures
import threading
from typing import Callable


class Sweeper:
    def __init__(self, sweep: Callable[[], int]) -> None:
        self.sweep = sweep
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self, interval_minutes: float) -> concurrent.futures.Future[None]:
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        future.add_done_callback(lambda f: self.stop_event.set() if f.cancelled() else None)
        if self.thread is not None and self.thread.is_alive():
            return future
        self.stop_event.clear()

        def run() -> None:
            try:
                while not self.stop_event.wait(interval_minutes * 60):
                    self.sweep()
            except BaseException as exc:  # handed to the caller's future, not swallowed
                if not future.done():
                    future.set_exception(exc)
                raise
            if not future.done():
                future.set_result(None)

        self.thread = threading.Thread(target=run, name="agentcontext-langgraph-ttl", daemon=True)
        self.thread.start()
        return future

    def stop(self, timeout: float | None = None) -> bool:
        if self.thread is None or not self.thread.is_alive():
            return True
        self.stop_event.set()
        self.thread.join(timeout)
        stopped = not self.thread.is_alive()
        if stopped:
            self.thread = None
        return stopped
