"""The task-stop hooks' slim pass path: standard library and apsw only.

A task-stop hook runs at every agent stop, and most stops of a finished Change pass. The full
hook (:mod:`taskcore.collector.stophook`) reads the local authority through the journal's
storage layer (every domain store and contract type, attrs and cattrs) and runs git three
times per read; the pieces here read the same facts with a plain read-only SQLite query and
two git commands per read, so :mod:`taskcli.task_stop` can answer a pass before click and the
storage layer are imported.

Every function either returns what the full hook would have seen on a state that can pass, or
raises :class:`UndecidedError` (the full hook then runs and answers): no subject, a dirty work
tree, an operation in progress, HEAD not at the subject's commit, a journal schema other than
the one this code reads, anything unreadable or unexpected. Nothing here writes, except
:func:`reset_counter`, which does what the full hook does on a pass.

>>> session_of(b'{"session_id": "s1"}')
's1'
>>> counter_file("s1", "c1").endswith(".count")
True
"""

from __future__ import annotations

import os

from taskcore.limits import (
    COLLECTOR_ENVELOPE_MAX_BYTES,
    GATE_STDIN_MAX_BYTES,
    GIT_TIMEOUT_SECONDS,
    JSON_MAX_DEPTH,
    STOP_CONTINUATIONS_MAX,
)

# Everything else this module uses is imported where it is used: the hook starts the first
# read's git commands (:class:`GitRun`) as soon as it has its command line, and loads the
# rest (the JSON scanner, SHA-256, the answer check, apsw) while git runs.

TYPE_CHECKING = False  # not typing's: importing typing alone costs a Stop hook ~5 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "IN_PROGRESS",
    "JOURNAL_NAME",
    "JOURNAL_VERSIONS",
    "GitRun",
    "Subject",
    "UndecidedError",
    "counter_file",
    "git_env",
    "head_argv",
    "loads",
    "local_state",
    "passes",
    "qualification_body",
    "read_counter",
    "read_token",
    "reset_counter",
    "session_of",
    "status_argv",
    "strict_json",
]

JOURNAL_NAME = "journal.sqlite"
"""The SQLite journal in a data dir (``taskcore.store.storage.JOURNAL_FILENAME``)."""

JOURNAL_VERSIONS = {
    "audit": 5,
    "tokens": 1,
    "queue": 5,
    "authority": 3,
    "journal": 2,
    "collector": 2,
    "retention": 1,
    "forge": 1,
    "oauth": 1,
    "webhooks": 1,
    "queueflow": 1,
}
"""The schema version of each journal component this code reads.

Equal to ``{c.name: c.latest for c in taskcore.store.storage.journal_components()}`` (a test
holds them equal): a journal at any other version goes to the full hook, which says why.
"""

IN_PROGRESS = (
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "BISECT_LOG",
    "rebase-merge",
    "rebase-apply",
)
"""The git-dir entries that mean an operation is in progress (the full hook's list)."""

_SUBJECT_SQL = (
    "SELECT subject_seq, change_version, revision, commit_oid, context_digest, "
    "requirement_digest FROM authority_subject "
    "WHERE repository_id = ? AND profile_id = ? AND change_id = ? "
    "ORDER BY subject_seq DESC LIMIT 1"
)
_HEX = frozenset("0123456789abcdef")
_BUSY_TIMEOUT_MS = 10_000

Subject = tuple[int, int, str, str, str, str]
"""``(subject_seq, change_version, revision, commit, context_digest, requirement_digest)``."""


class UndecidedError(Exception):
    """The slim path cannot answer this stop; the full hook must."""


# -- JSON without the json package -------------------------------------------------------------

_WHITESPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Decoder:
    """The attributes ``_json.make_scanner`` reads from a ``json.JSONDecoder``."""

    def __init__(
        self,
        object_pairs_hook: Any = None,
        parse_float: Any = float,
        parse_constant: Any = None,
    ) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = object_pairs_hook
        self.parse_float = parse_float
        self.parse_int = int
        self.parse_constant = parse_constant or _CONSTANTS.__getitem__
        self.memo: dict[str, str] = {}


def _decode(text: str, decoder: _Decoder) -> Any:
    """``decoder.decode(text)`` as ``json.JSONDecoder`` does it; ``ValueError`` if not JSON."""
    if text.startswith("\ufeff"):
        raise ValueError("Unexpected UTF-8 BOM")
    # The JSON scanner of the ``json`` package, without the package: its Python half loads
    # ``re`` (and enum, functools, collections), about as much again as the interpreter's own
    # start-up. This is ``json.loads`` on it (a test holds the two equal).
    from _json import make_scanner

    start = len(text) - len(text.lstrip(_WHITESPACE))
    context: Any = decoder  # the stub types the context as a scanner; any such object does
    try:
        value, end = make_scanner(context)(text, start)
    except StopIteration:
        raise ValueError("Expecting value") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError("Extra data")
    return value


