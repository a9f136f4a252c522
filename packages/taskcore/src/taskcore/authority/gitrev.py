r"""The immutable revision of a git commit, and the git plumbing both sides of the wire use.

The seed's "immutable revision" is, for us, a SHA-256 of a commit's *content*, never its
SHA-1 object name alone. :func:`git_revision` spells it out (``docs/git-mapping.md`` is the
normative text another implementation reproduces):

1. list every leaf of the commit's tree with ``git ls-tree -r -z --full-tree <commit>``:
   regular files and executables (``100644``, ``100755``), symbolic links (``120000``) and
   submodule pins (``160000``); trees themselves are not leaves;
2. for each blob, hash its exact bytes (read with ``git cat-file --batch``) with plain SHA-256;
   a submodule pin keeps its git object name, since its content is not in this repository;
3. sort the entries by the raw bytes of their path and emit, per entry,
   ``<mode> SP <type> SP <hex> TAB <path> NUL`` (mode as git prints it, six octal digits;
   type ``blob`` or ``commit``; hex the SHA-256 of the blob or the submodule object name);
4. the revision is ``domain_digest("agentscm.git-revision.v1", listing)``: SHA-256 over the
   ASCII domain, one NUL, the listing length as u64 big-endian, then the listing.

Two commits with the same tree have the same revision (the revision is content); the Change
version and the subject bind which commit was recorded.

Every git call runs as a plain subprocess (no shell) with the caller's ``GIT_*`` variables
removed, prompts disabled, literal pathspecs and ``core.fsmonitor`` off, so a work tree's
configuration cannot redirect or run anything. Object names given by callers must be full
lowercase hex (40 or 64 characters): a ref name, a range or an option never reaches git.

>>> import tempfile, subprocess, pathlib
>>> tree = pathlib.Path(tempfile.mkdtemp())
>>> _ = subprocess.run(["git", "init", "-q", str(tree)], check=True)
>>> _ = (tree / "a.txt").write_text("hello\n")
>>> _ = subprocess.run(["git", "-C", str(tree), "add", "a.txt"], check=True)
>>> _ = subprocess.run(["git", "-C", str(tree), "-c", "user.name=d", "-c", "user.email=d@e",
...     "commit", "-qm", "one"], check=True)
>>> state = work_tree_state(tree)
>>> state.clean, len(state.head or "")
(True, 40)
>>> git_revision(tree, state.head or "") == revision_of_listing(
...     b"100644 blob " + sha256_hex(b"hello\n").encode() + b"\ta.txt\x00")
True
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Final

import attrs

from taskcore.digest import REVISION_DOMAIN, domain_digest, sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import GIT_TIMEOUT_SECONDS, REVISION_ENTRIES_MAX

__all__ = [
    "OBJECT_NAME_PATTERN",
    "BlobRead",
    "BlobStatus",
    "RevisionEntry",
    "WorkTreeState",
    "check_object_name",
    "git_argv",
    "git_env",
    "git_revision",
    "head_revision",
    "is_git_work_tree",
    "ls_tree",
    "read_blob_at",
    "resolve_commit",
    "revision_entries",
    "revision_listing",
    "revision_of_listing",
    "run_git",
    "work_tree_state",
]

OBJECT_NAME_PATTERN: Final = r"[0-9a-f]{40}|[0-9a-f]{64}"
"""A full git object name: SHA-1 (40 hex) or SHA-256 (64 hex) object format."""

_OBJECT_NAME = re.compile(OBJECT_NAME_PATTERN)
_LEAF_MODES: Final = {
    b"100644": b"blob",
    b"100755": b"blob",
    b"120000": b"blob",
    b"160000": b"commit",
}
_REGULAR_MODES: Final = frozenset({b"100644", b"100755"})
_CHUNK: Final = 1 << 16


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every git call runs with: no ``GIT_*`` from outside, no system config.

    No user or system configuration may change what git reports (replace refs, pathspec
    magic, prompts, locale); ``extra`` adds variables a caller needs (a ref-update
    identity).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C",
        }
    )
    env.update(extra or {})
    return env


def git_argv(work_tree: Path, *args: str, lockless: bool = False) -> list[str]:
    """``git -C work_tree -c core.fsmonitor=false args`` (``--no-optional-locks`` if lockless)."""
    head = ["git", "--no-optional-locks"] if lockless else ["git"]
    return [*head, "-C", str(work_tree), "-c", "core.fsmonitor=false", *args]


def _unavailable(what: str) -> TaskError:
    return TaskError(
        ErrorCode.STORAGE_UNAVAILABLE,
        f"the registered repository cannot be read ({what}); ask the operator to check it",
    )


def run_git(
    work_tree: Path, *args: str, ok_codes: Iterable[int] = (0,)
) -> subprocess.CompletedProcess[bytes]:
    """Run one read-only git command; ``STORAGE_UNAVAILABLE`` when git cannot answer."""
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv, no shell
            git_argv(work_tree, *args),
            capture_output=True,
            env=git_env(),
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError:
        raise _unavailable("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise _unavailable(f"git took longer than {GIT_TIMEOUT_SECONDS} s") from None
    if done.returncode not in tuple(ok_codes):
        raise _unavailable(f"git {args[0]} failed")
    return done


def check_object_name(value: str, what: str = "commit") -> str:
    """Return ``value`` if it is a full lowercase git object name, else raise INVALID_VALUE.

    >>> check_object_name("HEAD")
    Traceback (most recent call last):
    taskcore.errors.TaskError: commit must be a full object name: 40 or 64 lowercase hex characters
    """
    if not isinstance(value, str) or _OBJECT_NAME.fullmatch(value) is None:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"{what} must be a full object name: 40 or 64 lowercase hex characters",
        )
    return value


def is_git_work_tree(path: Path | str) -> bool:
    """Whether ``path`` is the top level of a git work tree (read-only check)."""
    path = Path(path)
    if not path.is_dir():
        return False
    try:
        done = run_git(path, "rev-parse", "--show-toplevel", ok_codes=(0, 128))
    except TaskError:
        return False
    if done.returncode != 0:
        return False
    top = done.stdout.decode("utf-8", "surrogateescape").strip()
    return bool(top) and Path(top).resolve() == path.resolve()


def resolve_commit(work_tree: Path | str, commit: str) -> str:
    """Return ``commit`` if the repository has it as a commit object; else raise NOT_FOUND.

    Only a full object name is accepted (see :func:`check_object_name`); nothing is fetched.
    """
    check_object_name(commit)
    done = run_git(Path(work_tree), "cat-file", "-t", commit, ok_codes=(0, 128))
    if done.returncode != 0:
        raise TaskError(
            ErrorCode.NOT_FOUND,
            f"the registered repository has no commit {commit}; push or commit it there first",
        )
    if done.stdout.strip() != b"commit":
        raise TaskError(ErrorCode.INVALID_VALUE, f"{commit} is not a commit")
    return commit


@attrs.frozen(kw_only=True)
class RevisionEntry:
    """One leaf of a commit's tree as it enters the revision listing."""

    mode: bytes
    kind: bytes
    digest: str
    path: bytes

    def line(self) -> bytes:
        """``<mode> SP <type> SP <hex> TAB <path> NUL``."""
        return (
            self.mode
            + b" "
            + self.kind
            + b" "
            + self.digest.encode("ascii")
            + b"\t"
            + self.path
            + b"\x00"
        )


