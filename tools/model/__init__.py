"""The fused int8 model's build: attention fusion (fuse.py), int8 feed-forward outputs (quantize.py), int8 weight
storage (compact.py), the quality gate and the files (build.py), the wheel (wheel.py)."""
