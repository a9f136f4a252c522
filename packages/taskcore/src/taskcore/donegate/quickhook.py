"""The done gate's Stop hook, fast path: the full hook's answer without attrs, or ``None``.

Most of a hook's time is interpreter start-up and imports (attrs alone costs more than
``python -c pass``). This module loads only the standard library, apsw and three small gate
modules (:mod:`~taskcore.donegate.light`, :mod:`~taskcore.donegate.budget`,
:mod:`~taskcore.donegate.receipt`). It answers when:

* the command line is one of the plain forms ``--harness H [--subagent] [--deadline-ms N]
  [--index PATH]`` (read by :mod:`taskcli.gate_stop`, which calls :func:`answer`);
* the payload is a ``Stop`` with a ``transcript_path`` (or a ``SubagentStop`` without
  ``--subagent``, which is silent);
* the index exists at the schema this code knows.

Then, if the index has read the transcript to its end (same size, nothing after the last
newline, same first line, same harness) and, for a Claude Code main session, every subagent
file beside it too, it answers from the verdict stored with the session's state
(``gate_verdict``, see :mod:`taskcore.store.sqlite_gate`), unless ``last_assistant_message``
could change it (below rung 2). Otherwise (the usual real stop: the agent's last turn is not
indexed yet) :func:`taskcore.donegate.quickindex.bring_up_to_date` reads what is new with the
gate's readers and writes the rows :meth:`taskcore.donegate.index.GateIndex.refresh` writes,
inside the transaction that spends the budget (one ``BEGIN IMMEDIATE`` at
``synchronous=FULL``, one commit per stop).

The answer is the full hook's: the receipt from that verdict and the repository's history,
the budget spent, the same output bytes. In every other case, and on any error before the
commit (nothing is kept then), the payload bytes go to the full hook
(:func:`taskcore.donegate.hook.respond`), which answers as it always has.
:mod:`taskcli.gate_stop` holds the deadline for both (``SIGALRM`` on the fast path, a worker
thread on the full one).

tests/taskcore/donegate/test_quickhook.py and test_quickindex.py run both paths over the same
indexes, transcripts and payloads and compare their output, the index rows and the budget.
"""

from __future__ import annotations

import json
import os
import time
import types

import apsw

