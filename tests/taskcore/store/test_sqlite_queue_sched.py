"""The scheduling part of the queue store: paused verbs, next due time, the claim fragments.

Runs on both backends (store/conftest.py): the fragments are shared by SQLite's probes and
PostgreSQL's SKIP LOCKED statement.
"""

from __future__ import annotations

import attrs
import pytest
from taskcore.store import open_storage
from taskcore.store.queue_api import PausedVerbRecord, TaskRecord


@pytest.fixture
def storage(tmp_path):
    s = open_storage(tmp_path / "data", create=True)
    yield s
    s.close()


def _task(task_id: str, **over) -> TaskRecord:
    base = TaskRecord(
        task_id=task_id, workspace="w", verb="agent.run", payload_json=None, status="QUEUED",
        priority=0, autonomy_ceiling=1, depth=0, parent_task_id=None, run_id=None,
        matter_id=None, matter_step_id=None, created_by="c", created_at_ms=100,
        updated_at_ms=100,
    )  # fmt: skip
    return attrs.evolve(base, **over)


def _best(q, now: int, verb: str | None = None, paused: tuple[str, ...] = ()) -> str | None:
    task = q.best_claimable("w", max_autonomy=3, autonomy=1, verb=verb, now_ms=now, paused=paused)
    return None if task is None else task.task_id


def test_a_scheduled_task_is_a_candidate_from_its_run_at(storage):
    with storage.write() as tx:
        q = tx.queue
        q.insert_task(_task("later", run_at_ms=500, priority=5))
        q.insert_task(_task("now"))
        assert _best(q, 499) == "now"
        assert _best(q, 500) == "later"
        assert _best(q, 499, verb="agent.run") == "now"


def test_paused_verbs_are_left_out_of_the_claim(storage):
    with storage.write() as tx:
        q = tx.queue
        q.insert_task(_task("run", priority=5))
        q.insert_task(_task("fix", verb="repo.fix"))
        assert _best(q, 0, paused=("agent.run",)) == "fix"
        assert _best(q, 0, paused=("agent.run", "repo.fix")) is None
        assert _best(q, 0) == "run"


def test_a_lapsed_lease_of_a_retrying_task_waits_its_delay_and_not_past_the_last_attempt(
    storage,
):
    leased = {
        "status": "LEASED",
        "lease_owner": "x",
        "lease_expires_at_ms": 100,
        "heartbeat_at_ms": 0,
        "first_leased_at_ms": 0,
        "fence": 1,
    }
    with storage.write() as tx:
        q = tx.queue
        q.insert_task(_task("retry", max_attempts=3, retry_delay_ms=50, **leased))
        q.insert_task(_task("last", max_attempts=2, attempt=2, **leased))
        q.insert_task(_task("plain", created_at_ms=200, **leased))
        assert _best(q, 99) is None
        assert _best(q, 100) == "plain"
        assert _best(q, 150) == "retry"
        ids = [
            t.task_id
            for t in q.list_tasks(
                "w",
                status="FAILED",
                matter_id=None,
                non_matter_only=False,
                after_seq=None,
                limit=10,
                now_ms=150,
            )
        ]
        assert ids == ["last"]


def test_next_due_is_the_earliest_lapse_or_run_at(storage):
    with storage.write() as tx:
        q = tx.queue
        assert q.next_due("w", 0) is None
        q.insert_task(_task("a", run_at_ms=900))
        assert q.next_due("w", 0) == 900
        assert q.next_due("w", 900) is None
        q.insert_task(
            _task(
                "b",
                status="LEASED",
                lease_owner="x",
                lease_expires_at_ms=300,
                heartbeat_at_ms=0,
                first_leased_at_ms=0,
                max_attempts=2,
                retry_delay_ms=200,
            )
        )
        assert q.next_due("w", 0) == 500
        assert q.next_due("w", 500) == 900
        assert q.next_due("other", 0) is None


def test_pause_resume_and_list_are_per_workspace_and_idempotent(storage):
    with storage.write() as tx:
        q = tx.queue
        rec = PausedVerbRecord(workspace="w", verb="agent.run", paused_by="a", paused_at_ms=1)
        assert q.pause_verb(rec) is True
        assert q.pause_verb(rec) is False
        assert q.is_paused("w", "agent.run") is True
        assert q.is_paused("other", "agent.run") is False
        assert q.paused_verbs("w") == (rec,)
        assert q.paused_verbs("other") == ()
        assert q.resume_verb("w", "agent.run") is True
        assert q.resume_verb("w", "agent.run") is False
        assert q.paused_verbs("w") == ()


def test_resuming_a_verb_signals_the_workspace(storage):
    from taskcore.store.wakeup import queue_topic

    topic = queue_topic("w")
    with storage.write() as tx:
        tx.queue.pause_verb(
            PausedVerbRecord(workspace="w", verb="agent.run", paused_by="a", paused_at_ms=1)
        )
    before = storage.wakeup.generation(topic)
    with storage.write() as tx:
        tx.queue.resume_verb("w", "agent.run")
    assert storage.wakeup.generation(topic) > before
