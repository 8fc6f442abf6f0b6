"""Token counting: exact cl100k_base counts for ordinary text, and bounded time for one very long word (byte-pair
encoding is quadratic in a pre-token's length: a fuzzed 120,000-character doc hung the MCP server's create); the
table shipped with us is tiktoken's own cl100k_base, byte for byte, checked at load, and nothing is downloaded."""
from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import time

import pytest

from agentcontext import tokens
from agentcontext.errors import ValidationError
from agentcontext.tokens import LONG_RUN, count_tokens, truncate_tokens

EXACT = tokens._encoding()  # the encoding without the slicing of long runs


def test_the_shipped_table_is_tiktokens_cl100k_base_byte_for_byte(monkeypatch):
    ranks = tokens.load_ranks()
    canonical = b"".join(base64.b64encode(token) + b" %d\n" % rank
                         for token, rank in sorted(ranks.items(), key=lambda item: item[1]))
    assert hashlib.sha256(canonical).hexdigest() == tokens.CL100K_SHA256 == (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7")
    import tiktoken_ext.openai_public as openai_public  # tiktoken's own definition, its download replaced by ours

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda url, expected_hash=None: (
        ranks if expected_hash == tokens.CL100K_SHA256 else pytest.fail(f"another table: {url}")))
    spec = openai_public.cl100k_base()
    assert spec["pat_str"] == tokens.PATTERN and spec["special_tokens"] == tokens.SPECIAL
    assert EXACT.encode("hello world") == [15339, 1917] and EXACT.n_vocab == 100277


def test_counting_downloads_nothing_and_a_damaged_table_is_refused(tmp_path):
    code = ("import socket\n"
            "def refuse(*a, **k): raise SystemExit('network used')\n"
            "socket.socket.connect = refuse\n"
            "from agentcontext.tokens import count_tokens\n"
            "print(count_tokens('hello world, once more'))")
    env = {"PATH": "/usr/bin:/bin", "TIKTOKEN_CACHE_DIR": str(tmp_path / "none"), "PYTHONPATH": ":".join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["5"], out.stderr
    assert not (tmp_path / "none").exists()
    damaged = tmp_path / "table.bpe.z"
    shutil.copyfile(tokens.TABLE, damaged)
    damaged.write_bytes(damaged.read_bytes()[:-1] + b"\0")
    with pytest.raises(ValidationError, match="damaged or was replaced"):
        tokens.load_ranks(damaged)


def test_ordinary_text_counts_exactly_as_the_encoding():
    for text in ["", "hello world", "Alice works at Acme.\n\n  Bob   too?", "ü.ß → 東京 " * 50,
                 "a" * LONG_RUN + " tail", "https://example.com/" + "p/" * 100]:
        assert count_tokens(text) == len(EXACT.encode(text, disallowed_special=()))


def test_a_very_long_word_counts_quickly_and_close_to_the_exact_count():
    started = time.perf_counter()
    assert count_tokens("x" * 120_000) > 0
    assert time.perf_counter() - started < 5
    word = "y" * 3_000
    exact = len(EXACT.encode(word, disallowed_special=()))
    assert exact <= count_tokens(word) <= exact + 3_000 // LONG_RUN + 1


def test_truncation_of_a_long_word_is_a_prefix_within_the_budget():
    text = "start " + "z" * 50_000 + " end"
    cut = truncate_tokens(text, 40)
    assert text.startswith(cut) and 0 < count_tokens(cut) <= 41
    assert truncate_tokens("short text", 40) == "short text"
