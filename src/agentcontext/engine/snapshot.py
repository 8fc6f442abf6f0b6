"""Index files: a derived index persisted beside the store, so a new process maps it instead of rebuilding it.

One file per index (``<store folder>/indexes/<name>.<model>.idx``), a safetensors file (huggingface/safetensors'
layout: any safetensors reader opens it, ``safetensors.numpy.load_file`` gives every section as an array):

- bytes 0-7: the header's length as a little-endian uint64, always ``PAGE - 8`` (so the header, padded with spaces,
  has the first page to itself and these bytes are the file's fixed ``MAGIC``);
- bytes 8..PAGE: the header, UTF-8 JSON: one entry per section (``dtype`` such as ``F32``, ``I64``, ``U8``;
  ``shape``; ``data_offsets`` from byte ``PAGE``), ``__pad.N`` entries (``U8``) filling the gaps that start each
  section at a 64-byte boundary (safetensors allows no holes), and ``__metadata__`` holding the staleness header
  as JSON text under ``agentcontext``: ``format``, ``kind``, ``name``, ``model``, ``store`` (the store's identity),
  ``counter`` (the change counter the rows reflect), ``mark`` (a digest of the change at that counter), ``size``
  (the whole file's length), ``blobs`` (the sections that are bytes: JSON text of ids, labels, props, word counts)
  and ``crc`` (section -> crc32); and under ``agentcontext.crc`` the crc32 of the header written without that key;
- the sections from byte ``PAGE`` on: float and integer planes as raw little-endian C-order arrays, blobs as bytes.

A file is used only when all of these hold, else it is ignored (and the index rebuilt and saved again): the
magic, the header's crc32, the format number, the kind, name and model
asked for, the store identity (a digest of the store's first change: a file copied from another workspace
is foreign), a counter not ahead of the store's and the store's change at that counter matching ``mark``
(a store restored from a backup, then written again, is caught), the file size the header names (a
truncated file), every section inside the file with the length its dtype and shape need, and the crc32 of every
section but the float planes (those
are 150 MB at 100,000 x 384: summing them would cost what mapping saves; a bit flip there changes scores,
never which rows exist). A file is written whole to a temporary name, fsynced and renamed over the old
one, so a reader sees the old file or the new one, and a crash leaves the old one. ``save_later`` runs a
save on a thread of its own (off the query path); a scrub moves ``generation``, and a save prepared before
it zeroes its temporary file instead of renaming it. Files of the earlier format (``ACIDX``, before issue 27) fail
the magic check and are rebuilt once.

Across processes the folder's lock file (``indexes.lock``, an exclusive ``flock``, ``IndexFiles.locked``) is held
by a save from its last check for a purge its rows have not seen through its rename, and by a scrub while it zeroes
and removes files. An erasure commits its purge, then scrubs; so another process's save either renamed before the
scrub took the lock (and the scrub zeroes that file) or checks after the purge committed (and abandons the save):
a file prepared before a purge never lands after the scrub. (Where ``fcntl`` is missing, Windows, the lock is only
the process's own.)

The sections are mapped copy-on-write (``mmap.ACCESS_COPY``): a process that appends or changes rows
changes its own pages, never the file. ``scrub`` zeroes files in place before removing them (an erasure
must not leave vectors of erased rows on disk); a process that mapped a scrubbed file sees its magic gone
(``Snapshot.intact``) and drops what it mapped.
"""
from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import struct
import tempfile
import threading
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from ..store.base import Store

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no flock: the in-process lock alone
    fcntl = None  # type: ignore[assignment]

PAGE = 4096
MAGIC = struct.pack("<Q", PAGE - 8)  # safetensors' header length: the header fills the first page
FORMAT = 2  # 1: the ACIDX layout before issue 27
ALIGN = 64
META, CRC_KEY = "agentcontext", "agentcontext.crc"  # the staleness header and the header's crc32, in __metadata__
PAD = "__pad."  # the entries that fill the gaps before 64-byte aligned sections
DTYPES = {"float16": "F16", "float32": "F32", "float64": "F64", "int8": "I8", "int16": "I16", "int32": "I32",
          "int64": "I64", "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64", "bool": "BOOL"}
NUMPY = {v: np.dtype(k).newbyteorder("<") for k, v in DTYPES.items()}
UNSUMMED = ("float32",)  # planes too big to checksum on every open
SUFFIX = ".idx"
LOCK_FILE = "indexes.lock"  # held by a save's last purge check and rename, and by a scrub (flock, across processes)


