"""The retention sweep, driven by a fake clock: what goes, and what never does."""

from __future__ import annotations

import json
import time

import pytest
from taskcore import ErrorCode, FakeClock, Service, TaskError
from taskcore.retention import (
    DAY_MS,
    RetentionConfig,
    RetentionSchedule,
    load_retention_config,
    run_retention,
)
from taskcore.store.gate_api import GateSessionRecord
from taskcore.store.sqlite_gate import GateIndexDatabase

import tests.taskcore.collector.conftest as collector_fixtures
from tests.taskcore.collector.conftest import commit_file, recipe
from tests.taskcore.evidence.flow import Flow
from tests.taskcore.queue.support import ADMIN, START_MS, WORKER, Door

CONFIG = RetentionConfig()

# The collector's real-git fixtures (a repository, a collector state, an authority).
repo = collector_fixtures.repo
state = collector_fixtures.state
authority = collector_fixtures.authority


@pytest.fixture
def clock():
    return FakeClock(START_MS)


@pytest.fixture
def service(tmp_path, clock):
    svc = Service.open(tmp_path / "q", clock=clock)
    yield svc
    svc.close()


def test_audit_rows_older_than_their_age_go_and_newer_ones_stay(service, clock):
    door = Door(service, clock)
    door.create()
    clock.advance(91 * DAY_MS)
    door.create()
    report = run_retention(service, CONFIG, holder="t")
    assert report.ran
    assert report.deleted["audit"] == 1
    ops = [e["operation"] for e in door(ADMIN, "observe.audit")["events"]]
    assert ops == ["agenttask.create"]  # the newer call (the read itself is audited after)
    assert service.audit_count() == 3  # the new create, the read, the sweep's own event


def test_the_sweep_audits_itself_once_on_the_platform_workspace(service):
    before = service.audit_count()
    run_retention(service, CONFIG, holder="t")
    assert service.audit_count() == before + 1
    assert service.audit_count(workspace="", operation="retention.run") == 1


def test_phase_checkpoints_are_the_seeds_platform_prune(service, clock):
    door = Door(service, clock)
    claim = door.claimed()
    task_id = claim["task"]["taskId"]
    body = {"taskId": task_id, "phaseKey": "p", "state": {}, "outputs": [], "fence": 1}
    door(WORKER, "agenttask.checkpoint.write", body)
    clock.advance(29 * DAY_MS)
    assert run_retention(service, CONFIG, holder="t").deleted["checkpoints"] == 0
    clock.advance(2 * DAY_MS)
    assert run_retention(service, CONFIG, holder="t").deleted["checkpoints"] == 1
    assert door(ADMIN, "observe.task", {"taskId": task_id})["phases"] == []


def test_another_holder_with_a_live_lease_keeps_the_sweep_to_one_replica(service, clock):
    with service.write() as tx:
        assert tx.retention.acquire("retention", "other", now_ms=clock.now_ms(), lease_ms=60_000)
    assert run_retention(service, CONFIG, holder="me").ran is False
    clock.advance(60_001)  # the other holder died; its lease lapsed
    assert run_retention(service, CONFIG, holder="me").ran is True


def test_the_last_report_is_shown_in_the_stats(service, clock):
    door = Door(service, clock)
    door.create()
    door.create()  # the newest event is always kept (event ids are never handed out again)
    clock.advance(100 * DAY_MS)
    run_retention(service, CONFIG, holder="t")
    retention = door(ADMIN, "observe.stats")["retention"]
    assert retention["finishedAtMs"] == clock.now_ms()
    assert {"key": "audit", "count": 1} in retention["deleted"]


def test_done_gate_index_rows_of_idle_sessions_go(service, clock, tmp_path):
    path = tmp_path / "gate-index.sqlite"
    index = GateIndexDatabase(path)
    with index.write() as store:
        for key, last in (("old", START_MS - 100 * DAY_MS), ("new", START_MS)):
            store.put_session(
                GateSessionRecord(
                    session_key=key,
                    harness="codex",
                    session_id=key,
                    parent_key="",
                    subagent=False,
                    path="",
                    cwd="/r",
                    repository="/r",
                    first_ms=last,
                    last_ms=last,
                    rung=2,
                    rung_name="",
                    prompts=1,
                    updated_at_ms=last,
                )
            )
    index.close()
    report = run_retention(service, CONFIG, holder="t", gate_index=path)
    assert report.deleted["done_gate"] == 1
    index = GateIndexDatabase(path)
    with index.read() as store:
        assert store.get_session("old") is None
        assert store.get_session("new") is not None
    index.close()


# -- the workflow journal and the collector, for real ---------------------------------------------


@pytest.fixture
def failing(authority, state, tmp_path):
    f = Flow(authority, state, tmp_path, command=recipe("echo nope >&2; exit 1"))
    yield f
    f.service.close()


@pytest.fixture
def passing(authority, state, tmp_path):
    f = Flow(authority, state, tmp_path)
    yield f
    f.service.close()


