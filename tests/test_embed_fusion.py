"""The fused default model (embed/fusion.py): the plain model's vectors (cosine >= 0.999; the same below
FLOAT_BELOW tokens), derived once into the model cache
keyed by the source file's hash, a damaged cache file rebuilt and never trusted, the plain model (said once in
the log) when fusion cannot be done; and the one-text path's session chosen by idle cores (our own spinning
workers discounted)."""
from __future__ import annotations

import logging
import sys
import time

import numpy as np
import pytest

from agentcontext.embed import base, fusion
from agentcontext.embed.base import MINILM, MiniLMEmbedder
from agentcontext.embed.quantize import FLOAT_BELOW

EDGE = ["", "a", "The cat sat on the mat", "The cat sat on the mat", "naïve café — 日本語のテキスト, ÄÖÜ ß 🙂",
        "word " * 400, "how do agents rotate tokens when the billing quota is reached"]


@pytest.fixture(scope="module")
def plain():
    return MiniLMEmbedder(fuse=False)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="module")
def fused(cache):
    mp = pytest.MonkeyPatch()
    mp.setenv("AGENTCONTEXT_MODEL_CACHE", str(cache))
    try:
        yield MiniLMEmbedder()
    finally:
        mp.undo()


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float((a * b).sum(axis=1).min())


def test_fused_model_keeps_the_vectors_and_their_cache_keys(plain, fused, cache):
    assert fused.fused and not plain.fused
    assert fused.model_path.parent == cache and fusion.file_sha256(fused.source)[:32] in fused.model_path.name
    assert fused.name == plain.name == MINILM  # same vectors, so cached vectors keep their key
    for texts in (EDGE, EDGE[:1], EDGE[5:6], [EDGE[2]] * 3):
        a, b = fused.embed(texts), plain.embed(texts)
        assert a.shape == b.shape == (len(texts), 384)
        assert min_cosine(a, b) >= fusion.MIN_COSINE  # the quality bar (0.999): int8 FFN outputs at >= 48 tokens
    short = [t for t in EDGE if len(fused._tokens([t])[0]) < FLOAT_BELOW]
    assert len(short) == 6 and min_cosine(fused.embed(short), plain.embed(short)) >= 0.9999  # float: as before
    # a graph of the fused model really holds the fused kernel, and none of the unfused attention's Softmax
    import onnx

    graph = onnx.load(str(fused.model_path)).graph
    ops = {n.op_type for n in graph.node}
    assert "Attention" in ops and "Softmax" not in ops
    branches = {a.name: {n.op_type for n in a.g.node} for n in graph.node if n.op_type == "If" for a in n.attribute}
    assert branches["then_branch"] >= {"MatMulInteger", "QuantizeLinear"} and branches["else_branch"] == {"MatMul"}


def test_int8_runs_only_at_the_quantized_width_and_keep_each_text_alone_equal(fused, plain):
    """Texts shorter than FLOAT_BELOW tokens never share a run with longer ones, so a text's vector is the same
    alone, in a batch and padded; the probes the fusion checks cover both widths."""
    lengths = [len(ids) for ids in fused._tokens(fusion.PROBES)]
    assert max(lengths[:fusion.SHORT_PROBES]) < FLOAT_BELOW <= lengths[fusion.SHORT_PROBES]
    assert fusion.SHORT_PROBES < fusion.LOAD_PROBES  # every load re-checks an int8-width probe too
    for batch in base.plan_batches([3, 60, 47, 48, 49, 10, 47, 200] * 4, batch_tokens=4096, max_batch=64,
                                   split_at=FLOAT_BELOW):
        widths = [[3, 60, 47, 48, 49, 10, 47, 200][i % 8] for i in batch]
        assert max(widths) < FLOAT_BELOW or min(widths) >= FLOAT_BELOW
    long = "Billing rules. How invoices are retried when a card fails, and when agents notify the owner. " * 2
    texts = ["hi", long, "The cat sat on the mat", long + "Then again.", "naïve café 🙂"]
    alone = np.stack([fused.embed([t])[0] for t in texts])
    together = fused.embed(texts)
    assert min_cosine(alone, together) >= 0.99999
    assert min_cosine(together, plain.embed(texts)) >= fusion.MIN_COSINE
    assert min_cosine(together[[0, 2, 4]], plain.embed([texts[i] for i in (0, 2, 4)])) >= 0.99999


def test_second_embedder_uses_the_cached_file(fused, cache, monkeypatch):
    monkeypatch.setenv("AGENTCONTEXT_MODEL_CACHE", str(cache))

    def refuse(*args, **kwargs):
        raise AssertionError("derived again although the cache holds the fused model")

    monkeypatch.setattr(fusion, "derive", refuse)
    again = MiniLMEmbedder()
    assert again.fused and again.model_path == fused.model_path


