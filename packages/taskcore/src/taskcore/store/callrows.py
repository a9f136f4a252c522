"""One read for the rows a workflow call looks up: its route, token, request, task and attempt.

A workflow mutation (claim, heartbeat, cancel, reconcile, result) reads, one primary-key
lookup each, the caller's repository and profile, the live token, the idempotency row, the
task, the attempt, the task's subject and the newest subject of that Change. Those are eight
round trips whose keys are all known when the transaction opens (the subject's from the
task's row), so :func:`prefetch_call` reads them in one statement (``LEFT JOIN`` from one
row: a missing row reads as ``NULL``s) and hands each row to its store's per-transaction
memo. The domain code then asks its stores as before (``tx.journal.get_task``,
``tx.authority.get_subject``, ``tx.tokens.get``, ...) and gets the same records without
another statement; any write through a store forgets what that store memoised, and every
transaction starts with empty memos.

Plain SQL over the tables both backends share, so the PostgreSQL transaction runs the same
statement (its connection translates the placeholders).
"""

from __future__ import annotations

from typing import Any, Final, Protocol

import attrs

from taskcore.store.sqlite_authority import PROFILES, REPOSITORIES, SUBJECTS
from taskcore.store.sqlite_journal import ATTEMPTS, REQUESTS, TASKS
from taskcore.store.sqlite_tokens import TOKENS

__all__ = ["CallKeys", "Seeded", "prefetch_call"]


@attrs.frozen(kw_only=True)
class CallKeys:
    """The keys of the rows one workflow call looks up (``attempt_id`` ``None``: no attempt)."""

    repository_id: str
    profile_id: str
    token_id: str
    owner_id: str
    agent_id: str
    request_id: str
    task_id: str
    attempt_id: str | None = None


class Seeded(Protocol):
    """A store that takes rows read for it (kept for the rest of the transaction)."""

    def seed(self, key: tuple[Any, ...], row: Any) -> None:
        """Remember ``row`` (``None``: no such row) under ``key``."""
        ...


_PARTS: Final = (
    ("r", REPOSITORIES),
    ("p", PROFILES),
    ("k", TOKENS),
    ("q", REQUESTS),
    ("t", TASKS),
    ("a", ATTEMPTS),
    ("s", SUBJECTS),
)

_COLUMNS: Final = ", ".join(
    ", ".join(f"{alias}.{c}" for c in table.columns) for alias, table in _PARTS
)

_SQL: Final = (
    f"SELECT {_COLUMNS}, (SELECT"  # noqa: S608 - constant column lists
    " max(l.subject_seq) FROM authority_subject l WHERE l.repository_id = "
    "s.repository_id AND l.profile_id = s.profile_id AND l.change_id = s.change_id) "
    "FROM (SELECT 1 AS one) base "
    "LEFT JOIN authority_repository r ON r.repository_id = ? "
    "LEFT JOIN authority_profile p ON p.repository_id = ? AND p.profile_id = ? "
    "LEFT JOIN token k ON k.token_id = ? "
    "LEFT JOIN journal_request q ON q.owner_id = ? AND q.agent_id = ? AND q.request_id = ? "
    "LEFT JOIN journal_task t ON t.task_id = ? "
    "LEFT JOIN journal_attempt a ON a.attempt_id = ? "
    "LEFT JOIN authority_subject s ON s.subject_seq = t.subject_seq"
)

_SPANS: Final = tuple(
    (sum(len(t.columns) for _, t in _PARTS[:i]), sum(len(t.columns) for _, t in _PARTS[: i + 1]))
    for i in range(len(_PARTS))
)


def _cut(row: tuple[Any, ...], part: int) -> tuple[Any, ...] | None:
    """The columns of one joined table, or ``None`` when the join found no row."""
    start, end = _SPANS[part]
    piece = tuple(row[start:end])
    return None if piece[0] is None else piece  # every first column is a NOT NULL key


def prefetch_call(
    conn: Any, *, authority: Seeded, tokens: Seeded | None, journal: Seeded, keys: CallKeys
) -> None:
    """Read every row ``keys`` name in one statement and seed each store's memo with it.

    ``tokens`` ``None`` leaves the token to be read by its store (a locking read).
    """
    row = conn.execute(
        _SQL,
        (
            keys.repository_id,
            keys.repository_id,
            keys.profile_id,
            keys.token_id,
            keys.owner_id,
            keys.agent_id,
            keys.request_id,
            keys.task_id,
            keys.attempt_id,
        ),
    ).fetchone()
    repository, profile, token, request, task, attempt, subject = (
        _cut(row, i) for i in range(len(_PARTS))
    )
    authority.seed(("repository", keys.repository_id), repository)
    authority.seed(("profile", keys.repository_id, keys.profile_id), profile)
    if tokens is not None:
        tokens.seed((keys.token_id,), token)
    journal.seed(("request", keys.owner_id, keys.agent_id, keys.request_id), request)
    journal.seed(("task", keys.task_id), task)
    if keys.attempt_id is not None:
        journal.seed(("attempt", keys.attempt_id), attempt)
    if subject is not None:
        authority.seed(("subject", subject[0]), subject)
        repository_id, profile_id, change_id = (subject[i] for i in _SUBJECT_CHANGE)
        authority.seed(("latest_seq", repository_id, profile_id, change_id), row[-1])


_SUBJECT_CHANGE: Final = tuple(
    SUBJECTS.columns.index(c) for c in ("repository_id", "profile_id", "change_id")
)