def _claim_body(task):
    return {
        "version": 1,
        "request_id": "claim-fixed",
        "task_id": task["task_id"],
        "task_digest": task["task_digest"],
        "execution_operation_id": "op-fixed",
        "requested_lease_ms": 600_000,
    }


def test_an_idempotent_retry_inside_the_window_still_gets_its_outcome(failing):
    flow = failing
    _, _, envelope, view = flow.run_to_receipt()
    flow.clock.advance(29 * DAY_MS)
    report = run_retention(flow.service, CONFIG, holder="t")
    assert report.deleted["idempotency"] == 0
    assert flow.upload(envelope) == view  # byte for byte, 29 days later
    flow.clock.advance(2 * DAY_MS)
    assert run_retention(flow.service, CONFIG, holder="t").deleted["idempotency"] >= 2


def test_rows_of_a_task_still_claimed_are_kept_whatever_their_age(passing):
    flow = passing
    flow.checkpoint()
    q = flow.qualification()
    task = next(t for t in q["tasks"] if t["task_id"] == q["next"]["task_id"])
    first = flow.call("collector_claim", _claim_body(task))
    flow.clock.advance(400 * DAY_MS)
    report = run_retention(flow.service, CONFIG, holder="t")
    assert report.deleted["idempotency"] == 0
    assert report.deleted["transitions"] == 0
    assert flow.call("collector_claim", _claim_body(task)) == first


def test_transfer_bytes_of_a_receiptless_superseded_subject_go_and_the_row_stays(failing):
    flow = failing
    flow.run_to_receipt()
    commit_file(flow.authority.repo, "README.md", "edited\n")
    flow.checkpoint()  # the failed subject is superseded
    flow.clock.advance(31 * DAY_MS)
    report = run_retention(flow.service, CONFIG, holder="t")
    assert report.deleted["transfer_bytes"] == 1
    from taskcore.actors import Tier
    from taskcore.auth import issue_token

    member = issue_token(flow.service.storage, flow.clock, workspace="w1", tier=Tier.MEMBER).token
    subjects = flow.service.call(
        member,
        "observe.subjects",
        {"repositoryId": "acme", "profileId": "default", "changeId": "c1"},
    ).json()["subjects"]
    old = subjects[-1]["subjectSeq"]
    detail = flow.service.call(
        member, "observe.subject", {"repositoryId": "acme", "subjectSeq": old}
    ).json()
    transfer = detail["tasks"][0]["transfer"]
    assert transfer["bytesPruned"] is True
    assert transfer["outcome"] == "failed"
    assert transfer["failureExcerpt"] is None


def test_a_receipts_evidence_is_never_pruned(passing):
    flow = passing
    flow.run_to_receipt()
    receipt = flow.finalize()
    commit_file(flow.authority.repo, "README.md", "edited\n")
    flow.checkpoint()  # superseded, but it has a receipt
    flow.clock.advance(3650 * DAY_MS)
    report = run_retention(flow.service, CONFIG, holder="t")
    assert report.deleted["transfer_bytes"] == 0
    with flow.service.storage.read() as tx:
        (transfer,) = [t for seq in range(1, 3) for t in tx.collector.transfers_of_subject(seq)]
        assert transfer.pruned_at_ms is None
        assert tx.collector.envelope(transfer.transfer_digest, max_bytes=1 << 24)
    assert receipt


def test_a_current_subjects_transfer_bytes_are_kept(failing):
    flow = failing
    flow.run_to_receipt()
    flow.clock.advance(3650 * DAY_MS)
    assert run_retention(flow.service, CONFIG, holder="t").deleted["transfer_bytes"] == 0


# -- configuration and schedule --------------------------------------------------------------------


def test_the_config_file_is_strict_and_bounded(tmp_path):
    assert load_retention_config(tmp_path) == RetentionConfig()
    (tmp_path / "retention.json").write_text(json.dumps({"audit_days": 7}))
    assert load_retention_config(tmp_path).audit_days == 7
    (tmp_path / "retention.json").write_text(json.dumps({"audit_days": 0}))
    with pytest.raises(TaskError) as info:
        load_retention_config(tmp_path)
    assert info.value.code is ErrorCode.OUT_OF_BOUNDS
    (tmp_path / "retention.json").write_text(json.dumps({"audit_dayz": 7}))
    with pytest.raises(TaskError) as info:
        load_retention_config(tmp_path)
    assert info.value.code is ErrorCode.UNKNOWN_FIELD


def test_the_schedule_sweeps_repeatedly_and_stops(service):
    schedule = RetentionSchedule(service, CONFIG, interval_s=0.05, first_delay_s=0.0).start()
    deadline = time.monotonic() + 10
    while schedule.runs < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    schedule.stop()
    assert schedule.runs >= 2
    assert schedule.last is not None
    assert schedule.last.ran


def test_interval_zero_turns_the_schedule_off(service):
    schedule = RetentionSchedule(service, RetentionConfig(interval_minutes=0)).start()
    assert not schedule.enabled
    schedule.stop()
