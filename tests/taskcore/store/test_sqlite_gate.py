"""The gate index store: its own file and component, records round-trip."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskcore.store.gate_api import GateFileRecord, GateSessionRecord
from taskcore.store.sqlite_gate import COMPONENT, GateIndexDatabase
from taskcore.store.storage import journal_components

pytestmark = pytest.mark.backend_only(
    "sqlite", reason="the done gate's index is a per-user SQLite cache, never the shared journal"
)


def session(key: str, repo: str, rung: int, last: int, sub: bool = False) -> GateSessionRecord:
    return GateSessionRecord(
        session_key=key,
        harness="codex",
        session_id=key.split(":")[1],
        parent_key="",
        subagent=sub,
        path=f"/s/{key}.jsonl",
        cwd=repo,
        repository=repo,
        first_ms=1,
        last_ms=last,
        rung=rung,
        rung_name="x",
        prompts=1,
        updated_at_ms=last,
    )


def test_not_part_of_the_journal() -> None:
    assert COMPONENT.name not in {c.name for c in journal_components()}


def test_records_round_trip_and_queries(tmp_path: Path) -> None:
    db = GateIndexDatabase(tmp_path / "g.sqlite")
    with db.write() as s:
        s.put_file(
            GateFileRecord(
                path="/a.jsonl",
                harness="codex",
                session_key="codex:a",
                offset=10,
                size=12,
                mtime_ns=5,
                head="h",
                state="{}",
                updated_at_ms=1,
            )
        )
        s.put_session(session("codex:a", "/r", 2, 10))
        s.put_session(session("codex:b", "/r", 3, 20))
        s.put_session(session("codex:c", "/r", 0, 30))
        s.put_session(session("codex:d", "/r", 3, 40, sub=True))
    with db.read() as s:
        assert s.get_file("/a.jsonl") is not None
        assert s.file_of_session("codex:a") is not None
        latest = s.latest_in_repository("/r")
        assert latest is not None
        assert latest.session_key == "codex:c"
        assert s.repository_history("/r", "codex:a") == (2, 2)
        assert [r.session_key for r in s.sessions(since_ms=25)] == ["codex:c", "codex:d"]
        assert s.counts() == (1, 4)
    db.close()


def test_a_verdict_is_kept_per_session_and_pruned_with_it(tmp_path: Path) -> None:
    db = GateIndexDatabase(tmp_path / "gate-index.sqlite")
    with db.write() as store:
        store.put_session(session("codex:old", "/r", 2, last=10))
        store.put_session(session("codex:new", "/r", 3, last=1000))
        store.put_verdict("codex:old", '{"rung":2}')
        store.put_verdict("codex:new", '{"rung":3}')
        store.put_verdict("codex:new", '{"rung":4}')
    with db.read() as store:
        assert store.get_verdict("codex:new") == '{"rung":4}'
        assert store.get_verdict("codex:none") is None
    with db.write() as store:
        store.prune(before_ms=500)
    with db.read() as store:
        assert store.get_verdict("codex:old") is None
        assert store.get_verdict("codex:new") == '{"rung":4}'
    db.close()