def test_damaged_cache_file_is_discarded_and_rebuilt(plain, fused, tmp_path, monkeypatch, caplog):
    import shutil

    import onnx
    from onnx import numpy_helper

    monkeypatch.setenv("AGENTCONTEXT_MODEL_CACHE", str(tmp_path))
    path = tmp_path / fused.model_path.name
    shutil.copyfile(fused.model_path, path)
    # weights changed but the file still parses: the probe vectors stored in it no longer match
    model = onnx.load(str(path))
    weight = next(i for i in model.graph.initializer if i.name.startswith("agentcontext_qkv_weight"))
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * 1.5, weight.name))
    onnx.save(model, str(path))
    with caplog.at_level(logging.WARNING, logger="agentcontext.embed.fusion"):
        second = MiniLMEmbedder()
    assert second.fused and "discarding the damaged fused model" in caplog.text
    assert min_cosine(second.embed(EDGE), plain.embed(EDGE)) >= 0.9999
    # a truncated file does not load at all
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agentcontext.embed.fusion"):
        third = MiniLMEmbedder()
    assert third.fused and "discarding" in caplog.text and path.stat().st_size == len(data)
    assert min_cosine(third.embed(EDGE), plain.embed(EDGE)) >= 0.9999
    assert not list(tmp_path.glob(".fusing-*"))  # no staging folder left behind


