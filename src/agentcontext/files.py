"""Reading the files users hand us (Markdown memories, saved graphs): regular files only, no links followed,
strict UTF-8, and never a hang on a FIFO.

A folder is opened once (without following a link) and its entries are opened relative to it with
``O_NOFOLLOW``, so what is checked is what is read, even if the folder changes meanwhile. Every problem is a
``ValidationError`` naming the file.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .errors import ValidationError

# The getattr calls of this module are kept: they ask the platform which flags and file attributes it has
# (Windows has no O_NOFOLLOW, O_NONBLOCK or O_CLOEXEC; only Windows has st_file_attributes).
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # kept: a platform's flag (see above)
_OPEN_FLAGS = os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)  # kept: same
_BY_DIR_FD = bool(NOFOLLOW) and os.open in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")


def is_link(path: Path) -> bool:
    """A symlink, or on Windows a junction/reparse point."""
    if path.is_symlink():
        return True
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    attrs = getattr(st, "st_file_attributes", 0)  # kept: Windows only
    return bool(attrs & getattr(stat, "FILE_ATTRIBUTE_REPARSE_POINT", 0))  # kept: Windows only


def kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISLNK(mode):
        return "a link"
    return "not a regular file"


def open_folder(path: Path, dir_fd: int | None = None) -> int | None:
    """A descriptor of the folder ``path`` (relative to ``dir_fd`` when given), opened without following a
    link; None where the platform cannot (then callers check links by path)."""
    if not _BY_DIR_FD:
        if is_link(path):
            raise ValidationError(f"refusing to read {path}: it is a link", path=str(path), file=str(path))
        return None
    try:
        return os.open(path.name if dir_fd is not None else path, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW,
                       dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and (dir_fd is not None or is_link(path)):
            raise ValidationError(f"refusing to read {path}: it is a link or not a folder", path=str(path),
                                  file=str(path)) from None
        raise ValidationError(f"{path}: cannot open the folder ({exc.strerror})", path=str(path),
                              file=str(path)) from None


def names(folder: Path, dir_fd: int | None, suffix: str) -> list[str]:
    """Entries of a folder ending in ``suffix`` (hidden ones skipped), sorted."""
    return sorted(n for n in os.listdir(dir_fd if dir_fd is not None else folder)
                  if n.endswith(suffix) and not n.startswith("."))


def read_text(shown: Path, dir_fd: int | None = None, what: str = "file") -> str:
    """The UTF-8 text of one regular file (its name relative to ``dir_fd`` when given, else the path),
    opened without following a link and without blocking on a FIFO."""
    if dir_fd is None and is_link(shown):
        raise ValidationError(f"refusing to read {shown}: it is a link", file=str(shown), path=str(shown))
    try:
        fd = os.open(shown.name, _OPEN_FLAGS, dir_fd=dir_fd) if dir_fd is not None else os.open(shown, _OPEN_FLAGS)
    except OSError as exc:
        if NOFOLLOW and exc.errno == errno.ELOOP:
            raise ValidationError(f"refusing to read {shown}: it is a link", file=str(shown),
                                  path=str(shown)) from None
        raise ValidationError(f"{shown}: cannot open it ({exc.strerror})", file=str(shown)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValidationError(f"{shown} is {kind_of(mode)}, not a {what}; move it out of the folder",
                                  file=str(shown))
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        text = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{shown}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8",
                              file=str(shown)) from None
    if "\x00" in text:
        raise ValidationError(f"{shown}: contains a NUL character; a {what} is plain text", file=str(shown))
    return text
