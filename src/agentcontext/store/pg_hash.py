"""Text hashes held as bytes (issue 23 s2, migration 10): ``vectors.hash`` is ``bytea``, a SHA-256 hex digest (what
every embed hash is) stored as its 32 bytes instead of 64 characters of text: 32 bytes less a vector row (about two a
memory) and about 35 less an entry of the vectors' key.

The API keeps text hashes: a hash goes in through ``actx_hash`` (SQL) or ``to_bytes`` (a parameter) and comes out
through ``actx_hex`` / ``from_bytes``, lossless for any text: a 64-character lowercase hex string is its 32 bytes;
any other text is its UTF-8 bytes after one NUL byte (two when that would make it 32 bytes long), so only a digest
is 32 bytes long, and PostgreSQL text never holds a NUL, so stripping the leading NULs gives the text back.
Until migration 13 the nodes keep their hashes as text (``embed_hash``): a join between the two reads through these
functions (``v.hash = actx_hash(n.embed_hash)`` looks the vector up by its key; ``n.embed_hash = actx_hex(v.hash)``
the node by ``nodes_embed``). The functions are ``STABLE`` SQL (``convert_to`` is) and not ``STRICT`` (a strict one
whose body is not, a CASE, is not inlined), so the planner inlines them: ~2 us a hash in, ~1 us out at load 9 (the
digest test ``h !~ '[^0-9a-f]'``: an anchored ``^[0-9a-f]{64}$`` cost 24 us). A long list of hashes goes in as one
text of digests, split in the server (``digests_sql``).

A store pinned to an older schema (tests pin one) keeps text hashes: every helper takes ``on`` (the schema holds
bytes) and is the identity without it.

Migration 13 holds the nodes' two hashes (``content_hash``, ``embed_hash``, in ``nodes`` and ``node_versions``) the
same way (``nodes_bytes``): a node's row 64 bytes shorter and ``nodes_embed`` ~35 bytes an entry, and the join between
a node and its vector is a plain ``v.hash = n.embed_hash`` again. Writes send ``to_bytes``; every read of a node's
hash goes through ``text`` (the identity on text: SQLite and an older schema hold text), so the API keeps text.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

_DIGEST = re.compile(r"[0-9a-f]{64}")
_HEX_DIGITS = b"0123456789abcdef"

FUNCTIONS = (
    "CREATE OR REPLACE FUNCTION actx_hash(h text) RETURNS bytea LANGUAGE sql STABLE PARALLEL SAFE AS $$ "
    "SELECT CASE WHEN octet_length(h) = 64 AND h !~ '[^0-9a-f]' THEN decode(h, 'hex') WHEN octet_length(h) = 31 THEN "
    "'\\x0000'::bytea || convert_to(h, 'UTF8') ELSE '\\x00'::bytea || convert_to(h, 'UTF8') END $$",
    "CREATE OR REPLACE FUNCTION actx_hex(b bytea) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$ "
    "SELECT CASE WHEN length(b) = 32 THEN encode(b, 'hex') ELSE convert_from(ltrim(b, '\\x00'::bytea), 'UTF8') "
    "END $$",
)


def has_bytes(db: Any) -> bool:
    """Whether the schema holds ``vectors.hash`` as bytes (migration 10); a store pinned to an older one does not."""
    return db.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
                      "table_name = 'vectors' AND column_name = 'hash' AND data_type = 'bytea'").fetchone() is not None


def key_forms(store: Any) -> tuple[bool, bool]:
    """(vectors keyed by the hash's bytes: migration 10, the nodes' hashes held as bytes too: migration 13) for a
    store's connection. Vectors as bytes and nodes as text: the store finds a vector from a node or a version
    (sql_reads, _vectors_unused) through ``actx_hash`` / ``actx_hex``; both as bytes: the plain join of the
    dialect, and the text a title hashes to as its bytes."""
    vectors, nodes = has_bytes(store._db), nodes_bytes(store._db)
    if vectors and not nodes:
        store.VECTOR_JOIN = "v.hash = actx_hash(n.embed_hash)"
        store.VERSION_USES = store.LIVE_USES = "w.embed_hash = actx_hex(vectors.hash)"
    if nodes:
        text = store.EMBED_TEXT.replace("n.embed_hash = encode(", "n.embed_hash = (")
        store.EMBED_TEXT = text.replace(", 'hex')", ")")
    return vectors, nodes


def nodes_bytes(db: Any) -> bool:
    """Whether the schema holds the nodes' hashes as bytes (migration 13)."""
    found = db.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
                       "table_name = 'nodes' AND column_name = 'embed_hash' AND data_type = 'bytea'").fetchone()
    return found is not None


def text(value: Any) -> Any:
    """A node's hash as read (bytes on a schema of migration 13, text before it and on SQLite) as its text; None
    stays None."""
    return value if value is None or type(value) is str else from_bytes(value)


def node_param(h: str | None, on: bool) -> Any:
    """A node's text hash as ``nodes`` holds it (``on``: migration 13); None stays None."""
    return to_bytes(h) if on and h is not None else h


def to_bytes(h: str) -> bytes:
    """A text hash as ``vectors.hash`` holds it (``actx_hash`` in SQL)."""
    if _DIGEST.fullmatch(h):
        return bytes.fromhex(h)
    raw = h.encode()
    return (b"\x00\x00" if len(raw) == 31 else b"\x00") + raw


def from_bytes(b: bytes) -> str:
    """The text hash of a ``vectors.hash`` value (``actx_hex`` in SQL)."""
    b = bytes(b)
    return b.hex() if len(b) == 32 else b.lstrip(b"\x00").decode()


def params(hashes: Sequence[str], on: bool) -> list[Any]:
    """Text hashes as parameters compared with ``vectors.hash``."""
    return [to_bytes(h) for h in hashes] if on else list(hashes)


def into(expr: str, on: bool) -> str:
    """SQL: a text hash ``expr`` as ``vectors.hash`` holds it."""
    return f"actx_hash({expr})" if on else expr


def out(expr: str, on: bool) -> str:
    """SQL: a ``vectors.hash`` value ``expr`` as its text hash."""
    return f"actx_hex({expr})" if on else expr


def all_digests(hashes: Sequence[str]) -> bool:
    """Whether every hash is a digest's 64 hex characters: checked as one text (lengths, then one match), not one
    match each (~2,800 a query)."""
    if not hashes:
        return True
    if max(map(len, hashes)) != 64 or min(map(len, hashes)) != 64:
        return False
    joined = "".join(hashes)
    return joined.isascii() and not joined.encode("ascii").translate(None, _HEX_DIGITS)


def texts(keys: Sequence[bytes]) -> list[str]:
    """The text hashes of ``vectors.hash`` values (``from_bytes`` of each), the digests' hex made in one call."""
    if keys and all(len(k) == 32 for k in keys):
        joined = b"".join(keys).hex()
        return [joined[i:i + 64] for i in range(0, len(joined), 64)]
    return [from_bytes(k) for k in keys]


def digests_sql(param: str) -> str:
    """SQL: an array of ``vectors.hash`` values from one parameter, the digests' hex joined (``"".join(hashes)``, each
    64 characters, ``all_digests``): one decode, then 32-byte slices."""
    return (f"ARRAY(SELECT substring(b FROM i * 32 + 1 FOR 32) FROM decode({param}, 'hex') b, "
            "generate_series(0, length(b) / 32 - 1) i)")
