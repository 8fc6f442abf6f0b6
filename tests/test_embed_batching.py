"""Bulk embedding (issue 9 s3): batched, sorted, parallel and streamed vectors equal the one-at-a-time ones, and
a pack install that embeds while it writes stays all-or-nothing."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from agentcontext.embed import default_embedder, embed_missing, embed_texts
from agentcontext.embed.base import MiniLMEmbedder, plan_batches
from agentcontext.embed.cache import VectorStream
from agentcontext.errors import ValidationError
from agentcontext.knowledge.packs import install_folder
from agentcontext.workspace import Workspace

TEXTS = ["", "hi", "word " * 400, "The cat sat on the mat", "first time home buyer mortgage application",
         "Billing rules. How invoices are retried when a card fails, and when agents notify the owner. " * 3,
         "hi", "The cat sat on the mat", "a " * 255, "short", "Zürich – naïve café ✓ 東京"] * 3


class Counting:
    """The real embedder, recording the texts it is asked to embed."""

    def __init__(self, fail_after: int | None = None):
        self.inner = default_embedder()
        self.name, self.dimension, self.seen, self.fail_after = self.inner.name, self.inner.dimension, [], fail_after

    def embed(self, texts):
        if self.fail_after is not None and len(self.seen) >= self.fail_after:
            raise RuntimeError("the model ran out of memory")
        self.seen += list(texts)
        return self.inner.embed(texts)


def test_batched_vectors_equal_one_at_a_time():
    e = default_embedder()
    batched = e.embed(TEXTS)
    single = np.stack([e.embed([t])[0] for t in dict.fromkeys(TEXTS)])
    by_text = dict(zip(dict.fromkeys(TEXTS), single))
    cosines = (batched * np.stack([by_text[t] for t in TEXTS])).sum(axis=1)
    assert cosines.min() >= 0.9999, cosines
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-4)
    # Truncated at the model's 256 tokens, as the model does: 400 words and 256 read the same.
    assert e.embed(["word " * 400])[0] @ e.embed(["word " * 300])[0] > 0.9999
    # One thread, tiny batches: the same vectors.
    small = MiniLMEmbedder(batch_tokens=16, threads=1)
    assert (small.embed(TEXTS) * batched).sum(axis=1).min() >= 0.9999


def test_batches_are_sorted_bounded_and_cover_every_text():
    lengths = [5, 300, 12, 12, 80, 1, 256, 7] * 20
    batches = plan_batches(lengths, batch_tokens=256, max_batch=8)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(flat)
    for b in batches:
        assert len(b) <= 8 and (len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 256)
    assert plan_batches([], 256, 8) == []


def test_threads_share_one_model():
    e = default_embedder()
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda t: e.embed([t, "the same neighbour"])[0], TEXTS[:8]))
    expected = e.embed(TEXTS[:8])
    assert (np.stack(results) * expected).sum(axis=1).min() >= 0.9999


def test_stream_yields_every_chunk_in_order_and_raises_the_producers_error():
    e = default_embedder()
    texts = [f"note {i} " * (i % 7 + 1) for i in range(50)]
    with VectorStream(e, texts, chunk=16) as stream:
        parts = list(stream)
    assert [s for s, _ in parts] == [0, 16, 32, 48]
    assert (np.concatenate([v for _, v in parts]) * e.embed(texts)).sum(axis=1).min() >= 0.9999
    with pytest.raises(RuntimeError, match="out of memory"):
        with VectorStream(Counting(fail_after=16), texts, chunk=16) as stream:
            list(stream)

    class Wrong:
        name, dimension = "wrong", 384

        def embed(self, texts):
            return np.zeros((len(texts), 3), dtype=np.float32)

    with pytest.raises(ValidationError, match="expected"):
        embed_texts(Workspace.in_memory().store, Wrong(), ["a", "b"])


def test_stream_submits_the_next_chunk_before_waiting_for_the_current_one():
    """The model threads never wait between chunks: chunk k+1 is tokenized and queued before chunk k is taken."""
    inner, log = default_embedder(), []

    class Submitting:
        name, dimension = inner.name, inner.dimension

        def submit(self, texts):
            k = len([e for e in log if e[0] == "submit"])
            log.append(("submit", k))
            pending = inner.submit(texts)

            class Result:
                def result(self):
                    log.append(("result", k))
                    return pending.result()

            return Result()

    texts = [f"note {i} " * (i % 7 + 1) for i in range(40)]
    with VectorStream(Submitting(), texts, chunk=10) as stream:
        parts = list(stream)
    assert log == [("submit", 0), ("submit", 1), ("result", 0), ("submit", 2), ("result", 1), ("submit", 3),
                   ("result", 2), ("result", 3)]
    assert (np.concatenate([v for _, v in parts]) * inner.embed(texts)).sum(axis=1).min() >= 0.9999


def test_each_distinct_text_is_embedded_once_and_cached_ones_never(tmp_path, write_pack):
    counting = Counting()
    ws = Workspace.open(home=tmp_path / "h", create=True, embedder=counting)

    def docs():  # write_pack consumes its dicts
        out = {f"d{i}": {"body": "Same body.", "title": "Same", "summary": "Same."} for i in range(5)}
        return {**out, "other": {"body": "Another body."}}

    install_folder(ws, write_pack("twins", docs()))
    assert len(counting.seen) == 2 and len(set(counting.seen)) == 2  # five identical docs: one text
    install_folder(ws, write_pack("twins2", docs()))  # another pack, the same texts: nothing new
    assert len(counting.seen) == 2
    assert ws.store.count_vectors(counting.name, "lib:twins2") == 6


def test_a_failing_embedder_leaves_the_pack_installed_and_embeds_the_rest_later(tmp_path, write_pack):
    folder = write_pack("many", {f"d{i}": {"body": f"Body number {i} " * (i % 5 + 1)} for i in range(40)})
    ws = Workspace.open(home=tmp_path / "h", create=True, embedder=Counting(fail_after=0))
    with pytest.raises(RuntimeError):
        install_folder(ws, folder)
    assert ws.store.count_nodes(namespace="lib:many") == 40  # the install's transaction committed first
    assert ws.store.count_vectors(ws.embedder.name, "lib:many") == 0
    ws.close()
    ws = Workspace.open(home=tmp_path / "h", embedder=Counting())
    assert embed_missing(ws.store, ws.embedder, "lib:many") == 40
    assert ws.store.count_vectors(ws.embedder.name, "lib:many") == 40
    ws.close()


INSTALLER = """
import sys
from agentcontext.knowledge.packs import install_folder
from agentcontext.workspace import Workspace
ws = Workspace.open(home=sys.argv[1])
ws.embedder.embed(["loaded before the clock starts"])
print("START", flush=True)
install_folder(ws, sys.argv[2])
print("DONE", flush=True)
"""


@pytest.mark.slow
def test_sigkill_mid_install_leaves_the_old_pack_or_the_new(tmp_path, write_pack):
    n = 300
    old = write_pack("big", {f"d{i}": {"body": f"version one of doc {i}"} for i in range(n)}, folder=tmp_path / "v1")
    new = write_pack("big", {f"d{i}": {"body": f"version two of doc {i}, longer " * 3} for i in range(n + 20)},
                     folder=tmp_path / "v2")
    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    install_folder(ws, old, defer_embeddings=True)
    ws.close()
    script = tmp_path / "installer.py"
    script.write_text(INSTALLER)
    for delay in (0.3, 1.5):
        proc = subprocess.Popen([sys.executable, str(script), str(home), str(new)], stdout=subprocess.PIPE,
                                text=True)
        assert proc.stdout.readline().strip() == "START"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        ws = Workspace.open(home=home)
        bodies = [n.content for n in ws.store.find_nodes(namespace="lib:big")]
        assert ws.store.check_integrity() == "ok"
        versions = {b.split(" of ")[0] for b in bodies}
        assert (versions, len(bodies)) in (({"version one"}, n), ({"version two"}, n + 20)), (delay, len(bodies))
        ws.close()


def test_a_reinstall_never_embeds_an_erased_doc(tmp_path, write_pack):
    from agentcontext import ContextGraph
    from agentcontext.erasure import erase_workspace_entity

    counting = Counting()
    ws = Workspace.open(home=tmp_path / "h", create=True, embedder=counting)
    folder = write_pack("crm", {"accounts.roe": {"body": "Jane Roe's account, customer-4471", "title": "Roe"},
                                "other": {"body": "Nothing personal"}}, selector="lib:crm")
    install_folder(ws, folder)
    ContextGraph(workspace=ws).add_node("customer-4471", "customer", properties={"name": "Jane Roe"})
    erase_workspace_entity(ws, "customer-4471", erase_mentions=True)
    counting.seen.clear()
    install_folder(ws, folder)
    assert not any("Roe" in t for t in counting.seen), counting.seen
    ws.close()
