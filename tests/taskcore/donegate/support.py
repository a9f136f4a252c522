"""Shared pieces of the done-gate tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def stop_payload(path: Path, **extra: Any) -> bytes:
    """A harness's Stop hook input naming the transcript at ``path`` (``extra`` added)."""
    return json.dumps(
        {
            "session_id": "s",
            "transcript_path": str(path),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            **extra,
        }
    ).encode()


# -- what every reader must leave behind, whatever a transcript line holds -------------------

_STATUSES = {"passed", "masked", "failed", "interrupted", "pending"}
_COUNTERS = (
    "bad_lines",
    "skipped_lines",
    "prompts",
    "compactions",
    "writes",
    "files_more",
    "commits",
    "ships",
    "seq",
    "ts",
)


def check_fed(before: Any, after: Any, *, pending_id: str | None = None) -> None:
    """Assert the properties an :class:`Evidence` has after one more line of any content.

    ``before`` is the state before the line (a copy), ``after`` the state fed. One line was
    counted; nothing already seen was forgotten (counters, files, checks only grow; the
    timestamp and sequence never go back); every bound holds; every check has a known kind
    and status; the stored form reads back to the same state. A shell call issued before
    (``pending_id``) is still pending or has become exactly one check.
    """
    from taskcore.donegate.evidence import Evidence
    from taskcore.donegate.kinds import Kind
    from taskcore.limits import (
        GATE_CHECKS_KEPT,
        GATE_FILES_KEPT,
        GATE_PENDING_MAX,
        GATE_TEXT_KEPT_CHARS,
    )

    assert after.lines == before.lines + 1
    for name in _COUNTERS:
        assert getattr(after, name) >= getattr(before, name), name
    assert after.files[: len(before.files)] == before.files
    # A finished check stays as it was; a pending (background) one may only have finished.
    kept = [(c.kind, c.pos, c.cmd) for c in after.checks]
    for check in before.checks:
        if check.status != "pending":
            assert check in after.checks
        assert (check.kind, check.pos, check.cmd) in kept
    assert len(after.checks) <= GATE_CHECKS_KEPT
    assert len(after.files) <= GATE_FILES_KEPT
    assert len(after.pending) <= GATE_PENDING_MAX
    assert len(after.last_text) <= GATE_TEXT_KEPT_CHARS
    kinds = {k.value for k in Kind}
    for check in after.checks:
        assert check.kind in kinds
        assert check.status in _STATUSES
        assert check.pos <= (after.ts, after.seq * 4 + 3)
    if pending_id is not None:
        # The issued call is still waiting, or its answer made at most one check (none when
        # it was refused), at the call's own position.
        ts, base = before.pending[pending_id]["pos"]
        made = [c for c in after.checks if c.pos in ((ts, base + 1), (ts, base + 3))]
        assert len(made) <= 1
        if pending_id in after.pending:
            assert made == []
    assert Evidence.from_json(after.to_json()) == after


def check_unreadable_line(before: Any, after: Any) -> None:
    """A line that is no JSON object is counted as bad and changes nothing else."""
    from taskcore.donegate.evidence import Evidence

    assert (after.lines, after.bad_lines) == (before.lines + 1, before.bad_lines + 1)
    after_json = Evidence.from_json(after.to_json())
    after_json.lines, after_json.bad_lines = before.lines, before.bad_lines
    assert after_json == before
