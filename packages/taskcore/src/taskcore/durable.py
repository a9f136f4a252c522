"""Durable private files: write to a temp file, fsync, rename (or link), fsync the directory.

Standard library and :mod:`taskcore.errors` only: the collector's state directory, the Stop
hook's counters and the authority's key file all write through :func:`durable_write`.
"""

from __future__ import annotations

import os
from pathlib import Path

from taskcore.errors import ErrorCode, TaskError

__all__ = ["durable_write", "fsync_dir"]


def fsync_dir(path: Path) -> None:
    """Flush a directory entry change (a rename or a link) to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def durable_write(path: Path, data: bytes, *, exclusive: bool = True) -> None:
    """Write ``data`` to ``path`` (0600) durably: temp file, fsync, rename, fsync the directory.

    With ``exclusive`` an existing file is an ``ALREADY_EXISTS`` error and is never replaced.
    """
    if exclusive and os.path.lexists(path):
        raise TaskError(ErrorCode.ALREADY_EXISTS, f"{path.name} is already retained; not replaced")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    if exclusive:
        try:
            os.link(tmp, path)  # fails if another process retained first
        except FileExistsError:
            os.unlink(tmp)
            raise TaskError(
                ErrorCode.ALREADY_EXISTS, f"{path.name} is already retained; not replaced"
            ) from None
        os.unlink(tmp)
    else:
        os.replace(tmp, path)
    fsync_dir(path.parent)
