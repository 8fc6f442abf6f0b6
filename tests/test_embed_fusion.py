"""The fused default model as a build artifact (tools/build_model.py, agentcontext.embed.artifact): the build's
quality gate (cosine >= 0.999 against the plain model on the probe set; the same below FLOAT_BELOW tokens) as a
test, its int8 storage (~23 MB, not the 94 MB of float weights), the wheel it packs; at load the artifact's sha256
and source checked, nothing derived or written and no ``onnx`` needed, the plain model with a one-line hint when
it is absent or does not check; and the one-text path on onnxruntime's own thread pool (no load read from /proc)."""
from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentcontext.embed import artifact, base
from agentcontext.embed.artifact import FLOAT_BELOW
from agentcontext.embed.base import MINILM, MiniLMEmbedder
from tools.model import build as model_build
from tools.model import fuse, quantize
from tools.model.compact import compact_weights
from tools.model.wheel import write_wheel

EDGE = ["", "a", "The cat sat on the mat", "The cat sat on the mat", "naïve café — 日本語のテキスト, ÄÖÜ ß 🙂",
        "word " * 400, "how do agents rotate tokens when the billing quota is reached"]
LOGGER = "agentcontext.embed.artifact"


@pytest.fixture(scope="module")
def plain():
    return MiniLMEmbedder(fuse=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory, plain):
    """The artifact built once for this module, as `make model` builds it: (folder, manifest)."""
    folder = tmp_path_factory.mktemp("model") / artifact.PACKAGE
    return folder, model_build.build(folder, plain)


@pytest.fixture(scope="module")
def fused(built):
    mp = pytest.MonkeyPatch()
    mp.setenv(artifact.ENV, str(built[0]))
    try:
        yield MiniLMEmbedder()
    finally:
        mp.undo()


@pytest.fixture()
def said(monkeypatch, caplog):
    """The artifact's one-line hints, each said once per process: forget those said by earlier tests."""
    monkeypatch.setattr(artifact, "_said", set())
    caplog.set_level(logging.WARNING, logger=LOGGER)
    return caplog


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float((a * b).sum(axis=1).min())


def test_the_build_meets_the_quality_gate_and_stores_int8_weights(built, plain):
    folder, manifest = built
    model = folder / manifest["file"]
    assert manifest["source_sha256"] == base.MODEL_SHA256 and manifest["sha256"] == artifact.file_sha256(model)
    assert manifest["attention_blocks"] == 6 and manifest["int8_ffn"] and manifest["float_below"] == FLOAT_BELOW
    assert manifest["min_cosine"] >= artifact.MIN_COSINE and manifest["short_min_cosine"] >= artifact.SAME_COSINE
    assert json.loads((folder / "manifest.json").read_text()) == manifest
    # the gate on the file as written, probe by probe, against the plain (reference) model
    session = plain._open(str(model))
    cos = ((plain._embed_on(session, artifact.PROBES)) * plain._embed_on(plain._session, artifact.PROBES)).sum(axis=1)
    assert cos.min() >= artifact.MIN_COSINE and cos[:artifact.SHORT_PROBES].min() >= artifact.SAME_COSINE
    # every weight stored as int8 with its scales: the size of the shipped int8 model, not 94 MB of float32
    assert manifest["int8_weights"] >= 25 and model.stat().st_size < 26_000_000
    import onnx

    graph = onnx.load(str(model)).graph
    ops = {n.op_type for n in graph.node}
    assert "Attention" in ops and "Softmax" not in ops
    branches = {a.name: {n.op_type for n in a.g.node} for n in graph.node if n.op_type == "If" for a in n.attribute}
    assert branches["then_branch"] >= {"MatMulInteger", "QuantizeLinear"} and branches["else_branch"] == {"MatMul"}
    floats = [i.dims for i in graph.initializer if i.data_type == onnx.TensorProto.FLOAT and np.prod(i.dims) >= 4096]
    assert all(1 in dims for dims in floats)  # only the scales (one per row of the embedding tables) stay float