from taskcore.donegate.budget import decide
from taskcore.donegate.light import (
    CLAUDE_CODE,
    CODEX,
    DSH,
    env_locations,
    harness_of_real,
    head_digest,
    hook_output,
    repository_of,
    wait_for_rollout,
)
from taskcore.donegate.receipt import RepoHistory, render
from taskcore.limits import (
    GATE_CODEX_ROLLOUT_WAIT_MS,
    GATE_INDEX_BUSY_MS,
    GATE_STDIN_MAX_BYTES,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["INDEX_SCHEMA_VERSION", "answer"]

INDEX_SCHEMA_VERSION = 2
"""The gate index schema this module reads (``schema_versions`` row ``gate_index``)."""


def _text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def _current(conn: apsw.Connection, path: str, harness: str) -> str | None:
    """The session key of ``path`` when the index has read all of it, else ``None``."""
    real = os.path.realpath(path)
    if real.endswith(".zstd"):
        return None
    st = os.stat(real)
    row = conn.execute(
        "SELECT harness, session_key, byte_offset, size, head FROM gate_file WHERE path = ?",
        (real,),
    ).fetchone()
    if row is None:
        return None
    rec_harness, key, offset, size, head = row
    if rec_harness != harness or not offset == size == st.st_size:
        return None
    if offset != 0 and head != head_digest(real):
        return None
    return str(key)


def _subagents_current(conn: apsw.Connection, real: str) -> bool:
    """Whether every subagent transcript of a Claude Code main session is fully indexed."""
    name = os.path.basename(real)
    dot = name.rfind(".")
    stem = name[:dot] if 0 < dot < len(name) - 1 else name  # pathlib's stem
    folder = os.path.join(os.path.dirname(real), stem, "subagents")
    try:
        names = os.listdir(folder)
    except OSError:
        return True  # the full hook finds none either
    for name in names:
        path = os.path.join(folder, name)
        if (
            name.endswith(".jsonl")
            and os.path.isfile(path)
            and _current(conn, path, CLAUDE_CODE) is None
        ):
            return False
    return True


def answer(
    harness: str, raw: bytes, *, subagent: bool = False, index_path: str | None = None
) -> str | None:
    """The hook's stdout text from the index alone, or ``None`` when the full hook must run.

    Raises nothing: an error before the budget is written gives ``None``.
    """
    try:
        if len(raw) > GATE_STDIN_MAX_BYTES:
            return None
        data = json.loads(raw)
        if not isinstance(data, dict):
            return None
        event = _text(data, "hook_event_name") or "Stop"
        if event == "SubagentStop" and not subagent:
            return ""
        # A subagent's stop is judged on the subagent's own transcript, with Stop's budget.
        transcript = _text(
            data, "agent_transcript_path" if event == "SubagentStop" else "transcript_path"
        )
        if event not in ("Stop", "SubagentStop") or transcript is None:
            return None
        path = os.path.expanduser(transcript)
        index, claude_root, codex_root, dsh_root = env_locations(index_path)
        if not os.path.isfile(path) or os.path.islink(index) or not os.path.isfile(index):
            return None
        if harness == CODEX:  # its rollout is written behind the turn: let it catch up
            wait_for_rollout(
                path, _text(data, "last_assistant_message"), GATE_CODEX_ROLLOUT_WAIT_MS
            )
        roots = [(CLAUDE_CODE, claude_root), (CODEX, codex_root)]
        if dsh_root is not None:
            roots.append((DSH, dsh_root))
        conn = apsw.Connection(index, flags=apsw.SQLITE_OPEN_READWRITE)
        # No checkpoint when this (often the last) connection closes: a commit is durable
        # in the WAL already (synchronous=FULL), and the checkpoint's own fsyncs cost a
        # stop more than the rest of its write. SQLite's automatic checkpoint (every 1000
        # WAL pages) and the full index's connections still move the WAL into the file.
        conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    except Exception:
        return None
    try:
        return _answer(conn, harness, data, event, path, roots)
    finally:
        conn.close()


def _schema_ok(conn: apsw.Connection) -> bool:
    version = conn.execute(
        "SELECT version FROM schema_versions WHERE component = 'gate_index'"
    ).fetchone()
    return version is not None and version[0] == INDEX_SCHEMA_VERSION


def _stored(
    conn: apsw.Connection, real: str, file_harness: str, last_message: str | None
) -> tuple[str, str, Any, str] | None:
    """(key, prompt key, verdict, repository) from the index alone, or ``None``."""
    key = _current(conn, real, file_harness)
    if key is None:
        return None
    session = conn.execute(
        "SELECT harness, subagent, cwd, prompts FROM gate_session WHERE session_key = ?",
        (key,),
    ).fetchone()
    stored = conn.execute(
        "SELECT verdict FROM gate_verdict WHERE session_key = ?", (key,)
    ).fetchone()
    if session is None or stored is None:
        return None
    session_harness, is_subagent, cwd, prompts = session
    if session_harness == CLAUDE_CODE and not is_subagent and not _subagents_current(conn, real):
        return None
    verdict = types.SimpleNamespace(**json.loads(stored[0]))
    if verdict.rung in (0, 1) and last_message is not None and last_message.strip():
        return None  # the message may claim completion: the ladder decides
    return key, f"p{prompts}", verdict, repository_of(cwd)


def _answer(
    conn: apsw.Connection,
    harness: str,
    data: dict[str, Any],
    event: str,
    path: str,
    roots: Sequence[tuple[str, str]],
) -> str | None:
    last_message = _text(data, "last_assistant_message")
    try:
        conn.set_busy_timeout(GATE_INDEX_BUSY_MS)
        conn.execute("PRAGMA synchronous=FULL")
        real = os.path.realpath(path)
        file_harness = harness_of_real(real, roots)
        conn.execute("BEGIN")
        try:
            if not _schema_ok(conn):
                return None
            found = _stored(conn, real, file_harness, last_message)
        finally:
            conn.execute("COMMIT")
        if found is None and real.endswith(".zstd"):
            return None
        conn.execute("BEGIN IMMEDIATE")
        try:
            if found is None:
                # The transcript grew (or the stored verdict cannot answer): read what is
                # new with the gate's readers, in this transaction, then answer as above.
                from taskcore.donegate.quickindex import bring_up_to_date

                found = (
                    bring_up_to_date(conn, real, file_harness, last_message)
                    if _schema_ok(conn)
                    else None
                )
                if found is None:
                    conn.execute("ROLLBACK")
                    return None
            key, prompt_key, verdict, repository = found
            n, reached = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(rung >= 3), 0) FROM gate_session "
                "WHERE repository = ? AND session_key != ? AND rung >= 1",
                (repository, key),
            ).fetchone() or (0, 0)
            receipt = render(verdict, RepoHistory(n=int(n), reached=int(reached)))
            row = conn.execute(
                "SELECT used, receipt_shown FROM gate_budget "
                "WHERE session_key = ? AND prompt_key = ?",
                (key, prompt_key),
            ).fetchone()
            used, shown = (0, False) if row is None else (int(row[0]), bool(row[1]))
            decision = decide(
                below_line=bool(verdict.below_line),
                used=used,
                shown=shown,
                stop_hook_active=data.get("stop_hook_active") is True,
            )
            if (decision.used, decision.shown) != (used, shown):
                conn.execute(
                    "INSERT OR REPLACE INTO gate_budget(session_key, prompt_key, used, "
                    "receipt_shown, updated_at_ms) VALUES (?, ?, ?, ?, ?)",
                    (key, prompt_key, decision.used, int(decision.shown), time.time_ns() // 10**6),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except Exception:
        return None
    return hook_output(harness, event, decision.action, receipt)