def loads(raw: bytes) -> Any:
    """``json.loads(raw)`` for a payload that starts as a JSON object in UTF-8.

    ``json.loads`` guesses the encoding of bytes (UTF-8, -16 or -32, by the first bytes);
    anything but plain UTF-8 (a first byte other than ``{`` or whitespace, a NUL second
    byte) is :class:`UndecidedError` here.

    >>> loads(b' {"a": [1, 2.5, null]} ')
    {'a': [1, 2.5, None]}
    """
    if raw[:1] not in (b"{", b" ", b"\t", b"\n", b"\r") or raw[1:2] == b"\x00":
        raise UndecidedError("not a UTF-8 JSON object")
    return _decode(raw.decode("utf-8", "surrogatepass"), _Decoder())


def qualification_body(change: str) -> bytes:
    """The envelope ``ServiceClient.workflow`` sends for ``qualification`` of ``change``.

    ``json.dumps({"operation": "qualification", "request": {"version": 1, "change_id":
    change}}, ensure_ascii=False)`` in UTF-8; :class:`UndecidedError` for a Change id that is not
    plain text (a lone surrogate: the full client refuses it).

    >>> qualification_body("c1")
    b'{"operation": "qualification", "request": {"version": 1, "change_id": "c1"}}'
    """
    from _json import encode_basestring  # the json package's string encoder, as above

    try:
        change.encode("utf-8")
    except UnicodeEncodeError:
        raise UndecidedError("the Change id is not plain text") from None
    text = (
        '{"operation": "qualification", "request": {"version": 1, "change_id": '
        + encode_basestring(change)
        + "}}"
    )
    return text.encode("utf-8")


# -- the payload and the counter ----------------------------------------------------------------


def session_of(raw: bytes) -> str:
    """The Stop payload's ``session_id`` (``""`` when absent), read as the full hook reads it."""
    if len(raw) > GATE_STDIN_MAX_BYTES:
        raise UndecidedError("the Stop payload is too large")
    try:
        data = loads(raw)
    except (ValueError, RecursionError):
        raise UndecidedError("the Stop payload is not JSON") from None
    if not isinstance(data, dict):
        raise UndecidedError("the Stop payload is not a JSON object")
    session = data.get("session_id")
    return session if isinstance(session, str) else ""


def counter_file(session: str, change: str) -> str:
    """The counter file of one session and Change (``stophook.counter_path`` as a string)."""
    from taskcore.paths import stop_counter_location

    try:  # the one SHA-256 the hook needs, without loading OpenSSL through hashlib
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - CPython 3.12 and later name it _sha2
        from hashlib import sha256
    key = sha256(f"{session}\x00{change}".encode()).hexdigest()
    return os.path.join(stop_counter_location(), f"{key}.count")


def read_counter(path: str) -> int:
    """The continuations used, when below the limit and readable; else :class:`UndecidedError`."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    except (OSError, ValueError):
        raise UndecidedError("the counter cannot be looked at") from None
    try:
        with open(path, "rb") as handle:  # bytes: a text file would load the ascii codec
            data = handle.read()
        if b"\r" in data:
            raise UndecidedError("a carriage return (text mode would translate it)")
        value = int(data.decode("ascii").strip())
    except (OSError, ValueError):
        raise UndecidedError("the counter is unreadable") from None
    if not 0 <= value < STOP_CONTINUATIONS_MAX:
        raise UndecidedError("the counter is unreadable or spent")
    return value


def reset_counter(path: str) -> None:
    """What the full hook does on a pass: make the counter's directory, remove the counter.

    ``OSError`` when either fails (the full hook then exits 1).
    """
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    try:  # noqa: SIM105 - contextlib.suppress would load functools and collections
        os.unlink(path)
    except FileNotFoundError:
        pass


def read_token(path: str) -> str:
    """``taskcore.tokenfile.read_token_file`` without its imports; :class:`UndecidedError` on error."""
    try:
        with open(path, "rb") as handle:  # bytes: a text file would load the ascii codec
            data = handle.read(4096)
        if b"\r" in data:
            raise UndecidedError("a carriage return (text mode would translate it)")
        token = data.decode("ascii").strip()
    except (OSError, ValueError):
        raise UndecidedError("the token file is unreadable") from None
    if not token:
        raise UndecidedError("the token file is empty")
    return token


# -- the local reads ----------------------------------------------------------------------------


def git_env() -> dict[str, str]:
    """``taskcore.authority.gitrev.git_env()``: no ``GIT_*`` from outside, no system config."""
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
    return env


def head_argv(workspace: str) -> list[str]:
    """The git dir and HEAD in one ``rev-parse`` (the full hook asks twice)."""
    return [
        "git",
        "-C",
        workspace,
        "-c",
        "core.fsmonitor=false",
        "rev-parse",
        "--absolute-git-dir",
        "--verify",
        "-q",
        "HEAD^{commit}",
    ]


def status_argv(workspace: str) -> list[str]:
    """The full hook's ``git status`` command, exactly."""
    return [
        "git",
        "--no-optional-locks",
        "-C",
        workspace,
        "-c",
        "core.fsmonitor=false",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignore-submodules=none",
    ]