def test_a_model_missing_the_gate_is_not_written(plain, tmp_path):
    reference = plain.embed(artifact.PROBES)
    near = reference + 0.001 * np.random.default_rng(1).standard_normal(reference.shape).astype(np.float32)
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    every, short = model_build.gate(np.vstack([reference[:4], near[4:]]), reference)  # ~0.9998 from 48 tokens on
    assert artifact.MIN_COSINE < every < 0.99999 and short >= artifact.SAME_COSINE
    with pytest.raises(model_build.GateError, match="0.99999"):
        model_build.gate(near, reference)  # short texts must stay the plain model's own vectors
    with pytest.raises(model_build.GateError, match="quality gate"):
        model_build.gate(np.roll(reference, 1, axis=0), reference)

    def spoiled(model):  # every int8 weight's scales tripled after the checks of the fusion and the int8 part
        from onnx import numpy_helper

        count = compact_weights(model)
        for init in model.graph.initializer:
            if init.name.endswith("_scale"):
                init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * 3, init.name))
        return count

    with pytest.raises(model_build.GateError, match="misses the quality gate"):
        model_build.build(tmp_path / "m", plain, compact=spoiled)
    assert list((tmp_path / "m").iterdir()) == []  # nothing written


def test_fused_model_keeps_the_vectors_and_their_key(plain, fused, built):
    assert fused.fused and not plain.fused and fused.model_path == built[0] / "model.onnx"
    assert fused.name == plain.name == MINILM  # same vectors, so cached vectors keep their key
    for texts in (EDGE, EDGE[:1], EDGE[5:6], [EDGE[2]] * 3):
        a, b = fused.embed(texts), plain.embed(texts)
        assert a.shape == b.shape == (len(texts), 384)
        assert min_cosine(a, b) >= artifact.MIN_COSINE  # the quality bar (0.999): int8 FFN outputs at >= 48 tokens
    short = [t for t in EDGE if len(fused._tokens([t])[0]) < FLOAT_BELOW]
    assert len(short) == 6 and min_cosine(fused.embed(short), plain.embed(short)) >= 0.9999  # float: as before


def test_int8_runs_only_at_the_quantized_width_and_keep_each_text_alone_equal(fused, plain):
    """Texts shorter than FLOAT_BELOW tokens never share a run with longer ones, so a text's vector is the same
    alone, in a batch and padded; the probes the build checks cover both widths."""
    lengths = [len(ids) for ids in fused._tokens(artifact.PROBES)]
    assert max(lengths[:artifact.SHORT_PROBES]) < FLOAT_BELOW <= lengths[artifact.SHORT_PROBES]
    assert artifact.SHORT_PROBES < artifact.LOAD_PROBES  # every load re-checks an int8-width probe too
    for batch in base.plan_batches([3, 60, 47, 48, 49, 10, 47, 200] * 4, batch_tokens=4096, max_batch=64,
                                   split_at=FLOAT_BELOW):
        widths = [[3, 60, 47, 48, 49, 10, 47, 200][i % 8] for i in batch]
        assert max(widths) < FLOAT_BELOW or min(widths) >= FLOAT_BELOW
    long = "Billing rules. How invoices are retried when a card fails, and when agents notify the owner. " * 2
    texts = ["hi", long, "The cat sat on the mat", long + "Then again.", "naïve café 🙂"]
    alone = np.stack([fused.embed([t])[0] for t in texts])
    together = fused.embed(texts)
    assert min_cosine(alone, together) >= 0.99999
    assert min_cosine(together, plain.embed(texts)) >= artifact.MIN_COSINE
    assert min_cosine(together[[0, 2, 4]], plain.embed([texts[i] for i in (0, 2, 4)])) >= 0.99999


