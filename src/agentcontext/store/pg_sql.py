"""PostgreSQL helpers: URL handling, ``= ANY`` conditions and pgvector's binary form.
The schema is ``migrations/postgres.py``."""
from __future__ import annotations

from typing import Any, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from .migrations.postgres import INDEXED_CHARS  # noqa: F401  (how much of a body is text-searchable)
from .rows import Where


def split_url(url: str) -> tuple[str, str | None]:
    """(libpq URL, schema) from a store URL whose query may carry our ``schema=`` parameter."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), None)
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema or None


def redact(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)))


def decode_vectors(raws: Sequence[bytes]) -> np.ndarray:
    """One float32 matrix from pgvector binary values of one dimension (uint16 dim, uint16 unused,
    big-endian float4s)."""
    dim = int.from_bytes(raws[0][:2], "big")
    joined = b"".join(memoryview(r)[4:] for r in raws)
    return np.frombuffer(joined, dtype=">f4").reshape(len(raws), dim).astype(np.float32)


class PgWhere(Where):
    """``= ANY(array)`` needs no slicing."""

    PLACEHOLDER = "%s"

    def eq_any(self, column: str, values: list[Any] | None) -> None:
        if values is None:
            return
        if len(values) == 1:
            self.parts.append(f"{column} = %s")
            self.params.append(values[0])
        else:
            self.parts.append(f"{column} = ANY(%s)")
            self.params.append(values)
