"""The Stop hook's fast path, second half: bring a grown transcript up to date in the index.

At a real stop the agent's last turn is usually not indexed yet, so the stored verdict
(:mod:`taskcore.donegate.quickhook`'s first choice) is out of date. This module does what
:meth:`taskcore.donegate.index.GateIndex.refresh` and
:func:`taskcore.donegate.session_gate.answer` do for one stop, on the fast path's own apsw
connection and inside the transaction the caller holds (the budget is spent in the same one,
so a grown stop costs one commit): read the appended lines of the transcript (and, for a
Claude Code main session, of every subagent file beside it) with the same readers, write the
same ``gate_file``, ``gate_session`` and ``gate_verdict`` rows :mod:`taskcore.donegate.index`
writes, and place the session on the ladder with the harness's ``last_assistant_message``.

It loads the standard library, apsw and the gate's readers (:mod:`~taskcore.donegate.transcript`,
:mod:`~taskcore.donegate.ladder` and what they import): no attrs, cattrs, typing, pathlib or
the store layer. It declines (returns ``None``: the full hook answers) a transcript with more
than :data:`READ_MAX_BYTES` unread (the full hook stores a long read's progress as it goes),
a dsh ``.jsonl.zstd`` file and any file it cannot read. The SQL here mirrors
:mod:`taskcore.store.sqlite_gate`; tests/taskcore/donegate/test_quickindex.py holds the rows
and the answers to the full indexer's over a table of transcripts.
"""

from __future__ import annotations

import os
import time

from taskcore.donegate.evidence import Evidence
from taskcore.donegate.ladder import evaluate
from taskcore.donegate.light import CLAUDE_CODE, repository_of
from taskcore.donegate.transcript import (
    head_of,
    read_transcript,
    session_key_for,
    stem,
    with_tail,
)

TYPE_CHECKING = False  # not typing's: importing typing alone costs a Stop hook ~5 ms
if TYPE_CHECKING:
    import apsw

    from taskcore.donegate.ladder import Verdict

__all__ = ["READ_MAX_BYTES", "Grown", "bring_up_to_date"]

READ_MAX_BYTES = 4 * 1024 * 1024
"""The most unread bytes (over the main file and its subagents) the fast path reads itself."""

Grown = tuple[str, str, "Verdict", str]
"""``(session key, prompt key, verdict, repository)`` of a stop, the index up to date."""


class _DeclinedError(Exception):
    """The full hook must answer (nothing of this transaction may be kept)."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _states(text: str) -> Evidence | None:
    try:
        return Evidence.from_json(text)
    except (ValueError, TypeError, KeyError):
        return None


def _child_states(conn: apsw.Connection, key: str) -> list[Evidence]:
    """``GateIndex._child_states``: the stored states of a session's subagents, by key."""
    out = []
    children = conn.execute(
        "SELECT session_key FROM gate_session WHERE parent_key = ? ORDER BY session_key", (key,)
    ).fetchall()
    for (child,) in children:
        row = conn.execute(
            "SELECT state FROM gate_file WHERE session_key = ? ORDER BY updated_at_ms DESC LIMIT 1",
            (child,),
        ).fetchone()
        if row is None:
            continue
        ev = _states(row[0])
        if ev is not None:
            out.append(ev)
    return out


def _put_verdict(conn: apsw.Connection, key: str, verdict: Verdict) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO gate_verdict(session_key, verdict) VALUES (?, ?)",
        (key, verdict.to_json()),
    )


def _store(
    conn: apsw.Connection,
    path: str,
    harness: str,
    ev: Evidence,
    offset: int,
    st: os.stat_result,
    head: str,
) -> tuple[str, str]:
    """``GateIndex._store``: the file, its session, its verdict and its parent's."""
    key, parent = session_key_for(ev, path)
    now = _now_ms()
    conn.execute(
        "INSERT OR REPLACE INTO gate_file(path, harness, session_key, byte_offset, size, "
        "mtime_ns, head, state, updated_at_ms) VALUES (?,?,?,?,?,?,?,?,?)",
        (path, harness, key, offset, st.st_size, st.st_mtime_ns, head, ev.to_json(), now),
    )
    states = [ev, *_child_states(conn, key)] if not ev.subagent else [ev]
    verdict = evaluate(states)
    _put_verdict(conn, key, verdict)
    conn.execute(
        "INSERT OR REPLACE INTO gate_session(session_key, harness, session_id, parent_key, "
        "subagent, path, cwd, repository, first_ms, last_ms, rung, rung_name, prompts, "
        "updated_at_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            key,
            harness,
            ev.session_id or stem(path),
            parent,
            int(ev.subagent),
            path,
            ev.cwd,
            repository_of(ev.cwd),
            ev.first_ts,
            ev.ts or st.st_mtime_ns // 1_000_000,
            verdict.rung,
            verdict.rung_name,
            ev.prompts,
            now,
        ),
    )
    if parent:
        _replace_parent(conn, parent)
    return key, parent