def _digest(change: Any) -> str:
    text = json.dumps([change.seq, change.at, change.op, change.target, change.namespace, change.detail],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def store_marks(store: Store, counter: int) -> tuple[str, str] | None:
    """(the store's identity, the digest of its change at ``counter``), or None for a store with no changes yet."""
    if counter <= 0:
        return None
    first = store.changes_since(0, limit=1)
    at = store.changes_since(counter - 1, limit=1)
    if not first or not at or at[0].seq != counter:
        return None
    return _digest(first[0]), _digest(at[0])


class Snapshot:
    """A validated index file, mapped copy-on-write: ``header``, ``array(name)``, ``blob(name)``."""

    def __init__(self, path: Path, mapped: mmap.mmap, header: dict[str, Any]) -> None:
        self.path, self._map, self.header = path, mapped, header

    @property
    def counter(self) -> int:
        return int(self.header["counter"])

    def has(self, name: str) -> bool:
        return name in self.header["sections"]

    def array(self, name: str) -> np.ndarray:
        s = self.header["sections"][name]
        return np.frombuffer(self._map, dtype=NUMPY[s["dtype"]], count=int(np.prod(s["shape"])),
                             offset=PAGE + s["data_offsets"][0]).reshape(s["shape"])

    def blob(self, name: str) -> bytes:
        begin, end = self.header["sections"][name]["data_offsets"]
        return self._map[PAGE + begin: PAGE + end]

    def json(self, name: str) -> Any:
        return json.loads(self.blob(name))

    def intact(self) -> bool:
        """False once the file was scrubbed (zeroed) under this mapping."""
        return self._map[: len(MAGIC)] == MAGIC


def _section_crc(data: bytes | memoryview) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _header_bytes(entries: dict[str, Any]) -> bytes:
    """The header as written (sorted keys, no spaces): the same bytes again from the parsed header."""
    return json.dumps(entries, sort_keys=True, separators=(",", ":")).encode()


class IndexFiles:
    """The index files of one store; ``enabled`` is False for a store with no folder (in memory, a server)."""

    def __init__(self, folder: Path | None, store: Store) -> None:
        self.folder = folder
        self.store = store
        self.generation = 0  # moved by every scrub: a save prepared before one is abandoned
        self._lock = threading.Lock()  # a scrub and the rename that ends a save, one at a time
        self._writers: dict[str, threading.Thread] = {}

    @property
    def enabled(self) -> bool:
        return self.folder is not None

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The indexes folder's lock across processes (an exclusive ``flock`` on its ``LOCK_FILE``, released when
        its descriptor closes); also between threads, since each holder opens a descriptor of its own."""
        assert self.folder is not None
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def path(self, name: str, model: str) -> Path:
        assert self.folder is not None
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{name}.{model}")[:80]
        tag = hashlib.sha256(f"{name}\0{model}".encode()).hexdigest()[:10]
        return self.folder / f"{safe}.{tag}{SUFFIX}"

    # --- reading ---------------------------------------------------------------------------
    def load(self, kind: str, name: str, model: str) -> Snapshot | None:
        """The file of this index if every check in the module doc passes, else None."""
        if self.folder is None:
            return None
        path = self.path(name, model)
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size < PAGE:
                    return None
                mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
        except (FileNotFoundError, ValueError):
            return None
        header = self._check(mapped, size, kind, name, model)
        if header is None:
            mapped.close()
            return None
        return Snapshot(path, mapped, header)

    def _check(self, mapped: mmap.mmap, size: int, kind: str, name: str, model: str) -> dict[str, Any] | None:
        """The staleness header with ``sections`` (name -> its safetensors entry) if the file passes, else None."""
        if mapped[: len(MAGIC)] != MAGIC:
            return None
        try:
            entries = json.loads(bytes(mapped[len(MAGIC): PAGE]))
            meta = entries.get("__metadata__") if isinstance(entries, dict) else None
            crc = int(meta.pop(CRC_KEY)) if isinstance(meta, dict) else None
            header = json.loads(meta[META]) if isinstance(meta, dict) else None
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None
        if crc is None or _section_crc(_header_bytes(entries)) != crc:
            return None
        if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("size") != size:
            return None
        if (header.get("kind"), header.get("name"), header.get("model")) != (kind, name, model):
            return None
        counter = header.get("counter")
        if not isinstance(counter, int) or counter > self.store.change_counter():
            return None
        if store_marks(self.store, counter) != (header.get("store"), header.get("mark")):
            return None
        sections = {k: v for k, v in entries.items() if k != "__metadata__" and not k.startswith(PAD)}
        crcs = header.get("crc", {})
        for sname, s in sections.items():
            begin, end = s["data_offsets"]
            if s["dtype"] not in NUMPY or not 0 <= begin <= end <= size - PAGE:
                return None
            if int(np.prod(s["shape"])) * NUMPY[s["dtype"]].itemsize != end - begin:
                return None
            if crcs.get(sname) is not None and _section_crc(mapped[PAGE + begin: PAGE + end]) != crcs[sname]:
                return None
        return {**header, "sections": sections}

    # --- writing ---------------------------------------------------------------------------
    def save(self, kind: str, name: str, model: str, counter: int, arrays: Mapping[str, np.ndarray],
             blobs: Mapping[str, bytes], extra: Mapping[str, Any] | None = None, generation: int | None = None,
             keep: Callable[[], bool] | None = None) -> Path | None:
        """Write the index whole (temporary file, fsync, rename); None when it cannot be tied to the store, or
        when, once written, a scrub happened since ``generation`` or ``keep()`` is False: then the temporary file
        is zeroed and removed instead of renamed (a save prepared before an erasure never lands)."""
        marks = store_marks(self.store, counter) if self.folder is not None else None
        if marks is None:
            return None
        assert self.folder is not None
        entries: dict[str, Any] = {}
        crcs: dict[str, int] = {}
        parts: list[tuple[int, bytes | np.ndarray]] = []
        offset = 0  # from the first byte after the header page

        def place(sname: str, dtype: str, shape: list[int], nbytes: int) -> int:
            nonlocal offset
            aligned = -(-offset // ALIGN) * ALIGN
            if aligned > offset:  # safetensors allows no holes: the gap is a padding entry of its own
                entries[f"{PAD}{len(entries)}"] = {"dtype": "U8", "shape": [aligned - offset],
                                                   "data_offsets": [offset, aligned]}
            entries[sname] = {"dtype": dtype, "shape": shape, "data_offsets": [aligned, aligned + nbytes]}
            offset = aligned + nbytes
            return PAGE + aligned

        for sname, array in arrays.items():
            array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
            if array.dtype.name not in UNSUMMED:
                crcs[sname] = _section_crc(array.tobytes())
            parts.append((place(sname, DTYPES[array.dtype.name], list(array.shape), array.nbytes), array))
        for sname, data in blobs.items():
            crcs[sname] = _section_crc(data)
            parts.append((place(sname, "U8", [len(data)], len(data)), data))
        size = PAGE + offset
        header = {"format": FORMAT, "kind": kind, "name": name, "model": model, "store": marks[0], "mark": marks[1],
                  "counter": counter, "size": size, "blobs": sorted(blobs), "crc": crcs, **(extra or {})}
        entries["__metadata__"] = {META: json.dumps(header, sort_keys=True)}
        entries["__metadata__"][CRC_KEY] = str(_section_crc(_header_bytes(entries)))
        raw = _header_bytes(entries)
        if len(MAGIC) + len(raw) > PAGE:
            raise ValueError(f"index header of {len(raw)} bytes does not fit its page")
        raw += b" " * (PAGE - len(MAGIC) - len(raw))  # safetensors allows the header to end in spaces
        offset = size
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.path(name, model)
        fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC + raw)
                for at, part in parts:
                    fh.seek(at)
                    fh.write(part.data if isinstance(part, np.ndarray) else part)
                fh.truncate(offset)
                fh.flush()
                os.fsync(fh.fileno())
                with self.locked():  # no scrub in any process between the last purge check and the rename
                    wanted = keep is None or keep()
                    with self._lock:
                        if wanted and (generation is None or generation == self.generation):
                            os.replace(tmp, target)
                            return target
                _zero(fh, offset)  # through the open file: a scrub may have unlinked it meanwhile
            Path(tmp).unlink(missing_ok=True)
            return None
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def save_later(self, name: str, job: Callable[[], Any]) -> bool:
        """Run ``job`` (a save) on a thread of its own, off the caller's path; False (and nothing run) while one
        for ``name`` is still running. The thread is not a daemon: a process exits once its saves are done."""
        with self._lock:
            if self.busy(name):
                return False
            thread = self._writers[name] = threading.Thread(target=job, name=f"index-save {name}")
        thread.start()
        return True

    def busy(self, name: str) -> bool:
        """True while a save of ``name`` runs on its thread."""
        running = self._writers.get(name)
        return running is not None and running.is_alive()

    def wait(self) -> None:
        """Return once every save started by ``save_later`` is done (the store must stay open until then)."""
        for thread in list(self._writers.values()):
            thread.join()

    def scrub(self, prefix: str = "") -> int:
        """Zero, then remove, every index file whose index name starts with ``prefix`` (temporary ones too),
        holding the folder's lock; returns how many. Processes that mapped one see it gone (``Snapshot.intact``)."""
        with self._lock:  # a save being written now is abandoned (it checks the generation before renaming)
            self.generation += 1
        if self.folder is None or not self.folder.is_dir():
            return 0
        with self.locked():  # a save in any process renames before this, or checks for the purge after it
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", prefix)
            count = 0
            for path in sorted(self.folder.iterdir()):
                if not path.name.startswith(safe) or not (path.name.endswith(SUFFIX) or path.name.endswith(".tmp")):
                    continue
                try:
                    with open(path, "r+b") as fh:
                        _zero(fh, os.fstat(fh.fileno()).st_size)
                    path.unlink()
                    count += 1
                except FileNotFoundError:
                    continue
            return count


def _zero(fh: Any, size: int) -> None:
    """Overwrite the first ``size`` bytes of an open file with zeros and fsync it."""
    fh.seek(0)
    zeros = bytes(min(size, 1 << 20))
    done = 0
    while done < size:
        done += fh.write(zeros[: size - done])
    fh.flush()
    os.fsync(fh.fileno())
