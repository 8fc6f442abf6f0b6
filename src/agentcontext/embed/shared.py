"""One instance of an embedder per process: made on first use, under a lock, so two threads asking at once load
the model once (each model costs hundreds of MB and seconds to open)."""
from __future__ import annotations

import threading
from typing import Callable, TypeVar

T = TypeVar("T")


def process_wide(make: Callable[[], T]) -> Callable[[], T]:
    """A function returning ``make()``'s one instance in this process, made when first called."""
    lock = threading.Lock()
    made: list[T] = []

    def shared() -> T:
        with lock:
            if not made:
                made.append(make())
            return made[0]

    return shared
