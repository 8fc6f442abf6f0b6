"""The fused int8 model as a build artifact: found, checked by its sha256 and opened; never derived here.

``tools/build_model.py`` (``make model``) derives it once from the default model file (its self-attention fused
into onnxruntime's ``Attention`` kernel, the feed-forward output projections run in int8 for model runs at least
``FLOAT_BELOW`` tokens wide, every weight stored as int8 with its scales: ~25 MB) and packs it as the wheel
``agentcontext-minilm-fused``, the package ``agentcontext_minilm_fused`` holding ``model.onnx`` and
``manifest.json``. The build refuses to write a model that misses the quality gate (cosine >= 0.999 against the
plain model on every probe text, the same vectors up to float noise below ``FLOAT_BELOW`` tokens).

At load the folder named by ``AGENTCONTEXT_MODEL_ARTIFACT`` (a folder holding those two files), else the installed
package, is used when its manifest names the source file this build of agentcontext checks (``model_files``), the
model file's bytes are the ones the manifest records (sha256), and the model reproduces the probe vectors the build
stored in it (``SAME_COSINE``, on ``LOAD_PROBES`` of them). Otherwise the plain model runs (the same vectors,
slower) and one line says why and how to build the artifact. Nothing here needs the ``onnx`` package.
"""
from __future__ import annotations

import base64
import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .model_files import file_sha256

log = logging.getLogger(__name__)

PACKAGE = "agentcontext_minilm_fused"
DISTRIBUTION = "agentcontext-minilm-fused"
ENV = "AGENTCONTEXT_MODEL_ARTIFACT"
FORMAT = 1  # manifest.json's layout
FLOAT_BELOW = 48  # model runs narrower than this many tokens are computed wholly in float32 (tools/model/quantize.py)
MIN_COSINE = 0.999  # the quality gate: the fused model against the plain one, on every probe text
SAME_COSINE = 0.99999  # computed the same way, up to float noise: the float path, and every load's re-check
PROBES = ["", "a", "The cat sat on the mat", "naïve café, 日本語のテキスト and emoji 🙂",
          "how do agents rotate tokens when the billing quota is reached? " * 5,
          "how do agents rotate tokens when the billing quota is reached? " * 3, "word " * 400]
SHORT_PROBES = 4  # the first ones, narrower than FLOAT_BELOW tokens (tests/test_embed_fusion.py checks it)
LOAD_PROBES = 5  # re-checked at every load: the short ones and one of the int8 width
META_KEY = "agentcontext.probe_vectors"  # the build's probe vectors, in the model file's metadata
HINT = ("build it once with `make model` (python -m tools.build_model --install) in an agentcontext checkout, "
        f"or install the {DISTRIBUTION} wheel it makes")

Embed = Callable[[object, list[str]], np.ndarray]  # (session, texts) -> pooled, normalised vectors

_said: set[str] = set()
_said_lock = threading.Lock()


@dataclass(frozen=True)
class Artifact:
    path: Path  # the model file
    sha256: str
    float_below: int
    manifest: dict


def say_once(reason: str) -> None:
    """One warning line per reason per process: the plain model runs, why, and how to get the fused one."""
    with _said_lock:
        if reason in _said:
            return
        _said.add(reason)
    log.warning("agentcontext: the plain embedding model runs (%s; same vectors, slower): %s", reason, HINT)


def artifact_folder() -> Path | None:
    """``AGENTCONTEXT_MODEL_ARTIFACT`` when set, else the installed package's folder, else ``None``."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    import importlib.util

    spec = importlib.util.find_spec(PACKAGE)  # its files only: importing the package is not needed
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def find_artifact(source_sha256: str) -> Artifact | None:
    """The artifact built from the model file of sha256 ``source_sha256``, its bytes checked, or ``None`` after
    saying why (absent, built from another file, damaged)."""
    folder = artifact_folder()
    manifest_path = folder / "manifest.json" if folder is not None else None
    if manifest_path is None or not manifest_path.is_file():
        say_once(f"no fused model is installed{f' in {folder}' if folder is not None else ''}")
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        path, expected = folder / manifest["file"], manifest["sha256"]
        source, float_below, fmt = manifest["source_sha256"], int(manifest["float_below"]), manifest["format"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        say_once(f"the fused model's manifest {manifest_path} is unreadable ({exc})")
        return None
    if fmt != FORMAT:
        say_once(f"the fused model in {folder} has manifest format {fmt}, this agentcontext reads {FORMAT}")
        return None
    if source != source_sha256:
        say_once(f"the fused model in {folder} was built from another model file (sha256 {str(source)[:16]}...)")
        return None
    try:
        got = file_sha256(path)
    except OSError as exc:
        say_once(f"cannot read the fused model {path} ({exc})")
        return None
    if got != expected:
        say_once(f"the fused model {path} is damaged or was replaced (sha256 {got[:16]}..., its manifest says "
                 f"{str(expected)[:16]}...)")
        return None
    return Artifact(path, got, float_below, manifest)


def open_checked(artifact: Artifact, make_session: Callable[[str], object], embed: Embed) -> object | None:
    """A session on the artifact if it loads here and reproduces the probe vectors stored in it, else ``None``
    after saying why (another onnxruntime computing its kernels differently would show here)."""
    try:
        session = make_session(str(artifact.path))
        meta = session.get_modelmeta().custom_metadata_map  # type: ignore[attr-defined]
        expected = np.frombuffer(base64.b64decode(meta[META_KEY]), dtype=np.float32).reshape(len(PROBES), -1)
    except (KeyError, ValueError, OSError) as exc:
        say_once(f"the fused model {artifact.path} has no readable probe vectors ({exc})")
        return None
    except Exception as exc:  # onnxruntime's load errors derive from Exception only (an operator it lacks)
        say_once(f"the fused model {artifact.path} does not load in this onnxruntime ({exc})")
        return None
    got = embed(session, PROBES[:LOAD_PROBES])
    cosine = float((got * expected[:LOAD_PROBES]).sum(axis=1).min()) if expected.shape[1:] == got.shape[1:] else 0.0
    if cosine < SAME_COSINE:
        say_once(f"the fused model {artifact.path} does not reproduce its probe vectors here (cosine {cosine:.6f})")
        return None
    return session