def test_loading_derives_nothing_writes_nothing_and_needs_no_onnx(built, tmp_path, monkeypatch, said):
    monkeypatch.setenv(artifact.ENV, str(built[0]))
    monkeypatch.setenv("AGENTCONTEXT_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    before = sorted(p.name for p in built[0].iterdir())
    e = MiniLMEmbedder()
    assert e.fused and not said.text
    assert sorted(p.name for p in built[0].iterdir()) == before and not (tmp_path / "cache").exists()


def test_absent_artifact_means_the_plain_model_and_one_line_said_once(plain, tmp_path, monkeypatch, said):
    monkeypatch.setenv(artifact.ENV, str(tmp_path / "nothing-here"))
    one, two = MiniLMEmbedder(), MiniLMEmbedder()
    assert not one.fused and not two.fused and one.model_path == one.source
    lines = [r.getMessage() for r in said.records]
    assert len(lines) == 1 and "\n" not in lines[0] and "no fused model is installed" in lines[0]
    assert "make model" in lines[0]
    assert min_cosine(one.embed(EDGE), plain.embed(EDGE)) >= 0.99999


def _copy(built, tmp_path) -> Path:
    folder = tmp_path / artifact.PACKAGE
    shutil.copytree(built[0], folder)
    return folder


def test_a_damaged_or_replaced_model_file_is_refused_by_its_sha256(built, plain, tmp_path, monkeypatch, said):
    folder = _copy(built, tmp_path)
    monkeypatch.setenv(artifact.ENV, str(folder))
    data = bytearray((folder / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF  # one weight byte: the file still loads, its sha256 does not match
    (folder / "model.onnx").write_bytes(bytes(data))
    e = MiniLMEmbedder()
    assert not e.fused and "is damaged or was replaced" in said.text
    assert min_cosine(e.embed(EDGE), plain.embed(EDGE)) >= 0.99999


def test_an_artifact_of_another_source_or_format_is_not_used(built, tmp_path, monkeypatch, said):
    folder = _copy(built, tmp_path)
    monkeypatch.setenv(artifact.ENV, str(folder))
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "source_sha256": "0" * 64}))
    assert not MiniLMEmbedder().fused and "built from another model file" in said.text
    (folder / "manifest.json").write_text(json.dumps({**manifest, "format": 99}))
    assert not MiniLMEmbedder().fused and "manifest format 99" in said.text
    (folder / "manifest.json").write_text("{not json")
    assert not MiniLMEmbedder().fused and "unreadable" in said.text


def test_a_model_that_does_not_reproduce_its_probe_vectors_is_not_used(built, tmp_path, monkeypatch, said):
    """The sha256 matches (the manifest rewritten with the file) but the stored probe vectors do not: refused."""
    import onnx

    folder = _copy(built, tmp_path)
    monkeypatch.setenv(artifact.ENV, str(folder))
    model = onnx.load(str(folder / "model.onnx"))
    entry = next(p for p in model.metadata_props if p.key == artifact.META_KEY)
    vectors = np.frombuffer(__import__("base64").b64decode(entry.value), dtype=np.float32)[::-1].copy()
    entry.value = __import__("base64").b64encode(vectors.tobytes()).decode()
    onnx.save(model, str(folder / "model.onnx"))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["sha256"] = artifact.file_sha256(folder / "model.onnx")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert not MiniLMEmbedder().fused and "does not reproduce its probe vectors" in said.text


def test_the_wheel_installs_and_is_found_without_the_env(built, tmp_path):
    wheel = write_wheel(built[0], built[1], tmp_path / "dist")
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(target),
                    str(wheel)], check=True)
    code = ("import sys; from agentcontext.embed.base import MiniLMEmbedder; e = MiniLMEmbedder(); "
            "print(e.fused, e.model_path)")
    import os

    env = {k: v for k, v in os.environ.items() if k != artifact.ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(target), str(Path(base.__file__).parents[2])])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", str(target / artifact.PACKAGE / "model.onnx")], out.stderr


