"""Reading one transcript file from a byte offset: the index's reader, without the index.

:mod:`taskcore.donegate.index` keeps, per file, the offset read so far and the reader state
there; this module does the reading: complete lines from an offset (a trailing line without
its newline is returned apart, never counted as read; over-long lines are skipped without
being buffered whole; a dsh ``.jsonl.zstd`` file is read frame by frame), the fresh state of a
file read from its start, the session key a state belongs to and the digest of a file's first
line. It loads only the standard library and the readers (no attrs, dataclasses, typing or
pathlib), so the Stop hook's fast path (:mod:`taskcore.donegate.quickhook`) can bring a grown
transcript up to date itself.
"""

from __future__ import annotations

import os

from taskcore.donegate.evidence import Evidence
from taskcore.donegate.light import CLAUDE_CODE, CODEX, DSH, head_digest
from taskcore.limits import GATE_LINE_MAX_BYTES

TYPE_CHECKING = False  # not typing's: importing typing alone costs a Stop hook ~5 ms
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    StrPath = str | os.PathLike[str]

__all__ = [
    "FLUSH_BYTES",
    "feeder",
    "fresh",
    "head_of",
    "read_transcript",
    "session_key_for",
    "stem",
    "with_tail",
]

_CHUNK = 4 * 1024 * 1024
FLUSH_BYTES = 32 * 1024 * 1024
"""A long read stores its progress every this many bytes (see :func:`read_transcript`)."""


def feeder(harness: str) -> Callable[[Evidence, bytes], None]:
    """The line reader of a harness (``claude-code``, ``codex`` or ``dsh``).

    Its module is imported here, on use: a Stop hook loads only its own harness's reader.
    """
    if harness == CLAUDE_CODE:
        from taskcore.donegate import claude

        return claude.feed
    if harness == CODEX:
        from taskcore.donegate import codex

        return codex.feed
    if harness == DSH:
        from taskcore.donegate import dsh

        return dsh.feed
    raise KeyError(harness)


def stem(path: StrPath) -> str:
    """``pathlib.PurePath(path).stem``, without pathlib.

    >>> [stem(p) for p in ("/a/b.jsonl", "/a/session.jsonl.zstd", "/a/.x", "/a/c")]
    ['b', 'session.jsonl', '.x', 'c']
    """
    name = os.path.basename(os.fspath(path))
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def _parent_name(path: str) -> str:
    return os.path.basename(os.path.dirname(path))


def head_of(path: StrPath) -> str:
    """Digest of the first line (at most 4 KiB); empty until the first line is complete.

    For a dsh ``.jsonl.zstd`` file: of its first frame (the header frame, written once).
    """
    path = os.fspath(path)
    if not path.endswith(".zstd"):
        return head_digest(path)
    try:
        with open(path, "rb") as f:
            data = f.read(65536)
    except OSError:
        return ""
    from taskcore.donegate import dsh

    frames = dsh.scan_frames(data).frames
    if not frames:
        return ""
    import hashlib  # only here: the other harnesses' hook never loads it

    return hashlib.sha256(data[: frames[0][1]]).hexdigest()[:32]


def _is_claude_subagent(path: str) -> bool:
    return _parent_name(path) == "subagents" or stem(path).startswith("agent-")


def fresh(path: StrPath, harness: str) -> Evidence:
    """The state of a transcript before its first line (a Claude Code subagent knows its ids)."""
    path = os.fspath(path)
    ev = Evidence(harness=harness)
    if harness == CLAUDE_CODE and _is_claude_subagent(path):
        name = stem(path)
        ev.subagent = True
        ev.agent_id = name[6:] if name.startswith("agent-") else name
        if _parent_name(path) == "subagents":
            ev.parent_session_id = _parent_name(os.path.dirname(path))
    return ev


