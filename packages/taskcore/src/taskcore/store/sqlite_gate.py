"""SQLite implementation of :class:`~taskcore.store.gate_api.GateStore`, in its own file.

The gate index is not a journal component: :class:`GateIndexDatabase` opens its own file
(default ``user_data_root() / "gate-index.sqlite"``) with this module's ``COMPONENT``.

>>> import tempfile, pathlib
>>> from taskcore.store.gate_api import GateBudgetRecord
>>> db = GateIndexDatabase(pathlib.Path(tempfile.mkdtemp()) / "gate-index.sqlite")
>>> with db.write() as store:
...     store.put_budget(GateBudgetRecord(session_key="codex:s1", prompt_key="p1", used=1,
...                                       receipt_shown=False, updated_at_ms=5))
>>> with db.read() as store:
...     store.get_budget("codex:s1", "p1").used
1
>>> db.close()
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw

from taskcore.store.gate_api import GateBudgetRecord, GateFileRecord, GateSessionRecord
from taskcore.store.sqlite import Component, Migration, SqliteDatabase

__all__ = ["COMPONENT", "GateIndexDatabase", "SqliteGateStore"]

COMPONENT = Component(
    "gate_index",
    (
        Migration(
            1,
            """
            CREATE TABLE gate_file (
                path TEXT PRIMARY KEY,
                harness TEXT NOT NULL,
                session_key TEXT NOT NULL,
                byte_offset INTEGER NOT NULL CHECK (byte_offset >= 0),
                size INTEGER NOT NULL,
                mtime_ns INTEGER NOT NULL,
                head TEXT NOT NULL,
                state TEXT NOT NULL,
                updated_at_ms INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX gate_file_session ON gate_file(session_key);
            CREATE TABLE gate_session (
                session_key TEXT PRIMARY KEY,
                harness TEXT NOT NULL,
                session_id TEXT NOT NULL,
                parent_key TEXT NOT NULL,
                subagent INTEGER NOT NULL CHECK (subagent IN (0, 1)),
                path TEXT NOT NULL,
                cwd TEXT NOT NULL,
                repository TEXT NOT NULL,
                first_ms INTEGER NOT NULL,
                last_ms INTEGER NOT NULL,
                rung INTEGER NOT NULL CHECK (rung BETWEEN 0 AND 5),
                rung_name TEXT NOT NULL,
                prompts INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX gate_session_id ON gate_session(session_id);
            CREATE INDEX gate_session_repo ON gate_session(repository, last_ms);
            CREATE INDEX gate_session_parent ON gate_session(parent_key);
            CREATE TABLE gate_budget (
                session_key TEXT NOT NULL,
                prompt_key TEXT NOT NULL,
                used INTEGER NOT NULL CHECK (used >= 0),
                receipt_shown INTEGER NOT NULL CHECK (receipt_shown IN (0, 1)),
                updated_at_ms INTEGER NOT NULL,
                PRIMARY KEY (session_key, prompt_key)
            ) STRICT;
            """,
        ),
        # The verdict the session's stored state (and its subagents') gives, written with
        # that state: the Stop hook's fast path (taskcore.donegate.quickhook) answers from it
        # when the transcript has nothing new, without loading the ladder.
        Migration(
            2,
            """
            CREATE TABLE gate_verdict (
                session_key TEXT PRIMARY KEY,
                verdict TEXT NOT NULL
            ) STRICT;
            """,
        ),
    ),
)

_FILE_COLS = "path, harness, session_key, byte_offset, size, mtime_ns, head, state, updated_at_ms"
_SESSION_COLS = (
    "session_key, harness, session_id, parent_key, subagent, path, cwd, repository, "
    "first_ms, last_ms, rung, rung_name, prompts, updated_at_ms"
)


def _file(row: Any) -> GateFileRecord:
    return GateFileRecord(
        path=str(row[0]),
        harness=str(row[1]),
        session_key=str(row[2]),
        offset=int(row[3]),
        size=int(row[4]),
        mtime_ns=int(row[5]),
        head=str(row[6]),
        state=str(row[7]),
        updated_at_ms=int(row[8]),
    )


def _session(row: Any) -> GateSessionRecord:
    return GateSessionRecord(
        session_key=str(row[0]),
        harness=str(row[1]),
        session_id=str(row[2]),
        parent_key=str(row[3]),
        subagent=bool(row[4]),
        path=str(row[5]),
        cwd=str(row[6]),
        repository=str(row[7]),
        first_ms=int(row[8]),
        last_ms=int(row[9]),
        rung=int(row[10]),
        rung_name=str(row[11]),
        prompts=int(row[12]),
        updated_at_ms=int(row[13]),
    )


class SqliteGateStore:
    """The gate tables, bound to one connection inside one transaction."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def get_file(self, path: str) -> GateFileRecord | None:
        """Return the file record for ``path``, or ``None``."""
        row = self._conn.execute(
            f"SELECT {_FILE_COLS} FROM gate_file WHERE path = ?",  # noqa: S608 - constant column lists
            (path,),
        ).fetchone()
        return None if row is None else _file(row)

    def put_file(self, record: GateFileRecord) -> None:
        """Insert or replace a file record."""
        self._conn.execute(
            f"INSERT OR REPLACE INTO gate_file({_FILE_COLS}) VALUES (?,?,?,?,?,?,?,?,?)",  # noqa: S608 - constant column lists
            (
                record.path,
                record.harness,
                record.session_key,
                record.offset,
                record.size,
                record.mtime_ns,
                record.head,
                record.state,
                record.updated_at_ms,
            ),
        )

    def file_of_session(self, session_key: str) -> GateFileRecord | None:
        """Return the file record of a session, or ``None``."""
        row = self._conn.execute(
            f"SELECT {_FILE_COLS} FROM gate_file WHERE session_key = ? "  # noqa: S608 - constant column lists
            "ORDER BY updated_at_ms DESC LIMIT 1",
            (session_key,),
        ).fetchone()
        return None if row is None else _file(row)

    def get_session(self, session_key: str) -> GateSessionRecord | None:
        """Return one session, or ``None``."""
        row = self._conn.execute(
            f"SELECT {_SESSION_COLS} FROM gate_session WHERE session_key = ?",  # noqa: S608 - constant column lists
            (session_key,),
        ).fetchone()
        return None if row is None else _session(row)

    def put_session(self, record: GateSessionRecord) -> None:
        """Insert or replace a session record."""
        self._conn.execute(
            f"INSERT OR REPLACE INTO gate_session({_SESSION_COLS}) "  # noqa: S608 - constant column lists
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                record.session_key,
                record.harness,
                record.session_id,
                record.parent_key,
                int(record.subagent),
                record.path,
                record.cwd,
                record.repository,
                record.first_ms,
                record.last_ms,
                record.rung,
                record.rung_name,
                record.prompts,
                record.updated_at_ms,
            ),
        )

    def sessions_with_id(self, session_id: str) -> tuple[GateSessionRecord, ...]:
        """Sessions whose harness session id is ``session_id`` (main sessions first)."""
        rows = self._conn.execute(
            f"SELECT {_SESSION_COLS} FROM gate_session WHERE session_id = ? "  # noqa: S608 - constant column lists
            "ORDER BY subagent, last_ms DESC",
            (session_id,),
        )
        return tuple(_session(r) for r in rows)

    def children(self, parent_key: str) -> tuple[GateSessionRecord, ...]:
        """Subagent sessions of ``parent_key``."""
        rows = self._conn.execute(
            f"SELECT {_SESSION_COLS} FROM gate_session WHERE parent_key = ? "  # noqa: S608 - constant column lists
            "ORDER BY session_key",
            (parent_key,),
        )
        return tuple(_session(r) for r in rows)

    def latest_in_repository(self, repository: str) -> GateSessionRecord | None:
        """The most recently active main session of a repository, or ``None``."""
        row = self._conn.execute(
            f"SELECT {_SESSION_COLS} FROM gate_session "  # noqa: S608 - constant column lists
            "WHERE repository = ? AND subagent = 0 ORDER BY last_ms DESC, updated_at_ms DESC "
            "LIMIT 1",
            (repository,),
        ).fetchone()
        return None if row is None else _session(row)

    def repository_history(self, repository: str, exclude_key: str) -> tuple[int, int]:
        """(sessions at rung 1 or higher, of those at rung 3 or higher), one excluded."""
        row = self._conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(rung >= 3), 0) FROM gate_session "
            "WHERE repository = ? AND session_key != ? AND rung >= 1",
            (repository, exclude_key),
        ).fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    def sessions(self, *, since_ms: int = 0) -> tuple[GateSessionRecord, ...]:
        """Every session active since ``since_ms``."""
        rows = self._conn.execute(
            f"SELECT {_SESSION_COLS} FROM gate_session WHERE last_ms >= ? "  # noqa: S608 - constant column lists
            "ORDER BY session_key",
            (since_ms,),
        )
        return tuple(_session(r) for r in rows)

    def get_verdict(self, session_key: str) -> str | None:
        """The session's stored verdict (JSON), or ``None``."""
        row = self._conn.execute(
            "SELECT verdict FROM gate_verdict WHERE session_key = ?", (session_key,)
        ).fetchone()
        return None if row is None else str(row[0])

    def put_verdict(self, session_key: str, verdict: str) -> None:
        """Insert or replace the session's verdict (JSON)."""
        self._conn.execute(
            "INSERT OR REPLACE INTO gate_verdict(session_key, verdict) VALUES (?, ?)",
            (session_key, verdict),
        )

    def get_budget(self, session_key: str, prompt_key: str) -> GateBudgetRecord | None:
        """The budget spent for one session and prompt, or ``None``."""
        row = self._conn.execute(
            "SELECT session_key, prompt_key, used, receipt_shown, updated_at_ms "
            "FROM gate_budget WHERE session_key = ? AND prompt_key = ?",
            (session_key, prompt_key),
        ).fetchone()
        if row is None:
            return None
        return GateBudgetRecord(
            session_key=str(row[0]),
            prompt_key=str(row[1]),
            used=int(row[2]),
            receipt_shown=bool(row[3]),
            updated_at_ms=int(row[4]),
        )

    def put_budget(self, record: GateBudgetRecord) -> None:
        """Insert or replace a budget record."""
        self._conn.execute(
            "INSERT OR REPLACE INTO gate_budget(session_key, prompt_key, used, receipt_shown, "
            "updated_at_ms) VALUES (?, ?, ?, ?, ?)",
            (
                record.session_key,
                record.prompt_key,
                record.used,
                int(record.receipt_shown),
                record.updated_at_ms,
            ),
        )

    def counts(self) -> tuple[int, int]:
        """(files, sessions) in the index."""
        files = self._conn.execute("SELECT COUNT(*) FROM gate_file").fetchone()
        sessions = self._conn.execute("SELECT COUNT(*) FROM gate_session").fetchone()
        return (0 if files is None else int(files[0]), 0 if sessions is None else int(sessions[0]))

    def prune(self, before_ms: int) -> int:
        """Delete sessions last active before ``before_ms`` with their files, and old budgets.

        Return how many rows were deleted. A transcript that is read again is indexed again
        from its start.
        """
        self._conn.execute(
            "DELETE FROM gate_file WHERE session_key IN "
            "(SELECT session_key FROM gate_session WHERE last_ms < ?)",
            (before_ms,),
        )
        deleted = int(self._conn.changes())
        self._conn.execute(
            "DELETE FROM gate_verdict WHERE session_key IN "
            "(SELECT session_key FROM gate_session WHERE last_ms < ?)",
            (before_ms,),
        )
        self._conn.execute("DELETE FROM gate_session WHERE last_ms < ?", (before_ms,))
        deleted += int(self._conn.changes())
        self._conn.execute("DELETE FROM gate_budget WHERE updated_at_ms < ?", (before_ms,))
        return deleted + int(self._conn.changes())


class GateIndexDatabase:
    """The gate index file: transactions yield a :class:`SqliteGateStore`."""

    def __init__(
        self, path: Path | str, *, busy_timeout_ms: int = 10_000, create: bool = True
    ) -> None:
        self.path = Path(path)
        self.db = SqliteDatabase(
            self.path, (COMPONENT,), create=create, busy_timeout_ms=busy_timeout_ms
        )

    @contextmanager
    def write(self) -> Iterator[SqliteGateStore]:
        """A serialized write transaction, durable on a clean exit."""
        with self.db.write() as conn:
            yield SqliteGateStore(conn)

    @contextmanager
    def read(self) -> Iterator[SqliteGateStore]:
        """A read transaction over one snapshot."""
        with self.db.read() as conn:
            yield SqliteGateStore(conn)

    def close(self) -> None:
        """Close every connection."""
        self.db.close()
