"""The done-gate index interface: transcripts read, sessions placed, budgets spent.

The index is its own SQLite file under the user's data directory (not part of the service
journal). It holds, per transcript file, the byte offset read so far and the reader's state
at that offset; per session, its rung and repository; and per session and user prompt, the
re-entries the Stop hook spent.
"""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = ["GateBudgetRecord", "GateFileRecord", "GateSessionRecord", "GateStore"]


@attrs.frozen(kw_only=True)
class GateFileRecord:
    """One transcript file: how far it was read and the reader state at that point.

    ``head`` is a digest of the file's first bytes; when it changes (the file was replaced)
    or the file shrank below ``offset``, the file is read again from the start.
    """

    path: str
    harness: str
    session_key: str
    offset: int
    size: int
    mtime_ns: int
    head: str
    state: str
    updated_at_ms: int


@attrs.frozen(kw_only=True)
class GateSessionRecord:
    """One session (a main session or a subagent run) and its place on the ladder."""

    session_key: str
    harness: str
    session_id: str
    parent_key: str
    subagent: bool
    path: str
    cwd: str
    repository: str
    first_ms: int
    last_ms: int
    rung: int
    rung_name: str
    prompts: int
    updated_at_ms: int


@attrs.frozen(kw_only=True)
class GateBudgetRecord:
    """Re-entries the Stop hook spent for one session and user prompt."""

    session_key: str
    prompt_key: str
    used: int
    receipt_shown: bool
    updated_at_ms: int


class GateStore(Protocol):
    """Reads and writes of the gate index inside one transaction."""

    def get_file(self, path: str) -> GateFileRecord | None:
        """Return the file record for ``path``, or ``None``."""
        ...

    def put_file(self, record: GateFileRecord) -> None:
        """Insert or replace a file record."""
        ...

    def file_of_session(self, session_key: str) -> GateFileRecord | None:
        """Return the file record of a session, or ``None``."""
        ...

    def get_session(self, session_key: str) -> GateSessionRecord | None:
        """Return one session, or ``None``."""
        ...

    def put_session(self, record: GateSessionRecord) -> None:
        """Insert or replace a session record."""
        ...

    def sessions_with_id(self, session_id: str) -> tuple[GateSessionRecord, ...]:
        """Sessions whose harness session id is ``session_id`` (main sessions first)."""
        ...

    def children(self, parent_key: str) -> tuple[GateSessionRecord, ...]:
        """Subagent sessions of ``parent_key``."""
        ...

    def latest_in_repository(self, repository: str) -> GateSessionRecord | None:
        """The most recently active main session of a repository, or ``None``."""
        ...

    def repository_history(self, repository: str, exclude_key: str) -> tuple[int, int]:
        """(sessions at rung 1 or higher, of those at rung 3 or higher), one excluded."""
        ...

    def sessions(self, *, since_ms: int = 0) -> tuple[GateSessionRecord, ...]:
        """Every session active since ``since_ms``."""
        ...

    def get_verdict(self, session_key: str) -> str | None:
        """The session's ladder verdict as stored with its state (JSON), or ``None``."""
        ...

    def put_verdict(self, session_key: str, verdict: str) -> None:
        """Store the verdict (JSON) computed from the session's stored state and children's."""
        ...

    def get_budget(self, session_key: str, prompt_key: str) -> GateBudgetRecord | None:
        """The budget spent for one session and prompt, or ``None``."""
        ...

    def put_budget(self, record: GateBudgetRecord) -> None:
        """Insert or replace a budget record."""
        ...

    def counts(self) -> tuple[int, int]:
        """(files, sessions) in the index."""
        ...

    def prune(self, before_ms: int) -> int:
        """Delete sessions idle since before ``before_ms``, their files and old budgets.

        Return how many rows went (the retention sweep).
        """
        ...
