"""Build the fused int8 embedding model once: ``python -m tools.build_model [--out build/model] [--install]``
(``make model``). Writes ``OUT/agentcontext_minilm_fused/{model.onnx,manifest.json}`` and the wheel
``OUT/agentcontext_minilm_fused-*.whl``; ``--install`` installs that wheel into this interpreter's environment
(``pip install --no-index --no-deps``: nothing is downloaded). Needs the ``onnx`` package (the ``model-build`` or
``dev`` extra). Exits non-zero when the model misses the quality gate (tools/model/build.py)."""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from agentcontext.embed.artifact import PACKAGE

from .model.build import build
from .model.wheel import write_wheel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.build_model", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/model"), help="where the folder and wheel go")
    parser.add_argument("--install", action="store_true", help="pip install the wheel into this environment")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    manifest = build(args.out / PACKAGE)
    for old in args.out.glob(f"{PACKAGE}-*.whl"):  # one wheel in OUT: `make model` installs OUT/*.whl
        old.unlink()
    wheel = write_wheel(args.out / PACKAGE, manifest, args.out)
    print(f"built {args.out / PACKAGE / manifest['file']} in {time.perf_counter() - started:.1f} s: "
          f"{manifest['size'] / 1e6:.1f} MB, sha256 {manifest['sha256'][:16]}..., {manifest['attention_blocks']} "
          f"attention blocks fused, int8 feed-forward outputs {'on' if manifest['int8_ffn'] else 'off'}, "
          f"min cosine {manifest['min_cosine']} against the plain model on {manifest['probes']} probes")
    for note in manifest["notes"]:
        print(f"note: {note}")
    print(f"wheel: {wheel}")
    if args.install:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--force-reinstall",
                        str(wheel)], check=True)
        print(f"installed into {sys.prefix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
