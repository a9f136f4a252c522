"""Materialize one exact git commit into an owner-private directory, and prove it.

The snapshot is written straight from git's objects (``git ls-tree -r -z`` for the tree,
``git cat-file --batch`` for blob bytes), not with ``git archive`` or a checkout: both of those
apply ``.gitattributes`` (``export-ignore``, ``export-subst``, smudge and end-of-line filters),
so candidate source could make the files on disk differ from the revision. Submodule pins
(gitlinks) have no content in this repository and are not materialized.

After writing, the files are read back and the authority's revision function
(:func:`taskcore.authority.gitrev.revision_of_listing`, see ``docs/git-mapping.md``) is
computed over *what is on disk* (each file's mode, SHA-256 and path, plus the commit's
submodule pins); :func:`materialize` refuses to return unless that equals the task's
revision, so the command can only ever run on exactly the revision the subject names.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from taskcore.authority.gitrev import (
    RevisionEntry,
    check_object_name,
    git_argv,
    git_env,
    ls_tree,
    resolve_commit,
    revision_listing,
    revision_of_listing,
)
from taskcore.contract.collector_records import SnapshotEvidence
from taskcore.errors import ErrorCode, TaskError

__all__ = ["directory_entries", "materialize", "remove_tree", "tree_blobs"]

_MODES: Final = {b"100644": "file", b"100755": "exec", b"120000": "symlink"}


def _unavailable(what: str) -> TaskError:
    return TaskError(
        ErrorCode.STORAGE_UNAVAILABLE, f"the repository cannot be read for a snapshot ({what})"
    )


def _check_tree_path(path: bytes) -> None:
    parts = path.split(b"/")
    if path.startswith(b"/") or any(p in (b"", b".", b"..", b".git") for p in parts):
        raise TaskError(
            ErrorCode.INVALID_PATH, f"the revision contains an unsafe path {path[:100]!r}"
        )


def _ls_tree(repo: Path, commit: str) -> list[tuple[bytes, bytes, str, bytes]]:
    leaves = ls_tree(repo, commit)
    for _, _, _, path in leaves:
        _check_tree_path(path)
    return leaves


def tree_blobs(repo: Path, oids: list[str]) -> Iterator[bytes]:
    """Yield the exact bytes of each blob in order, via one ``git cat-file --batch``."""
    if not oids:
        return
    try:
        proc = subprocess.Popen(  # noqa: S603 - fixed git argv, no shell
            git_argv(repo, "cat-file", "--batch"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=git_env(),
        )
    except OSError:
        raise _unavailable("git is not installed") from None
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        for oid in oids:
            proc.stdin.write(oid.encode("ascii") + b"\n")
            proc.stdin.flush()
            head = proc.stdout.readline().split()
            if len(head) != 3 or head[1] != b"blob":
                raise _unavailable(f"object {oid} is missing")
            size = int(head[2])
            data = proc.stdout.read(size)
            if len(data) != size or proc.stdout.read(1) != b"\n":
                raise _unavailable("git ended while reading an object")
            yield data
    finally:
        proc.stdin.close()
        proc.stdout.close()
        proc.kill()
        proc.wait()


def directory_entries(root: Path) -> list[RevisionEntry]:
    """Return the revision entries of the files under ``root``, as they are on disk.

    A regular file is ``100755`` if its owner-execute bit is set, else ``100644``; a symbolic
    link is ``120000`` with the SHA-256 of its target text. Anything else (a device, a FIFO)
    is refused. Directories contribute nothing (as in git).
    """
    out: list[RevisionEntry] = []
    stack = [root]
    while stack:
        current = stack.pop()
        with os.scandir(current) as it:
            for entry in it:
                rel = os.fsencode(os.path.relpath(entry.path, root))
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    stack.append(Path(entry.path))
                    continue
                if stat.S_ISLNK(info.st_mode):
                    target = os.fsencode(os.readlink(entry.path))
                    out.append(
                        RevisionEntry(
                            mode=b"120000",
                            kind=b"blob",
                            digest=hashlib.sha256(target).hexdigest(),
                            path=rel,
                        )
                    )
                    continue
                if not stat.S_ISREG(info.st_mode):
                    raise TaskError(ErrorCode.INVALID_PATH, "the snapshot holds a special file")
                h = hashlib.sha256()
                with open(entry.path, "rb") as fh:
                    while chunk := fh.read(1 << 20):
                        h.update(chunk)
                mode = b"100755" if info.st_mode & stat.S_IXUSR else b"100644"
                out.append(RevisionEntry(mode=mode, kind=b"blob", digest=h.hexdigest(), path=rel))
    return out


def remove_tree(path: Path) -> bool:
    """Remove ``path`` entirely (making directories writable first); return whether it is gone."""
    if not os.path.lexists(path):
        return True
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return True
    for dirpath, dirnames, _ in os.walk(path):
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                os.chmod(full, 0o700)
    os.chmod(path, 0o700)
    shutil.rmtree(path, ignore_errors=True)
    return not os.path.lexists(path)


def materialize(repo: Path, commit: str, revision: str, dest: Path) -> SnapshotEvidence:
    """Write ``commit`` of ``repo`` into the new directory ``dest`` and prove it is ``revision``.

    ``dest`` must not exist; it is created 0700 and files are written 0600 (0700 when
    executable). The revision function over the files read back from disk must equal
    ``revision`` (``REVISION_MISMATCH`` otherwise).
    """
    check_object_name(commit)
    resolve_commit(repo, commit)
    leaves = _ls_tree(repo, commit)
    blobs = [(m, oid, p) for m, kind, oid, p in leaves if kind == b"blob"]
    pins = [
        RevisionEntry(mode=m, kind=kind, digest=oid, path=p)
        for m, kind, oid, p in leaves
        if kind == b"commit"
    ]
    os.mkdir(dest, 0o700)
    total = 0
    for (mode, _, path), data in zip(blobs, tree_blobs(repo, [b[1] for b in blobs]), strict=True):
        kind = _MODES.get(mode)
        if kind is None:
            raise _unavailable(f"unexpected tree entry mode {mode.decode('ascii', 'replace')}")
        target = dest / os.fsdecode(path)
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        total += len(data)
        if kind == "symlink":
            os.symlink(os.fsdecode(data), target)
            continue
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(target, flags, 0o700 if kind == "exec" else 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    on_disk = sorted([*directory_entries(dest), *pins], key=lambda e: e.path)
    if revision_of_listing(revision_listing(on_disk)) != revision:
        raise TaskError(
            ErrorCode.REVISION_MISMATCH,
            "the materialized snapshot is not the task's revision; checkpoint again",
        )
    return SnapshotEvidence(
        revision=revision,
        commit=commit,
        materialized_revision=revision,
        file_count=len(blobs),
        total_bytes=total,
    )