def session_key_for(ev: Evidence, path: StrPath) -> tuple[str, str]:
    """(session key, parent key) of a transcript's state.

    >>> ev = Evidence(harness="codex", session_id="019a")
    >>> session_key_for(ev, "rollout-x.jsonl")
    ('codex:019a', '')
    """
    name = stem(path)
    if ev.harness == CLAUDE_CODE:
        sid = ev.session_id or (ev.parent_session_id if ev.subagent else name)
        if ev.subagent:
            parent = ev.parent_session_id or sid
            return f"{CLAUDE_CODE}:{parent}/{ev.agent_id or name}", f"{CLAUDE_CODE}:{parent}"
        return f"{CLAUDE_CODE}:{sid}", ""
    if ev.harness == DSH:
        sid = ev.session_id or _parent_name(os.fspath(path))
        parent = f"{DSH}:{ev.parent_session_id}" if ev.parent_session_id else ""
        return f"{DSH}:{sid}", parent
    sid = ev.session_id or name
    parent = f"{CODEX}:{ev.parent_session_id}" if ev.subagent and ev.parent_session_id else ""
    return f"{CODEX}:{sid}", parent


def _lines(path: str, offset: int, size: int) -> Iterator[tuple[bytes, int]]:
    """Yield (line, end offset) for complete lines in ``[offset, size)``; then the tail.

    The final item is ``(partial_tail, -1)`` when bytes after the last newline remain.
    Over-long lines are yielded as ``b""`` (skipped) without being buffered whole.
    """
    with open(path, "rb") as f:
        f.seek(offset)
        pos = offset
        buf = b""
        skipping = False
        while pos < size:
            chunk = f.read(min(_CHUNK, size - pos))
            if not chunk:
                break
            pos += len(chunk)
            start = 0
            data = buf + chunk if buf else chunk
            base = pos - len(data)
            buf = b""
            while True:
                nl = data.find(b"\n", start)
                if nl < 0:
                    break
                if skipping or nl - start > GATE_LINE_MAX_BYTES:
                    skipping = False
                    yield b"", base + nl + 1
                else:
                    yield data[start:nl], base + nl + 1
                start = nl + 1
            rest = data[start:]
            if skipping:
                continue
            if len(rest) > GATE_LINE_MAX_BYTES:
                skipping = True
                continue
            buf = rest
        if buf and not skipping:
            yield buf, -1


def read_transcript(
    path: StrPath,
    harness: str,
    state: Evidence | None,
    offset: int,
    size: int,
    *,
    on_flush: Callable[[Evidence, int], None] | None = None,
) -> tuple[Evidence, int, bytes]:
    """Feed complete lines from ``offset`` to ``size``; return (state, new offset, tail).

    ``on_flush(state, offset)`` is called after every ``FLUSH_BYTES`` read (a long first read
    stores its progress).
    """
    path = os.fspath(path)
    ev = state if state is not None else fresh(path, harness)
    feed = feeder(harness)
    if harness == DSH:
        return _read_dsh(path, ev, offset, size, on_flush)
    tail = b""
    since_flush = 0
    for line, end in _lines(path, offset, size):
        if end < 0:
            tail = line
            break
        since_flush += end - offset
        offset = end
        if not line:
            ev.lines += 1
            ev.skipped_lines += 1
            continue
        if line.strip():
            feed(ev, line)
        if on_flush is not None and since_flush >= FLUSH_BYTES:
            on_flush(ev, offset)
            since_flush = 0
    return ev, offset, tail


def with_tail(ev: Evidence, harness: str, tail: bytes) -> Evidence:
    """``ev`` with the unfinished last line ``tail`` fed too, as a copy (``ev`` unchanged).

    What the hook answers from: the evidence of a transcript's complete lines is stored,
    the half-written last line only counted for this answer.
    """
    if not tail.strip():
        return ev
    current = ev.copy()
    feeder(harness)(current, tail)
    return current


def _read_dsh(
    path: str,
    ev: Evidence,
    offset: int,
    size: int,
    on_flush: Callable[[Evidence, int], None] | None,
) -> tuple[Evidence, int, bytes]:
    """:func:`read_transcript` for a dsh session: offsets advance only at frame ends."""
    from taskcore.donegate import dsh

    tail: list[bytes] = []
    since_flush = 0
    for line, end in dsh.iter_lines(path, offset, size):
        if end == -2:
            ev.lines += 1
            ev.bad_lines += 1
            break
        if end == -1:
            tail.append(line)
            continue
        if not line:
            ev.lines += 1
            ev.skipped_lines += 1
        elif line.strip():
            dsh.feed(ev, line)
        if end > 0:
            since_flush += end - offset
            offset = end
            if on_flush is not None and since_flush >= FLUSH_BYTES:
                on_flush(ev, offset)
                since_flush = 0
    return ev, offset, b"\n".join(tail)