def test_a_graph_of_another_shape_is_not_fused(fused):
    import onnx

    from tools.model.compact import int8_split

    model = _basic(fused.source)
    assert fuse.fuse_attention(model, 12) == 6 and fuse.fuse_attention(model, 12) == 0  # already fused: none left
    with pytest.raises(fuse.FusionError, match="not a multiple"):
        fuse.fuse_attention(_basic(fused.source), 7)
    # scores scaled otherwise than 1/sqrt(head size): refused, not silently fused with the kernel's own scale
    from onnx import numpy_helper

    model = _basic(fused.source)
    for init in model.graph.initializer:
        value = numpy_helper.to_array(init)
        if value.size == 1 and abs(float(value.ravel()[0]) - 0.4204482) < 1e-6:
            init.CopyFrom(numpy_helper.from_array(np.array(0.5, dtype=value.dtype), init.name))
    with pytest.raises(fuse.FusionError, match="scaled"):
        fuse.fuse_attention(model, 12)
    assert onnx is not None and int8_split(np.array([[0.1, 0.2], [0.3, 1 / 3]], np.float32)) is None  # not int8


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


def test_one_text_runs_on_onnxruntimes_own_pool_without_reading_the_load(fused, plain, monkeypatch):
    """A lone batch runs over ``threads`` cores on onnxruntime's intra-op pool, workers not spinning; nothing reads
    /proc/loadavg or this process's threads to choose (issue 27: onnxruntime's own thread settings)."""
    import builtins

    e = MiniLMEmbedder(threads=2)
    used = []
    real_run = e._run
    monkeypatch.setattr(e, "_run", lambda session, tokens, idx: used.append(session) or real_run(session, tokens, idx))
    real_open = builtins.open
    read = []
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: read.append(str(f)) or real_open(f, *a, **k))
    one = e.embed([EDGE[2]])
    assert e._wide is not None and used[-1] is e._wide and not [f for f in read if f.startswith("/proc")]
    options = e._wide.get_session_options()
    assert options.intra_op_num_threads == 2
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert min_cosine(one, plain.embed([EDGE[2]])) >= 0.9999
    e.embed(EDGE * 20)  # several batches: the one-thread session on the pool
    assert all(s is e._session for s in used[1:])
    narrow = MiniLMEmbedder(threads=1)
    assert narrow._wide_session() is narrow._session and narrow._wide is None  # one thread: nothing to spread
    assert not hasattr(base, "idle_cores") and not hasattr(base, "runnable_tasks")


def _child_embeds(e: MiniLMEmbedder, text: str, out) -> None:
    vector = e.embed([text])
    out.put((vector, e._wide_session() is e._session))


def test_a_forked_child_keeps_to_one_thread(fused, monkeypatch):
    import multiprocessing

    e = MiniLMEmbedder(threads=2)
    parent = e.embed([EDGE[2]])
    assert e._wide is not None
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child_embeds, args=(e, EDGE[2], out))
    child.start()
    vector, narrow = out.get(timeout=60)  # a child opening or reusing a pooled session would hang here
    child.join(timeout=30)
    assert child.exitcode == 0 and narrow and min_cosine(vector, parent) >= 0.9999


def test_int8_part_missing_the_quality_bar_leaves_the_attention_fusion_alone(plain, tmp_path, monkeypatch):
    from onnx import numpy_helper

    def spoiled(model, hidden, float_below):  # the int8 rewrite with its first layer's weight scales tripled
        count = quantize.quantize_ffn_down(model, hidden, float_below)
        scale = next(i for i in model.graph.initializer if i.name == "agentcontext_q_0_ws")
        scale.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(scale) * 3, scale.name))
        return count

    manifest = model_build.build(tmp_path / "m", plain, quantize=spoiled)
    import onnx

    assert not manifest["int8_ffn"] and "int8 feed-forward projections left out" in manifest["notes"][0]
    assert {n.op_type for n in onnx.load(str(tmp_path / "m" / "model.onnx")).graph.node}.isdisjoint(
        {"If", "MatMulInteger"})
    monkeypatch.setenv(artifact.ENV, str(tmp_path / "m"))
    kept = MiniLMEmbedder()
    assert kept.fused and min_cosine(kept.embed(EDGE), plain.embed(EDGE)) >= 0.99999
