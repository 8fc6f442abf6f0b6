"""The built model folder packed as a wheel (``agentcontext-minilm-fused``), written with the standard library only:
a zip of the package folder and its ``.dist-info`` (METADATA, WHEEL, RECORD with each file's sha256)."""
from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

from agentcontext.embed.artifact import DISTRIBUTION, PACKAGE

INIT = '"""The fused int8 all-MiniLM-L6-v2 model agentcontext loads (model.onnx, manifest.json); built by its ' \
       'tools/build_model.py."""\n'


def wheel_version(manifest: dict) -> str:
    """1.0 with a local label naming the source file and the build's versions: another source or recipe is
    another wheel."""
    return (f"1.0+{manifest['source_sha256'][:12]}.f{manifest['fusion_version']}q{manifest['quantize_version']}"
            f"b{manifest['float_below']}")


def write_wheel(folder: Path, manifest: dict, dist: Path) -> Path:
    """The wheel of the model folder ``folder`` (its ``model.onnx`` and ``manifest.json``) written into ``dist``."""
    version = wheel_version(manifest)
    name = DISTRIBUTION.replace("-", "_")
    info = f"{name}-{version}.dist-info"
    files: list[tuple[str, bytes | Path]] = [
        (f"{PACKAGE}/__init__.py", INIT.encode()),
        (f"{PACKAGE}/{manifest['file']}", folder / manifest["file"]),
        (f"{PACKAGE}/manifest.json", folder / "manifest.json"),
        (f"{info}/METADATA", (f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: {version}\n"
                              "Summary: The fused int8 all-MiniLM-L6-v2 model for agentcontext (built locally)\n"
                              "License: Apache-2.0\n").encode()),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: agentcontext tools/model/wheel.py\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n")]
    dist.mkdir(parents=True, exist_ok=True)
    path = dist / f"{name}-{version}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as whl:
        for arcname, content in files:
            data = content.read_bytes() if isinstance(content, Path) else content
            whl.writestr(arcname, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arcname},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        whl.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path
