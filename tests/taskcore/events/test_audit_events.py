"""The audit table as the event log: each call's event names its task, how the call moved
the task's status (from the one place each state machine writes a task), and its trace."""

from __future__ import annotations

from taskcore import TaskError
from taskcore.callnote import current_note, note_status, noting, valid_traceparent
from taskcore.store.audit_api import AuditEvent

from tests.taskcore.queue.support import MEMBER, WORKER, WORKER2

TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _events(service, operation: str | None = None) -> list[AuditEvent]:
    with service.storage.read() as tx:
        rows = tx.audit.after(0, up_to=10**9, limit=1000, workspace="w")
    return [e for e in rows if operation is None or e.operation == operation]


def _moves(service) -> list[tuple[str, str | None, str | None, str | None]]:
    return [
        (e.operation, e.subject, e.status_before, e.status_after)
        for e in _events(service)
        if e.status_after is not None
    ]


def test_queue_transitions_report_their_status_before_and_after(door, service, clock):
    task_id = door.create()["taskId"]
    claim = door(WORKER, "agenttask.claim", {"taskId": task_id})
    fence = claim["lease"]["fence"]
    door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "fence": fence})  # a renewal
    door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "fence": fence, "status": "DONE"})
    door(MEMBER, "agenttask.get", {"taskId": task_id})  # a read moves nothing
    assert _moves(service) == [
        ("agenttask.create", task_id, None, "QUEUED"),
        ("agenttask.claim", task_id, "QUEUED", "LEASED"),
        ("agenttask.checkpoint", task_id, "LEASED", "LEASED"),
        ("agenttask.checkpoint", task_id, "LEASED", "DONE"),
    ]
    read = _events(service, "agenttask.get")[0]
    assert (read.subject, read.status_before, read.status_after) == (task_id, None, None)


def test_an_expired_lease_reads_queued_before_the_next_claim(door, service, clock):
    task_id = door.create()["taskId"]
    door(WORKER, "agenttask.claim", {"taskId": task_id, "leaseMs": 60_000})
    clock.advance(61_000)
    claimed = door(WORKER2, "agenttask.claimNext", {})  # no taskId in the input: the result has it
    assert claimed["task"]["taskId"] == task_id
    claim_next = _events(service, "agenttask.claimNext")[0]
    assert (claim_next.subject, claim_next.status_before, claim_next.status_after) == (
        task_id,
        "QUEUED",
        "LEASED",
    )


def test_a_refused_transition_reports_its_code_and_no_move(door, service):
    task_id = door.create()["taskId"]
    door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": "DONE"})
    refused = _events(service, "agenttask.checkpoint")[0]
    assert refused.outcome == "LEASE_NOT_HELD"
    assert (refused.subject, refused.status_before, refused.status_after) == (task_id, None, None)


def test_the_runaway_guard_keeps_its_requeue_and_reports_it(door, service, clock):
    task_id = door.create()["taskId"]
    fence = door(WORKER, "agenttask.claim", {"taskId": task_id})["lease"]["fence"]
    for _ in range(200):
        clock.advance(1000)
        try:
            door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "fence": fence})
        except TaskError:  # the guard's refusal, checked below
            break
    last = _events(service, "agenttask.checkpoint")[-1]
    assert last.outcome == "LEASE_RUNAWAY"
    assert (last.status_before, last.status_after) == ("LEASED", "QUEUED")


def test_a_callers_traceparent_is_stored_on_the_event_and_on_the_task(door, service):
    created = service.dispatch(
        MEMBER, "agenttask.create", {"verb": "agent.run"}, traceparent=TRACE
    ).json()
    task_id = created["taskId"]
    service.dispatch(WORKER, "agenttask.claim", {"taskId": task_id}, traceparent="garbage")
    create, claim = _events(service, "agenttask.create")[0], _events(service, "agenttask.claim")[0]
    assert create.traceparent == TRACE
    assert claim.traceparent is None  # an invalid header is ignored (W3C: a new trace)
    with service.storage.read() as tx:
        assert tx.audit.task_trace("w", task_id) == TRACE


def test_without_a_traceparent_nothing_is_traced(door, service):
    task_id = door.create()["taskId"]
    assert _events(service, "agenttask.create")[0].traceparent is None
    with service.storage.read() as tx:
        assert tx.audit.task_trace("w", task_id) is None


def test_a_note_is_per_call_and_nested_notes_come_back():
    assert current_note() is None
    with noting(TRACE) as outer:
        note_status("a", None, "QUEUED")
        with noting() as inner:
            note_status("b", "QUEUED", "LEASED")
            assert inner.task_ids() == ("b",)
        assert current_note() is outer
        assert outer.task_ids() == ("a",)
        assert outer.status_of(None) == (None, "QUEUED")
    assert current_note() is None


def test_traceparents_follow_the_w3c_rules():
    assert valid_traceparent(TRACE) == TRACE
    assert valid_traceparent(TRACE.upper()) is None
    assert valid_traceparent("01" + TRACE[2:]) is None  # only version 00 is understood
    assert valid_traceparent(TRACE[:-1]) is None
    assert valid_traceparent("00-" + "0" * 32 + TRACE[35:]) is None
