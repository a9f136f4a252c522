"""The event stream's core: what a token sees, in which order, from where, within which bounds.

The transport (``GET /v1/events``) is tested in tests/taskhttp/test_events.py; replicas in
tests/replicas/test_events.py.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from taskcore import Door, ErrorCode, TaskError, Tier
from taskcore.auth import issue_token, revoke_token
from taskcore.events.log import Horizon
from taskcore.events.stream import event_frames, hub_of, open_events
from taskcore.limits import EVENTS_BATCH_MAX
from taskcore.store.audit_api import AuditEvent


def _token(service, tier: Tier, workspace: str = "w", autonomy: int = 2) -> str:
    return issue_token(
        service.storage, service.clock, workspace=workspace, tier=tier, autonomy=autonomy, name=""
    ).token


@pytest.fixture
def tokens(service):
    return {
        "admin": _token(service, Tier.ADMIN),
        "member": _token(service, Tier.MEMBER),
        "member2": _token(service, Tier.MEMBER),
        "agent": _token(service, Tier.AGENT, autonomy=1),
        "outsider": _token(service, Tier.ADMIN, workspace="other"),
    }


def _refused(*args, **kwargs) -> pytest.ExceptionInfo[TaskError]:
    with pytest.raises(TaskError) as info, open_events(*args, **kwargs):
        pass
    return info


def _ops(events) -> list[str]:
    return [e.operation for e in events]


def _drain(stream) -> list:
    """Every event the stream has to send now.

    On PostgreSQL the horizon may wait a moment for transactions open elsewhere in the
    cluster (it never reads past a gap one of them may fill): wait until it has passed the
    newest event, then read to the end.
    """
    with stream.service.storage.read() as tx:
        newest = tx.audit.newest_seq()
    deadline = time.monotonic() + 10
    while (stream.hub.horizon.advance() or 0) < newest:
        assert time.monotonic() < deadline, "the horizon did not reach the newest event"
        time.sleep(0.01)
    out = []
    while batch := stream.next_batch():
        out += batch
    return out


def test_an_admin_sees_every_event_of_its_workspace_in_order_and_nothing_else(service, tokens):
    with open_events(service, tokens["admin"], door=Door.HTTP) as stream:
        task_id = service.call(tokens["member"], "agenttask.create", {"verb": "agent.run"}).json()[
            "taskId"
        ]
        service.call(tokens["agent"], "agenttask.claim", {"taskId": task_id})
        service.call(tokens["outsider"], "agenttask.create", {"verb": "agent.run"})
        events = _drain(stream)
    assert _ops(events) == ["observe.events", "agenttask.create", "agenttask.claim"]
    ids = [e.seq for e in events]
    assert ids == sorted(ids)
    assert events[2].subject == task_id
    assert (events[2].status_before, events[2].status_after) == ("QUEUED", "LEASED")


def test_a_member_sees_its_own_calls_and_the_tasks_it_created(service, tokens):
    mine = service.call(tokens["member"], "agenttask.create", {"verb": "agent.run"}).json()
    theirs = service.call(tokens["member2"], "agenttask.create", {"verb": "agent.run"}).json()
    with open_events(service, tokens["member"], door=Door.HTTP) as stream:
        service.call(tokens["agent"], "agenttask.claim", {"taskId": mine["taskId"]})
        service.call(tokens["agent"], "agenttask.claim", {"taskId": theirs["taskId"]})
        service.call(tokens["member2"], "observe.whoami", {})
        service.call(tokens["member"], "agenttask.get", {"taskId": mine["taskId"]})
        events = _drain(stream)
    assert [(e.operation, e.subject) for e in events] == [
        ("observe.events", None),
        ("agenttask.claim", mine["taskId"]),  # its task, claimed by someone else
        ("agenttask.get", mine["taskId"]),  # its own call
    ]


def test_filters_by_operation_pattern_and_by_task(service, tokens):
    first = service.call(tokens["member"], "agenttask.create", {"verb": "agent.run"}).json()
    with (
        open_events(service, tokens["admin"], operations=("agenttask.cl*",)) as claims,
        open_events(service, tokens["admin"], task_id=first["taskId"]) as one,
    ):
        second = service.call(tokens["member"], "agenttask.create", {"verb": "agent.run"}).json()
        for task in (first, second):
            service.call(tokens["agent"], "agenttask.claim", {"taskId": task["taskId"]})
        assert [e.subject for e in _drain(claims)] == [first["taskId"], second["taskId"]]
        # Its own opening named the task (it is that call's subject), then the claim.
        assert _ops(_drain(one)) == ["observe.events", "agenttask.claim"]
    info = _refused(service, tokens["admin"], operations=("bad pattern!",))
    assert info.value.code is ErrorCode.INVALID_VALUE


def test_resuming_after_an_id_gets_exactly_the_events_after_it(service, tokens):
    with open_events(service, tokens["admin"]) as stream:
        for _ in range(5):
            service.call(tokens["member"], "agenttask.create", {"verb": "agent.run"})
        seen = _drain(stream)
    cut = seen[2].seq
    with open_events(service, tokens["admin"], last_event_id=cut) as resumed:
        again = _drain(resumed)
    assert [e.seq for e in again][: len(seen) - 3] == [e.seq for e in seen[3:]]
    assert _ops(again)[len(seen) - 3 :] == ["observe.events"]  # then its own opening


def test_an_id_past_retention_is_gone_naming_the_oldest_held(service, tokens, clock):
    with open_events(service, tokens["admin"]) as stream:
        for _ in range(3):
            service.call(tokens["member"], "agenttask.create", {"verb": "agent.run"})
        seen = _drain(stream)
    clock.advance(1000)
    service.call(tokens["member"], "observe.whoami", {})
    with service.storage.write() as tx:
        tx.audit.prune(clock.now_ms(), limit=1000)
        oldest = tx.audit.oldest_seq()
    info = _refused(service, tokens["admin"], last_event_id=seen[0].seq)
    assert info.value.code is ErrorCode.EVENTS_EXPIRED
    assert info.value.code.kind.http_status == 410
    assert info.value.details == {"oldestId": oldest}
    info = _refused(service, tokens["admin"], last_event_id=10**9)
    assert info.value.code is ErrorCode.BAD_INPUT
    with service.storage.read() as tx:
        refused = [
            e.outcome
            for e in tx.audit.after(0, up_to=10**9, limit=1000, workspace="w")
            if e.operation == "observe.events"
        ]
    assert refused[-2:] == ["EVENTS_EXPIRED", "BAD_INPUT"]  # each refusal audited


def test_streams_are_bounded_per_token_and_per_server(service, tokens):
    hub = hub_of(service)
    per_token, total = hub.slots.per_token, hub.slots.total
    hub.slots.per_token, hub.slots.total = 2, 3
    try:
        with open_events(service, tokens["admin"]), open_events(service, tokens["admin"]):
            info = _refused(service, tokens["admin"])
            assert info.value.code is ErrorCode.RATE_LIMITED
            with open_events(service, tokens["member"]):
                info = _refused(service, tokens["member2"])
                assert info.value.code is ErrorCode.OVERLOADED
        assert hub.slots.count == 0
        with open_events(service, tokens["admin"]):  # slots come back when streams close
            assert hub.slots.count == 1
    finally:
        hub.slots.per_token, hub.slots.total = per_token, total


def test_a_batch_is_bounded_and_a_stalled_consumer_stops_the_reads(service, tokens):
    with service.storage.write() as tx:
        for _ in range(3 * EVENTS_BATCH_MAX):
            tx.audit.append(
                AuditEvent(
                    at_ms=1, actor="x", workspace="w", operation="demo.op", input_digest="d",
                    outcome="OK",
                )
            )  # fmt: skip

    async def consume(stream, chunks: int) -> int:
        frames = event_frames(stream, lambda fn: asyncio.to_thread(fn))
        got = 0
        async for chunk in frames:
            got += chunk.count(b"\nid: ") + chunk.startswith(b"id: ")
            chunks -= 1
            if chunks == 0:
                break  # the consumer stops taking data
        await frames.aclose()
        return got

    with open_events(service, tokens["admin"], last_event_id=0) as stream:
        start = stream.position
        got = asyncio.run(consume(stream, 2))  # "retry:" then one batch of events
        assert got == EVENTS_BATCH_MAX
        # Nothing was read past what was handed over: a slow reader holds one batch.
        assert stream.position - start <= EVENTS_BATCH_MAX + 5


def test_a_revoked_tokens_stream_ends(service, tokens):
    hub = hub_of(service)
    hub.heartbeat_s, hub.poll_s = 0.05, 0.05

    async def run(stream) -> str:
        try:
            async for _ in event_frames(stream, lambda fn: asyncio.to_thread(fn)):
                pass
        except TaskError as err:
            return err.code.value
        return "ended"

    with open_events(service, tokens["member"]) as stream:
        revoke_token(service.storage, service.clock, stream.actor.token_id)
        assert asyncio.run(asyncio.wait_for(run(stream), 5)) == "TOKEN_REVOKED"


def test_heartbeats_while_nothing_happens_and_a_commit_wakes_the_stream(service, tokens, backend):
    hub = hub_of(service)
    # On SQLite only the wake-up can deliver the event in time. On PostgreSQL the horizon may
    # also wait for a transaction open elsewhere in the cluster, whose end no commit of this
    # process signals: the poll covers that.
    hub.heartbeat_s, hub.poll_s = 0.1, (30.0 if backend == "sqlite" else 0.2)

    async def event(frames) -> bytes:
        while (chunk := await asyncio.wait_for(anext(frames), 10)) == b": keepalive\n\n":
            pass  # (on PostgreSQL the horizon may wait for a transaction open elsewhere)
        return chunk

    async def main() -> list[bytes]:
        chunks: list[bytes] = []
        with open_events(service, tokens["admin"]) as stream:
            frames = event_frames(stream, lambda fn: asyncio.to_thread(fn))
            chunks.append(await anext(frames))  # retry:
            chunks.append(await event(frames))  # its own opening event
            chunks.append(await asyncio.wait_for(anext(frames), 2))  # a heartbeat
            await asyncio.to_thread(
                service.call, tokens["member"], "agenttask.create", {"verb": "agent.run"}
            )
            chunks.append(await event(frames))
            await frames.aclose()
        return chunks

    retry, opened, beat, created = asyncio.run(main())
    assert retry == b"retry: 3000\n\n"
    assert b"event: observe.events" in opened
    assert beat == b": keepalive\n\n"
    lines = created.decode().splitlines()
    assert lines[1] == "event: agenttask.create"
    data = json.loads(lines[2].removeprefix("data: "))
    assert set(data) == {
        "id", "operation", "workspace", "actor", "at", "atMs", "taskId", "statusBefore",
        "statusAfter", "outcome", "errorCode", "calls", "traceparent",
    }  # fmt: skip
    assert lines[0] == f"id: {data['id']}"
    assert (data["statusBefore"], data["statusAfter"]) == (None, "QUEUED")


def test_events_never_carry_payloads_or_tokens(service, tokens):
    secret = "s3cr3t-payload-text"
    with open_events(service, tokens["admin"]) as stream:
        service.call(
            tokens["member"], "agenttask.create", {"verb": "agent.run", "payload": {"x": secret}}
        )
        frames = b"".join(stream.frame(e) for e in _drain(stream))
    assert secret.encode() not in frames
    for token in tokens.values():
        assert token.encode() not in frames
        assert token.rsplit("_", 1)[1].encode() not in frames


@pytest.mark.backend_only("sqlite", reason="one writer: event ids are drawn in commit order")
def test_the_horizon_on_sqlite_is_the_newest_event(service):
    horizon = Horizon(service.storage)
    with service.storage.read() as tx:
        newest = tx.audit.newest_seq()
    assert horizon.advance() == newest


def _open_writer(url: str):
    """A transaction that holds an event id and has not committed (a shared writer's case)."""
    import psycopg

    conn = psycopg.connect(url)
    conn.execute("SELECT pg_current_xact_id()")  # the xid first, as the store's insert does
    seq = conn.execute(
        "INSERT INTO audit_event (seq, at_ms, actor, workspace, operation, input_digest, outcome)"
        " VALUES (nextval('audit_event_seq_seq'), 1, 'slow', 'w', 'slow.op', 'd', 'OK')"
        " RETURNING seq"
    ).fetchone()[0]
    return conn, seq


@pytest.mark.backend_only("postgresql", reason="ids from a sequence commit out of order there")
def test_the_horizon_waits_at_a_gap_an_open_transaction_may_fill(service, tokens, postgres_url):
    horizon = Horizon(service.storage)
    deadline = time.monotonic() + 10
    while horizon.advance() is None:  # a transaction open elsewhere in the cluster ends
        assert time.monotonic() < deadline
    slow, held = _open_writer(postgres_url)
    try:
        service.call(tokens["member"], "agenttask.create", {"verb": "agent.run"})
        with service.storage.read() as tx:
            newest = tx.audit.newest_seq()
        assert newest > held
        for _ in range(5):
            assert horizon.advance() == held - 1  # never past the open writer's id
        slow.commit()
    finally:
        slow.close()
    deadline = time.monotonic() + 10
    while horizon.advance() != newest:
        assert time.monotonic() < deadline
    # A writer that rolls back leaves a gap for good: the horizon passes it once it ended.
    dead, gap = _open_writer(postgres_url)
    dead.rollback()
    dead.close()
    service.call(tokens["member"], "agenttask.create", {"verb": "agent.run"})
    with service.storage.read() as tx:
        newest = tx.audit.newest_seq()
        assert [e.seq for e in tx.audit.after(gap - 1, up_to=newest, limit=10)] == [newest]
    deadline = time.monotonic() + 10
    while horizon.advance() != newest:
        assert time.monotonic() < deadline