def test_unwritable_cache_means_the_plain_model_said_once(plain, tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("AGENTCONTEXT_MODEL_CACHE", str(blocker / "models"))
    monkeypatch.setattr(fusion, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="agentcontext.embed.fusion"):
        one, two = MiniLMEmbedder(), MiniLMEmbedder()
    assert not one.fused and not two.fused and one.model_path == one.source
    assert caplog.text.count("using the plain embedding model") == 1 and "could not be written" in caplog.text
    assert min_cosine(one.embed(EDGE), plain.embed(EDGE)) >= 0.99999


def test_missing_onnx_package_means_the_plain_model(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("AGENTCONTEXT_MODEL_CACHE", str(tmp_path))
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    monkeypatch.setattr(fusion, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="agentcontext.embed.fusion"):
        e = MiniLMEmbedder()
    assert not e.fused and "onnx package is missing" in caplog.text
    assert not list(tmp_path.iterdir())


def test_a_graph_of_another_shape_is_not_fused(fused):
    import onnx
    from onnx import numpy_helper

    assert fusion.fuse_attention(onnx.load(str(fused.model_path)), 12) == 0  # already fused: nothing left
    with pytest.raises(fusion.FusionError, match="not a multiple"):
        fusion.fuse_attention(_basic(fused.source), 7)
    # scores scaled otherwise than 1/sqrt(head size): refused, not silently fused with the kernel's own scale
    model = _basic(fused.source)
    for init in model.graph.initializer:
        value = numpy_helper.to_array(init)
        if value.size == 1 and abs(float(value.ravel()[0]) - 0.4204482) < 1e-6:
            init.CopyFrom(numpy_helper.from_array(np.array(0.5, dtype=value.dtype), init.name))
    with pytest.raises(fusion.FusionError, match="scaled"):
        fusion.fuse_attention(model, 12)


def _basic(source):
    import tempfile

    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = f"{tmp}/basic.onnx"
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        return onnx.load(f"{tmp}/basic.onnx")


def test_one_text_runs_over_idle_cores_and_on_one_thread_under_load(fused, plain, monkeypatch):
    e = MiniLMEmbedder(threads=2)
    used = []
    real_run = e._run
    monkeypatch.setattr(e, "_run", lambda session, tokens, idx: used.append(session) or real_run(session, tokens, idx))
    monkeypatch.setattr(base, "idle_cores", lambda *_: 0)
    busy = e.embed([EDGE[2]])
    assert used[-1] is e._session and e._wide is None  # busy machine: the one-thread session, no second session
    monkeypatch.setattr(base, "idle_cores", lambda *_: 2)
    idle = e.embed([EDGE[2]])
    assert e._wide is not None and used[-1] is e._wide
    assert min_cosine(busy, idle) >= 0.9999 and min_cosine(idle, plain.embed([EDGE[2]])) >= 0.9999
    e.embed(EDGE * 20)  # several batches: the one-thread session on the pool, whatever the idle cores
    assert all(s is e._session for s in used[2:])


def test_idle_cores_is_within_the_affinity_mask():
    assert 0 <= base.idle_cores() <= base.available_cores()
    assert 0 <= base.idle_cores(own_spinning=50) <= base.available_cores()


@pytest.mark.parametrize("running, own_spinning, idle", [
    (1, 0, 2),  # only the caller runs: both cores idle
    (2, 0, 1),  # one other task runs
    (2, 1, 2),  # the other task is our own spinning worker: it gives way, so both cores count as idle
    (3, 1, 1),  # our spinner and another process: one core busy
    (4, 1, 0),  # two other processes
    (1, 1, 2),  # the spinner went to sleep between the two readings: never more than the cores
    (9, 0, 0),
])
def test_idle_cores_discounts_only_our_own_spinning_workers(running, own_spinning, idle):
    assert base.idle_from(2, running, own_spinning) == idle


def test_calls_back_to_back_keep_the_wide_session_while_only_its_own_workers_spin(fused, monkeypatch):
    e = MiniLMEmbedder(threads=2)
    monkeypatch.setattr(base, "runnable_tasks", lambda: 1)
    e.embed([EDGE[2]])
    assert e._wide is not None and len(e._wide_workers._fds) == e.threads - 1  # its one worker is watched
    used = []
    real_run = e._run
    monkeypatch.setattr(e, "_run", lambda session, tokens, idx: used.append(session) or real_run(session, tokens, idx))
    monkeypatch.setattr(base, "runnable_tasks", lambda: 2)  # the caller and one more runnable task
    monkeypatch.setattr(e._wide_workers, "running", lambda: 1)  # ... which is our own worker, still spinning
    e.embed([EDGE[3]])
    assert used[-1] is e._wide
    monkeypatch.setattr(e._wide_workers, "running", lambda: 0)  # ... which is another process
    e.embed([EDGE[3]])
    assert used[-1] is e._session
    monkeypatch.setattr(base, "runnable_tasks", lambda: 3)  # another process beside our spinning worker
    monkeypatch.setattr(e._wide_workers, "running", lambda: 1)
    e.embed([EDGE[3]])
    assert used[-1] is e._session
    assert MiniLMEmbedder(threads=1)._lone_batch_wide() is False  # one thread: nothing to spread


def test_thread_watch_reads_this_process_threads():
    import threading

    stop = threading.Event()
    sleeper = threading.Thread(target=stop.wait)
    sleeper.start()
    try:
        deadline = time.monotonic() + 5  # start() returns before the thread reaches its wait: give it until then
        while base._ThreadWatch([sleeper.native_id]).running() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert base._ThreadWatch([sleeper.native_id]).running() == 0  # waiting on an event: state S
        assert base._ThreadWatch([threading.get_native_id()]).running() == 1  # the caller itself runs: R
    finally:
        stop.set()
        sleeper.join()
    assert base._ThreadWatch([]).running() == 0 and base._ThreadWatch([10**9]).running() == 0  # no such thread


def _child_embeds(e: MiniLMEmbedder, text: str, out) -> None:
    vector = e.embed([text])
    out.put((vector, e._wide_session() is e._session))


def test_a_forked_child_keeps_to_one_thread(fused, monkeypatch):
    import multiprocessing

    e = MiniLMEmbedder(threads=2)
    monkeypatch.setattr(base, "idle_cores", lambda *_: 2)
    parent = e.embed([EDGE[2]])
    assert e._wide is not None
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child_embeds, args=(e, EDGE[2], out))
    child.start()
    vector, narrow = out.get(timeout=60)  # a child opening or reusing a pooled session would hang here
    child.join(timeout=30)
    assert child.exitcode == 0 and narrow and min_cosine(vector, parent) >= 0.9999


def test_int8_part_missing_the_quality_bar_leaves_the_attention_fusion_alone(plain, tmp_path, monkeypatch, caplog):
    from onnx import numpy_helper

    from agentcontext.embed import quantize

    def spoiled(model, hidden, float_below):  # the int8 rewrite with its first layer's weight scales tripled
        count = quantize.quantize_ffn_down(model, hidden, float_below)
        scale = next(i for i in model.graph.initializer if i.name == "agentcontext_q_0_ws")
        scale.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(scale) * 3, scale.name))
        return count

    monkeypatch.setenv("AGENTCONTEXT_MODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(fusion, "quantize_ffn_down", spoiled)
    with caplog.at_level(logging.WARNING, logger="agentcontext.embed.fusion"):
        kept = MiniLMEmbedder()
    import onnx

    assert kept.fused and "miss the quality bar; fused float only" in caplog.text
    assert {n.op_type for n in onnx.load(str(kept.model_path)).graph.node}.isdisjoint({"If", "MatMulInteger"})
    assert min_cosine(kept.embed(EDGE), plain.embed(EDGE)) >= 0.99999