def _replace_parent(conn: apsw.Connection, parent_key: str) -> None:
    """``GateIndex._replace_parent``: a subagent moved, so its main session's verdict may."""
    parent = conn.execute(
        "SELECT rung FROM gate_session WHERE session_key = ?", (parent_key,)
    ).fetchone()
    row = conn.execute(
        "SELECT state FROM gate_file WHERE session_key = ? ORDER BY updated_at_ms DESC LIMIT 1",
        (parent_key,),
    ).fetchone()
    if parent is None or row is None:
        return
    pev = _states(row[0])
    if pev is None:
        return
    verdict = evaluate([pev, *_child_states(conn, parent_key)])
    _put_verdict(conn, parent_key, verdict)
    if verdict.rung != parent[0]:
        conn.execute(
            "UPDATE gate_session SET rung = ?, rung_name = ?, updated_at_ms = ? "
            "WHERE session_key = ?",
            (verdict.rung, verdict.rung_name, _now_ms(), parent_key),
        )


def _refresh(
    conn: apsw.Connection, path: str, harness: str, allowance: list[int]
) -> tuple[str, Evidence]:
    """``GateIndex.refresh`` of the resolved ``path``: (session key, current state)."""
    st = os.stat(path)
    rec = conn.execute(
        "SELECT harness, byte_offset, size, head, state FROM gate_file WHERE path = ?", (path,)
    ).fetchone()
    head = head_of(path)
    state: Evidence | None = None
    offset = 0
    if rec is not None:
        rec_harness, rec_offset, _size, rec_head, rec_state = rec
        if (
            rec_harness == harness
            and rec_offset <= st.st_size
            and (rec_offset == 0 or rec_head == head)
        ):
            state = _states(rec_state)
            offset = rec_offset if state is not None else 0
    allowance[0] -= st.st_size - offset
    if allowance[0] < 0:
        raise _DeclinedError
    start = offset
    ev, offset, tail = read_transcript(path, harness, state, offset, st.st_size)
    if offset != start or rec is None or rec[2] != st.st_size:
        key, _parent = _store(conn, path, harness, ev, offset, st, head)
    else:
        key, _parent = session_key_for(ev, path)
    return key, with_tail(ev, harness, tail)


def _subagent_files(path: str) -> list[str]:
    """``session_gate._claude_subagent_files``: ``<dir>/<stem>/subagents/*.jsonl`` files."""
    folder = os.path.join(os.path.dirname(path), stem(path), "subagents")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for name in sorted(names):
        sub = os.path.join(folder, name)
        if stem(name) != name and name.endswith(".jsonl") and os.path.isfile(sub):
            out.append(sub)
    return out


def bring_up_to_date(
    conn: apsw.Connection, real: str, harness: str, last_message: str | None
) -> Grown | None:
    """Index what the transcript ``real`` gained (and its subagents) and place the session.

    ``real`` is resolved and was written by ``harness``. Runs inside the caller's write
    transaction; returns ``None`` (having raised nothing and with rows possibly written that
    the caller must roll back) when the full hook must answer.
    """
    if real.endswith(".zstd"):
        return None
    allowance = [READ_MAX_BYTES]
    try:
        key, current = _refresh(conn, real, harness, allowance)
        if harness == CLAUDE_CODE and not current.subagent:
            for sub in _subagent_files(real):
                _refresh(conn, os.path.realpath(sub), CLAUDE_CODE, allowance)
    except (_DeclinedError, OSError):
        return None
    states = [current] if current.subagent else [current, *_child_states(conn, key)]
    verdict = evaluate(states, last_message=last_message)
    return key, f"p{current.prompts}", verdict, repository_of(current.cwd)
