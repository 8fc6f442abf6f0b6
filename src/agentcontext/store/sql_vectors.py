"""The vectors part of ``SQLStore`` (``sql_part.Part``): vector writes, keyed by (text hash, model), refused unless
finite; the vector reads are in ``sql_reads.py``."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import ValidationError
from .sql_part import Part


def refuse_not_finite(hashes: Sequence[str], arrays: Sequence[np.ndarray]) -> None:
    """ValidationError naming the first vector holding NaN or infinity (checked a matrix at a time)."""
    if not arrays:
        return
    if len({a.shape for a in arrays}) == 1:
        ok = np.isfinite(np.stack(arrays)).all(axis=1)
    else:
        ok = np.array([np.isfinite(a).all() for a in arrays])
    if not ok.all():
        h = hashes[int(np.flatnonzero(~ok)[0])]
        raise ValidationError(f"vector for {h} holds NaN or infinity; only finite values can be stored (check the "
                              "embedder's output)", hash=h)


class Vectors(Part):
    """Writes of vectors."""

    __slots__ = ()

    def put_vectors(self, vectors: dict[str, np.ndarray], model: str) -> int:
        arrays = [np.asarray(vec, dtype=np.float32) for vec in vectors.values()]
        for h, arr in zip(vectors, arrays):
            if arr.ndim != 1 or not arr.size:
                raise ValidationError(f"vector for {h} must be one non-empty row, got shape {arr.shape}", hash=h)
        refuse_not_finite(list(vectors), arrays)
        value = self._vector_value
        rows = [(h, model, arr.shape[0], value(arr)) for h, arr in zip(vectors, arrays)]
        with self.transaction():
            self._upsert_vectors(rows)
            if rows:
                self._log(self._now(), "", "vectors.put", model, "", {"count": len(rows)})
        return len(rows)

    def delete_vectors(self, hashes: Sequence[str]) -> int:
        count = 0
        with self.transaction():
            for chunk in self._chunks(list(dict.fromkeys(hashes))):
                clause, params = self._hash_in("hash", chunk)
                count += self._exec(f"DELETE FROM vectors WHERE {clause}", params)
            if count:
                self._log(self._now(), "", "vectors.delete", "*", "", {"count": count})
        return count