def ls_tree(work_tree: Path, commit: str) -> list[tuple[bytes, bytes, str, bytes]]:
    """Every leaf of ``commit``'s tree as ``(mode, type, object name, path)`` (bounded)."""
    done = run_git(work_tree, "ls-tree", "-r", "-z", "--full-tree", commit)
    out: list[tuple[bytes, bytes, str, bytes]] = []
    for record in done.stdout.split(b"\x00"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid = meta.split(b" ")
        out.append((mode, kind, oid.decode("ascii"), path))
        if len(out) > REVISION_ENTRIES_MAX:
            raise TaskError(
                ErrorCode.OUT_OF_BOUNDS,
                f"the commit has more than {REVISION_ENTRIES_MAX} files; it cannot be a subject",
            )
    return out


def _feed(stdin: IO[bytes], oids: list[str]) -> None:
    try:
        for oid in oids:
            stdin.write(oid.encode("ascii") + b"\n")
        stdin.close()
    except (BrokenPipeError, ValueError):
        # git exited (or was killed by the timer) before reading everything; the reader sees
        # the short output and reports the failure, so the feeder just stops.
        return


def _blob_sha256s(work_tree: Path, oids: list[str]) -> dict[str, str]:
    """SHA-256 of each blob's exact bytes, streamed through one ``git cat-file --batch``."""
    unique = list(dict.fromkeys(oids))
    if not unique:
        return {}
    try:
        proc = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
            git_argv(work_tree, "cat-file", "--batch"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=git_env(),
        )
    except FileNotFoundError:
        raise _unavailable("git is not installed") from None
    assert proc.stdin is not None
    assert proc.stdout is not None
    feeder = threading.Thread(target=_feed, args=(proc.stdin, unique), daemon=True)
    feeder.start()
    timer = threading.Timer(GIT_TIMEOUT_SECONDS, proc.kill)
    timer.start()
    out: dict[str, str] = {}
    try:
        for oid in unique:
            header = proc.stdout.readline().rstrip(b"\n").split(b" ")
            if (
                len(header) != 3
                or header[0].decode("ascii", "replace") != oid
                or header[1] != b"blob"
            ):
                raise _unavailable("an object of the commit is missing")
            remaining = int(header[2])
            h = hashlib.sha256()
            while remaining:
                chunk = proc.stdout.read(min(_CHUNK, remaining))
                if not chunk:
                    raise _unavailable("git stopped while reading an object")
                h.update(chunk)
                remaining -= len(chunk)
            if proc.stdout.read(1) != b"\n":
                raise _unavailable("git returned a malformed object")
            out[oid] = h.hexdigest()
    finally:
        timer.cancel()
        proc.stdout.close()
        proc.kill()
        proc.wait()
        feeder.join()
    return out


def revision_entries(work_tree: Path | str, commit: str) -> tuple[RevisionEntry, ...]:
    """Return the listing entries of ``commit``, sorted by the raw bytes of their paths."""
    work_tree = Path(work_tree)
    resolve_commit(work_tree, commit)
    leaves = ls_tree(work_tree, commit)
    for mode, kind, _oid, _path in leaves:
        if _LEAF_MODES.get(mode) != kind:
            raise _unavailable(f"unexpected tree entry mode {mode.decode('ascii', 'replace')}")
    hashes = _blob_sha256s(work_tree, [oid for _m, kind, oid, _p in leaves if kind == b"blob"])
    entries = [
        RevisionEntry(
            mode=mode, kind=kind, digest=hashes[oid] if kind == b"blob" else oid, path=path
        )
        for mode, kind, oid, path in leaves
    ]
    entries.sort(key=lambda e: e.path)
    return tuple(entries)


def revision_listing(entries: Iterable[RevisionEntry]) -> bytes:
    """Return the exact listing bytes the revision digest covers."""
    return b"".join(e.line() for e in entries)


def revision_of_listing(listing: bytes) -> str:
    """Return the revision for listing bytes: ``agentscm.git-revision.v1`` over them."""
    return domain_digest(REVISION_DOMAIN, listing)


def git_revision(work_tree: Path | str, commit: str) -> str:
    """Return the 64-hex immutable revision of ``commit`` in the repository at ``work_tree``.

    This is the one function the authority, the CLI and the Stop hooks use; see the module
    docstring for the exact definition.
    """
    return revision_of_listing(revision_listing(revision_entries(work_tree, commit)))


@attrs.frozen(kw_only=True)
class WorkTreeState:
    """What a read-only look at a work tree saw: its HEAD commit and whether it is clean.

    ``head`` is ``None`` in a repository with no commit yet. ``clean`` means no staged,
    unstaged or untracked (non-ignored) change, and no unmerged path.
    """

    head: str | None
    clean: bool
    changed_paths: int
    paths: tuple[str, ...] = ()
    """The first changed or untracked paths, as ``git status`` lists them (at most 20)."""


_LISTED_PATHS_MAX = 20


def work_tree_state(work_tree: Path | str) -> WorkTreeState:
    """Look at a work tree without changing it: HEAD and cleanliness.

    Uses ``git --no-optional-locks status --porcelain -z --untracked-files=all``, which
    neither refreshes nor writes the index.
    """
    work_tree = Path(work_tree)
    head_run = run_git(work_tree, "rev-parse", "--verify", "-q", "HEAD^{commit}", ok_codes=(0, 1))
    head = head_run.stdout.decode("ascii").strip() or None if head_run.returncode == 0 else None
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv, no shell
            git_argv(
                work_tree,
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--ignore-submodules=none",
                lockless=True,
            ),
            capture_output=True,
            env=git_env(),
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (FileNotFoundError, subprocess.TimeoutExpired):
        raise _unavailable("git status did not answer") from None
    if done.returncode != 0:
        raise _unavailable("git status failed")
    records = [r for r in done.stdout.split(b"\x00") if r]
    # A rename record is followed by its source path as a separate NUL-terminated field.
    changed = sum(1 for r in records if len(r) > 3 and r[2:3] == b" ")
    paths = tuple(
        r[3:].decode("utf-8", "replace")[:512] for r in records if len(r) > 3 and r[2:3] == b" "
    )[:_LISTED_PATHS_MAX]
    return WorkTreeState(head=head, clean=not records, changed_paths=changed, paths=paths)


def head_revision(work_tree: Path | str) -> tuple[str, str]:
    """Return ``(commit, revision)`` of a clean work tree's HEAD; refuse a dirty or empty one.

    This is what ``agent-task checkpoint`` and the Stop hooks compare against a subject.
    """
    state = work_tree_state(work_tree)
    if state.head is None:
        raise TaskError(ErrorCode.NOT_FOUND, "the work tree has no commit yet; commit first")
    if not state.clean:
        raise TaskError(
            ErrorCode.CONFLICT,
            "the work tree has uncommitted changes; commit them (or stash them) and checkpoint again",
        )
    return state.head, git_revision(work_tree, state.head)


class BlobStatus:
    """Outcomes of :func:`read_blob_at` (plain string constants, also reference codes)."""

    AVAILABLE: Final = "available"
    MISSING: Final = "not_in_revision"
    NOT_A_FILE: Final = "not_a_file"
    TOO_LARGE: Final = "too_large"


@attrs.frozen(kw_only=True)
class BlobRead:
    """The result of reading one path at one commit: a status, the size and maybe the bytes."""

    status: str
    size: int | None = None
    data: bytes | None = None

    @property
    def sha256(self) -> str | None:
        """Plain SHA-256 of the bytes read, when there are bytes."""
        return None if self.data is None else sha256_hex(self.data)


def read_blob_at(work_tree: Path | str, commit: str, path: str, *, max_bytes: int) -> BlobRead:
    """Read the regular file ``path`` of ``commit``, refusing it above ``max_bytes`` unread.

    ``path`` must already be a validated canonical relative path. The size comes from the
    tree entry, so an oversized file is refused before any of its bytes are read. Symbolic
    links, submodules and directories are ``not_a_file``.
    """
    work_tree = Path(work_tree)
    check_object_name(commit)
    done = run_git(work_tree, "ls-tree", "-z", "-l", "--full-tree", commit, "--", path)
    records = [r for r in done.stdout.split(b"\x00") if r]
    match = None
    for record in records:
        meta, _, name = record.partition(b"\t")
        if name == path.encode("ascii"):
            match = meta.split()
    if match is None:
        return BlobRead(status=BlobStatus.MISSING)
    mode, kind, oid = match[0], match[1], match[2].decode("ascii")
    if kind != b"blob" or mode not in _REGULAR_MODES:
        return BlobRead(status=BlobStatus.NOT_A_FILE)
    size = int(match[3])
    if size > max_bytes:
        return BlobRead(status=BlobStatus.TOO_LARGE, size=size)
    blob = run_git(work_tree, "cat-file", "blob", oid)
    if len(blob.stdout) != size:
        raise _unavailable("git returned a blob of the wrong size")
    return BlobRead(status=BlobStatus.AVAILABLE, size=size, data=blob.stdout)
