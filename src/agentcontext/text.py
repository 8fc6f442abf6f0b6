"""Plain-text helpers shared by the store's text index and the services' scoring."""
from __future__ import annotations

STOPWORDS = frozenset(
    "a an and are as at be but by can could did do does for from had has have he her his how i if in into is it "
    "its me my no not of on or our she so than that the their them then there these they this to was we were "
    "what when where which who whom why will with would you your".split())