def _subject(data_dir: str, repository: str, profile: str, change: str) -> Subject:
    import apsw  # the journal, read-only; never created, migrated or written

    journal = os.path.join(data_dir, JOURNAL_NAME)
    try:
        if os.stat(journal).st_size == 0:
            raise UndecidedError("the journal is empty")
    except (OSError, ValueError):
        raise UndecidedError("there is no journal") from None
    try:
        conn = apsw.Connection(journal, flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        raise UndecidedError("the journal cannot be opened") from None
    try:
        conn.set_busy_timeout(_BUSY_TIMEOUT_MS)
        known = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_versions'"
        ).fetchall()
        versions = (
            {str(n): int(v) for n, v in conn.execute("SELECT * FROM schema_versions")}
            if known
            else {}
        )
        if any(versions.get(name, 0) != v for name, v in JOURNAL_VERSIONS.items()):
            raise UndecidedError("the journal's schema is not the one this code reads")
        row = conn.execute(_SUBJECT_SQL, (repository, profile, change)).fetchone()
    except apsw.Error:
        raise UndecidedError("the journal cannot be read") from None
    finally:
        conn.close()
    if row is None:
        raise UndecidedError("the Change has no subject")
    seq, version, revision, commit, context, requirement = row
    return (seq, version, revision, commit, context, requirement)


def _spawn(argv: list[str], env: dict[str, str]) -> tuple[int, int]:
    """Start ``argv`` with stdout on a new pipe and stderr on /dev/null: ``(pid, read end)``."""
    # The C module, loaded at start-up (signal.py, with its enums, is not).
    from _signal import SIGPIPE, SIGXFSZ  # type: ignore[import-not-found,unused-ignore]

    read_end, write_end = os.pipe()
    try:
        pid = os.posix_spawnp(
            argv[0],
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, write_end, 1),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
            ],
            # What subprocess restores (restore_signals): Python ignores SIGPIPE and SIGXFSZ.
            setsigdef=(SIGPIPE, SIGXFSZ),
        )
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    return pid, read_end


class GitRun:
    """The ``rev-parse`` and the ``status`` of one read, running side by side.

    Plain ``posix_spawn`` and ``poll`` (``subprocess`` would load threading, signal and
    locale, several ms of a hook that must start in a few times an empty interpreter's
    start-up); each must finish within the full hook's git timeout. They start before the
    journal is read, so the query runs while git does.
    """

    def __init__(self, workspace: str) -> None:
        env = git_env()
        self.started: list[tuple[int, int]] = []  # (pid, read end), in argv order
        self.running: list[int] = []  # pids not reaped yet
        try:
            for argv in (head_argv(workspace), status_argv(workspace)):
                pid, fd = _spawn(argv, env)
                self.started.append((pid, fd))
                self.running.append(pid)
        except OSError:
            self.stop()
            raise UndecidedError("git did not start") from None

    def stop(self) -> None:
        """Kill and reap what still runs, close the pipes (after a failure: idempotent)."""
        for pid in self.running:
            try:
                os.kill(pid, 9)  # SIGKILL (the signal module is not loaded for one number)
                os.waitpid(pid, 0)
            except OSError:
                pass
        self.running.clear()
        for _pid, fd in self.started:
            try:  # noqa: SIM105 - contextlib.suppress would load functools and collections
                os.close(fd)
            except OSError:
                pass
        self.started.clear()

    def outputs(self) -> tuple[bytes, bytes]:
        """Both outputs once both exited 0; else :class:`UndecidedError`."""
        import select
        import time

        try:
            outs: dict[int, list[bytes]] = {fd: [] for _pid, fd in self.started}
            poller = select.poll()
            for fd in outs:
                poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
            open_fds = len(outs)
            deadline = time.monotonic() + GIT_TIMEOUT_SECONDS
            while open_fds:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise UndecidedError("git took too long")
                for fd, _event in poller.poll(left * 1000):
                    chunk = os.read(fd, 65536)
                    if chunk:
                        outs[fd].append(chunk)
                    else:
                        poller.unregister(fd)
                        open_fds -= 1
            codes = []
            for pid, _fd in self.started:
                codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
                self.running.remove(pid)
            (_p1, head_fd), (_p2, status_fd) = self.started
            head, status = b"".join(outs[head_fd]), b"".join(outs[status_fd])
        except OSError:
            raise UndecidedError("git did not answer") from None
        finally:
            self.stop()
        if any(codes):
            raise UndecidedError("git refused, or HEAD has no commit")
        return head, status


