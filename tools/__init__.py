"""Build steps run in a checkout, never at run time (``python -m tools.build_model``: the fused model artifact)."""
