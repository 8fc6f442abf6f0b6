"""The indexes folder's lock across processes (engine/snapshot.py ``IndexFiles.locked``): a save in one process
checks for an unseen purge and renames only while no other process scrubs, so a file prepared before another
process's purge (an erasure) can never land after that erasure's scrub with the erased memory's vector bytes."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from agentcontext import AgentMemory, VectorStore
from agentcontext.engine.snapshot import LOCK_FILE, IndexFiles

N = 40
SAVER = """
import sys
from agentcontext import AgentMemory, VectorStore
mem = AgentMemory(vector_store=VectorStore(home=sys.argv[1]), max_memory_size=10**6)
index = mem._index()  # no file: rebuilt with every memory, then saved on its thread
held = len(index)
mem.workspace.close()  # waits for the save
print(held, index.saved)
"""


def waiting_on(lock: Path, pid: int, timeout: float = 60.0) -> bool:
    """True once ``pid`` is blocked on the flock of ``lock`` (/proc/locks lists blocked waiters with "->")."""
    inode = os.stat(lock).st_ino
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if "->" in fields and fields[fields.index("->") + 4] == str(pid) and \
                    fields[fields.index("->") + 5].endswith(f":{inode}"):
                return True
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux /proc/locks to see a blocked flock")
def test_a_save_prepared_before_another_process_purges_never_lands(tmp_path):
    home = tmp_path / "ws"
    vectors = np.random.default_rng(5).standard_normal((N, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    mem = AgentMemory(vector_store=VectorStore(home=home), max_memory_size=10**6)
    mem.workspace.index_files = IndexFiles(None, mem.workspace.store)  # this process writes no index file
    ids = mem.batch_store([{"content": f"note {i} on the harbour", "vector": vectors[i]} for i in range(N)])
    folder = home / "indexes"
    files = IndexFiles(folder, mem.workspace.store)
    with files.locked():  # as an erasure's scrub in another process holds it
        saver = subprocess.Popen([sys.executable, "-c", SAVER, str(home)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        blocked = waiting_on(folder / LOCK_FILE, saver.pid)
        assert blocked, f"the save renamed its file while another process held the indexes lock: " \
                        f"{saver.communicate(timeout=60)}"
        assert not list(folder.glob("*.idx"))  # written to its temporary file only, waiting to rename
        assert mem.delete_memory(ids[7])  # the erasure's purge commits meanwhile
    out, err = saver.communicate(timeout=120)
    assert saver.returncode == 0, err
    held, saved = out.split()
    assert int(held) == N and int(saved) < 0  # its rows held the purged memory: the save was abandoned
    erased = vectors[7].tobytes()
    for path in folder.iterdir():  # no index file, nor a leftover temporary one, holds the erased vector's bytes
        assert erased not in path.read_bytes(), path
    mem.workspace.close()


def test_a_purge_behind_more_changes_than_one_page_still_stops_a_save(tmp_path, monkeypatch):
    from agentcontext.engine import persist

    mem = AgentMemory(vector_store=VectorStore(home=tmp_path / "ws"), max_memory_size=10**6)
    files = mem.workspace.index_files
    counter = mem.workspace.store.change_counter()
    vectors = np.eye(6, 384, dtype=np.float32)
    ids = mem.batch_store([{"content": f"note {i}", "vector": vectors[i]} for i in range(6)])  # 6+ changes
    assert not persist.purge_pending(files, counter)
    assert mem.delete_memory(ids[0])
    monkeypatch.setattr(persist, "PENDING_SCAN", 2)  # the purge is past the first page
    assert persist.purge_pending(files, counter)
    mem.workspace.close()