def _exists(path: str) -> bool:
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, ValueError):
        raise UndecidedError("the git dir cannot be looked at") from None
    return True


def local_state(
    data_dir: str,
    repository: str,
    profile: str,
    change: str,
    workspace: str,
    git: GitRun | None = None,
) -> tuple[Subject, str]:
    """One local read that can pass: ``(subject, head)``, else :class:`UndecidedError`.

    It can pass when the Change has a subject, the work tree is clean (no change, no
    untracked file, no operation in progress) and HEAD is the subject's commit; the full
    hook's read then is ``LocalRead(subject, head, clean=True, base_revision=subject
    revision, dirty_paths=())``. ``git``: this read's git commands, already started.
    """
    if git is None:
        git = GitRun(workspace)
    try:
        subject = _subject(data_dir, repository, profile, change)
    except BaseException:
        git.stop()
        raise
    rev, status = git.outputs()
    if [r for r in status.split(b"\x00") if r]:
        raise UndecidedError("the work tree is not clean")
    if not rev.endswith(b"\n"):
        raise UndecidedError("git answered in an unexpected form")
    git_dir_raw, sep, head_raw = rev[:-1].rpartition(b"\n")
    head = head_raw.decode("ascii", "replace")
    if not sep or len(head) not in (40, 64) or not _HEX.issuperset(head):
        raise UndecidedError("git answered in an unexpected form")
    git_dir = git_dir_raw.decode("utf-8", "surrogateescape").strip()
    if any(_exists(os.path.join(git_dir, name)) for name in IN_PROGRESS):
        raise UndecidedError("an operation is in progress")
    if head != subject[3]:
        raise UndecidedError("HEAD is not the subject's commit")
    return subject, head


# -- the answer ---------------------------------------------------------------------------------


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise UndecidedError("a duplicate key")
    return out


def _refuse(_name: str) -> Any:
    raise UndecidedError("NaN or Infinity")


def _finite(text: str) -> float:
    value = float(text)
    if value - value != 0.0:
        raise UndecidedError("a number beyond 1.8e308")
    return value


def _depth(value: Any) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, level + 1) for child in children)
    return deepest


def strict_json(content: bytes) -> Any:
    r"""The tree ``taskcore.jsontext.parse_json`` would return, or :class:`UndecidedError`.

    Stricter where that is cheaper: any ``\ud`` escape (a surrogate could hide there) is
    left to the full hook.
    """
    if len(content) > COLLECTOR_ENVELOPE_MAX_BYTES or content.startswith(b"\xef\xbb\xbf"):
        raise UndecidedError("too large, or a BOM")
    if b"\\ud" in content or b"\\uD" in content:
        raise UndecidedError("a surrogate escape, maybe")
    try:
        text = content.decode("utf-8")
        value = _decode(
            text, _Decoder(object_pairs_hook=_pairs, parse_float=_finite, parse_constant=_refuse)
        )
    except (ValueError, RecursionError):
        raise UndecidedError("not JSON") from None
    if _depth(value) > JSON_MAX_DEPTH:
        raise UndecidedError("nested too deep")
    return value


def passes(status: int, content: bytes, subject: Subject) -> bool:
    """Whether the service's answer passes the stop for ``subject`` (the full hook's rules).

    The HTTP status and body of the ``qualification`` call: 200, a strict JSON object for
    the operation, and a result that is valid, qualified, current and for the subject's
    revision. ``False`` means the full hook must judge it (it blocks, or says why).
    """
    if status != 200:
        return False
    try:
        answer = strict_json(content)
    except UndecidedError:
        return False
    if not isinstance(answer, dict) or answer.get("operation") != "qualification":
        return False
    from taskcore.collector.stopanswer import AnswerError, check_answer

    try:
        checked = check_answer(answer.get("result"), local_revision=subject[2])
    except AnswerError:
        return False
    return bool(
        checked["qualified"]
        and checked["subject_current"]
        and checked["revision"] is not None
        and checked["revision"] == subject[2]
    )
