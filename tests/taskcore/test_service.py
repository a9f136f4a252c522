import threading

import attrs
import pytest
from taskcore.actors import RiskClass, Tier
from taskcore.auth import issue_token, revoke_token
from taskcore.clock import FakeClock
from taskcore.errors import ErrorCode, TaskError
from taskcore.service import (
    CallContext,
    Door,
    Service,
    Surface,
)
from taskcore.store.audit_api import AuditEvent

from tests.taskcore.service_support import (
    AGENT,
    ROUTE,
    TextIn,
    code_of,
    demo_op,
    demo_registry,
)


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (tests/conftest.py)."""
    return backend


@pytest.fixture
def service(tmp_path):
    svc = Service.open(tmp_path, clock=FakeClock(), registry=demo_registry())
    yield svc
    svc.close()


def test_success_returns_the_encoded_result_and_audits_once(service):
    assert service.dispatch(AGENT, "demo.note", b'{"text": "hi"}').json() == {
        "text": "hi",
        "workspace": "w1",
    }
    assert service.audit_count(operation="demo.note") == 1


@pytest.mark.parametrize(
    ("name", "body", "actor", "code"),
    [
        ("demo.missing", b"{}", AGENT, ErrorCode.UNKNOWN_OPERATION),
        ("demo.admin", b'{"text": "x"}', AGENT, ErrorCode.FORBIDDEN),
        ("demo.destroy", b'{"text": "x"}', AGENT, ErrorCode.AUTONOMY_EXCEEDED),
        ("demo.note", b'{"text": 1}', AGENT, ErrorCode.WRONG_TYPE),
        ("demo.note", b'{"text": "x", "more": 1}', AGENT, ErrorCode.UNKNOWN_FIELD),
        ("demo.note", b"{", AGENT, ErrorCode.MALFORMED_JSON),
        ("demo.note", b'{"text": "boom"}', AGENT, ErrorCode.CONFLICT),
        ("demo.note", b'{"text": "bug"}', AGENT, ErrorCode.INTERNAL),
    ],
)
def test_every_refusal_is_audited_exactly_once(service, name, body, actor, code):
    assert code_of(service.dispatch, actor, name, body) is code
    assert service.audit_count(operation=name) == 1


def test_tier_and_autonomy_are_checked_before_the_body_is_decoded(service):
    assert code_of(service.dispatch, AGENT, "demo.admin", b"not json") is ErrorCode.FORBIDDEN
    assert code_of(service.dispatch, AGENT, "demo.destroy", b"{") is ErrorCode.AUTONOMY_EXCEEDED


def test_a_refused_handler_leaves_no_effect(service):
    code_of(service.dispatch, AGENT, "demo.note", b'{"text": "boom"}')
    code_of(service.dispatch, AGENT, "demo.note", b'{"text": "bug"}')
    # Only the two refusal events remain; the handler's own rows were rolled back.
    assert service.audit_count() == 2
    assert service.audit_count(operation="note") == 0


def test_a_handler_bug_reports_internal_without_its_message(service):
    with pytest.raises(TaskError) as info:
        service.dispatch(AGENT, "demo.note", b'{"text": "bug"}')
    assert "a handler bug" not in info.value.describe()
    assert "not applied" in info.value.describe()


def test_authentication_failures_are_audited_as_anonymous(service):
    assert code_of(service.call, None, "demo.note", b"{}") is ErrorCode.UNAUTHENTICATED
    assert code_of(service.call, "atk_nope", "demo.note", b"{}") is ErrorCode.UNAUTHENTICATED
    assert service.audit_count(workspace="") == 2


def test_a_token_revoked_after_authentication_is_refused_inside_the_transaction(service):
    issued = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT)
    actor = service.authenticate(issued.token)
    revoke_token(service.storage, service.clock, issued.record.token_id)
    assert (
        code_of(service.dispatch, actor, "demo.note", b'{"text": "x"}') is ErrorCode.TOKEN_REVOKED
    )
    assert service.audit_count(operation="note") == 0
    assert (
        code_of(service.call, issued.token, "demo.note", b'{"text": "x"}')
        is ErrorCode.TOKEN_REVOKED
    )


def test_the_workspace_comes_from_the_token_never_the_body(service):
    issued = issue_token(service.storage, service.clock, workspace="w2", tier=Tier.AGENT)
    assert service.call(issued.token, "demo.note", b'{"text": "x"}').json()["workspace"] == "w2"
    body = b'{"text": "x", "workspace": "w1"}'
    assert code_of(service.call, issued.token, "demo.note", body) is ErrorCode.UNKNOWN_FIELD


def test_surfaces_restrict_what_a_route_serves(service):
    code = code_of(service.dispatch, AGENT, "workflow.echo", b"{}", surfaces=[Surface.QUEUE])
    assert code is ErrorCode.UNKNOWN_OPERATION
    assert service.dispatch(AGENT, "demo.note", b'{"text": "a"}', surfaces=[Surface.QUEUE])


def test_mcp_calls_only_operations_offered_as_tools(service):
    assert service.dispatch(AGENT, "demo.tool", b'{"text": "a"}', door=Door.MCP).json() == {
        "ok": True
    }
    assert code_of(service.dispatch, AGENT, "demo.note", b'{"text": "a"}', door=Door.MCP) is (
        ErrorCode.NOT_FOUND
    )


def test_route_required_operations_refuse_a_call_without_a_route(service):
    assert (
        code_of(service.dispatch, AGENT, "workflow.echo", b'{"text": "a"}') is ErrorCode.BAD_INPUT
    )


def test_workflow_envelope_is_decoded_strictly_and_wrapped(service):
    body = service.call_workflow(
        AGENT, b'{"operation": "echo", "request": {"text": "t"}}', route=ROUTE
    ).json()
    assert body == {
        "capability": "agentscm.agent-workflow-tasks/v1",
        "schema_version": 1,
        "operation": "echo",
        "result": {"repository": "acme/widgets", "profile": "default", "text": "t"},
    }
    bad = [
        b'{"operation": "echo"}',
        b'{"operation": "echo", "request": {"text": "t"}, "actor": "x"}',
        b'{"operation": "echo", "request": []}',
        b'{"operation": "Echo!", "request": {}}',
        b"",
    ]
    codes = [code_of(service.call_workflow, AGENT, raw, route=ROUTE) for raw in bad]
    assert codes == [
        ErrorCode.MISSING_FIELD,
        ErrorCode.UNKNOWN_FIELD,
        ErrorCode.WRONG_TYPE,
        ErrorCode.INVALID_VALUE,
        ErrorCode.MALFORMED_JSON,
    ]
    assert service.audit_count(operation="workflow") == len(bad)


def test_workflow_envelope_cannot_reach_other_families(service):
    raw = b'{"operation": "note", "request": {"text": "t"}}'
    assert code_of(service.call_workflow, AGENT, raw, route=ROUTE) is ErrorCode.UNKNOWN_OPERATION


def test_raw_byte_operations_get_bytes_bounded_by_their_limit(service):
    assert service.dispatch(AGENT, "demo.raw", b"\x00\xff").json() == {"size": 2}
    assert code_of(service.dispatch, AGENT, "demo.raw", b"123456789") is ErrorCode.PAYLOAD_TOO_LARGE
    assert code_of(service.dispatch, AGENT, "demo.raw", {"a": 1}) is ErrorCode.BAD_INPUT
    up = service.call_workflow(AGENT, b"abc", route=ROUTE, operation="upload").json()
    assert up["operation"] == "upload"
    assert up["result"] == {"size": 3}
    envelope = b'{"operation": "upload", "request": {}}'
    assert code_of(service.call_workflow, AGENT, envelope, route=ROUTE) is ErrorCode.BAD_INPUT


def test_retained_raw_json_is_returned_byte_for_byte(service):
    assert service.dispatch(AGENT, "demo.retained", b'{"text": "a"}').body == b'{"b":1,"a":2}'
    wrapped = service.call_workflow(
        AGENT, b'{"operation": "echo", "request": {"text": "a"}}', route=ROUTE
    ).body
    assert wrapped.endswith(
        b',"result":{"repository":"acme/widgets","profile":"default","text":"a"}}'
    )


def test_own_transaction_handlers_run_outside_the_call_transaction(service):
    assert service.dispatch(AGENT, "demo.own", b'{"text": "a"}').json() == {"tx": True}
    assert service.audit_count(operation="demo.own") == 1


def test_transport_refusals_are_audited_and_attributed_when_the_token_is_good(service):
    issued = issue_token(service.storage, service.clock, workspace="w9", tier=Tier.AGENT)
    err = TaskError(ErrorCode.PAYLOAD_TOO_LARGE, "too big")
    assert service.refuse(issued.token, "demo.note", err) is err
    service.refuse("atk_bad", "demo.note", err)
    assert service.audit_count(workspace="w9") == 1
    assert service.audit_count(workspace="") == 1


def test_concurrent_calls_each_audit_once(service):
    def worker():
        for _ in range(20):
            service.dispatch(AGENT, "demo.note", b'{"text": "c"}')

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert service.audit_count(operation="demo.note") == 80


def test_commit_then_refuse_keeps_the_effect_and_audits_the_refusal_once(service):
    assert (
        code_of(service.dispatch, AGENT, "demo.keep", b'{"text": "kept"}')
        is ErrorCode.LEASE_RUNAWAY
    )
    assert service.audit_count(operation="note") == 1
    assert service.audit_count(operation="demo.keep") == 1
    with service.storage.read() as tx:
        outcomes = [e.outcome for e in tx.audit.recent(workspace="w1", limit=5)]
    assert "LEASE_RUNAWAY" in outcomes


def test_commit_then_refuse_from_an_own_transaction_handler(service):
    assert code_of(service.dispatch, AGENT, "demo.keep_own", b'{"text": "x"}') is ErrorCode.CONFLICT
    assert service.audit_count(operation="demo.keep_own") == 1


def test_unknown_operation_hints_name_the_listing_of_the_door(service):
    errors = {}
    for door in (Door.HTTP, Door.MCP, Door.CLI):
        with pytest.raises(TaskError) as caught:
            service.dispatch(AGENT, "demo.missing", b"{}", door=door)
        errors[door] = caught.value
    assert errors[Door.MCP].message == (
        "there is no tool 'demo.missing' here; list the tools with tools/list"
    )
    assert "agent-task call --list" in errors[Door.HTTP].message
    assert "agent-task call --list" in errors[Door.CLI].message
    assert all(e.code is ErrorCode.UNKNOWN_OPERATION for e in errors.values())


# -- rate limits and aggregated refusals (issue 10; admission itself: test_admission.py) -----


def test_anonymous_refusals_are_counted_in_memory_and_written_in_one_row(service):
    for _ in range(50):
        code_of(service.call, None, "demo.note", b"{}")
    with service.storage.read() as tx:
        assert tx.audit.recent(workspace="", limit=100) == ()  # nothing durable per call
    assert service.audit_count(workspace="") == 50  # counting flushes first
    with service.storage.read() as tx:
        (event,) = tx.audit.recent(workspace="", limit=100)
    assert (event.actor, event.outcome, event.calls) == ("anonymous", "UNAUTHENTICATED", 50)


def test_close_writes_what_is_still_counted(tmp_path):
    svc = Service.open(tmp_path, registry=demo_registry())
    svc.refuse("atk_bad", "demo.note", TaskError(ErrorCode.PAYLOAD_TOO_LARGE, "big"))
    svc.close()
    again = Service.open(tmp_path, registry=demo_registry())
    assert again.audit_count(workspace="") == 1
    again.close()


def _big(ctx: CallContext, req: TextIn) -> dict:
    ctx.transaction().audit.append(
        AuditEvent(
            at_ms=ctx.now_ms,
            actor="big",
            workspace=ctx.actor.workspace,
            operation="big",
            input_digest="0" * 64,
            outcome="x" * 200_000,
        )
    )
    return {}


@pytest.mark.backend_only(
    "sqlite",
    reason="fills the SQLite file with PRAGMA max_page_count; a full PostgreSQL disk maps to STORAGE_FULL in store/postgres",
)
def test_a_full_journal_is_storage_full_never_internal_and_the_refusal_is_kept(tmp_path):
    reg = demo_registry()
    reg.register(demo_op("demo.big", _big, risk=RiskClass.WRITE))
    svc = Service.open(tmp_path, registry=reg)
    try:
        with svc.write() as tx:
            pages = tx.conn.execute("PRAGMA page_count").fetchone()[0]
            # This thread's connection may not grow the file: every growth is SQLITE_FULL.
            tx.conn.execute(f"PRAGMA max_page_count = {pages}")
        for _ in range(3):
            with pytest.raises(TaskError) as err:
                svc.dispatch(AGENT, "demo.big", b'{"text": "x"}')
            assert err.value.code is ErrorCode.STORAGE_FULL
            assert err.value.retry_after is not None
        with svc.write() as tx:
            tx.conn.execute(f"PRAGMA max_page_count = {pages * 1000}")
        svc.dispatch(AGENT, "demo.big", b'{"text": "x"}')
        # Each refused call is accounted for, even those whose own audit row had no room.
        assert svc.audit_count(operation="demo.big") == 4
    finally:
        svc.close()


# -- an admitted call authenticates once, in its own transaction ------------------------------


def _events(service, token_id: str, after: int = 0) -> list[tuple]:
    """The audit events after seq ``after``, oldest first, with ``token_id`` spelled ``T``."""
    found = sorted((e for e in _raw_events(service) if e.seq > after), key=lambda e: e.seq)
    return [
        (
            "T" if e.actor == token_id else e.actor,
            e.workspace,
            e.operation,
            e.input_digest,
            e.outcome,
            e.subject,
            e.calls,
        )
        for e in found
    ]


def _raw_events(service) -> list:
    service.flush_refusals()
    with service.storage.read() as tx:
        return [e for ws in ("", "w1") for e in tx.audit.recent(workspace=ws, limit=100)]


def _answer(fn, *args, **kwargs) -> tuple:
    """What a caller sees: the body, or the error's code and message."""
    try:
        return ("OK", fn(*args, **kwargs).body)
    except TaskError as err:
        return (err.code, err.describe())


def _twice(tmp_path, run) -> tuple:
    """``run(service, token, token_id)`` on two fresh services, admitted and not: both sides."""
    sides = []
    for admitted in (False, True):
        svc = Service.open(tmp_path / str(admitted), clock=FakeClock(), registry=demo_registry())
        seen: list = []
        svc.observers.append(
            lambda e, seen=seen: seen.append((e.operation, e.door, e.code, e.seconds))
        )
        try:
            issued = issue_token(svc.storage, svc.clock, workspace="w1", tier=Tier.AGENT)
            # On PostgreSQL both services share one database: compare each side's own events.
            before = max((e.seq for e in _raw_events(svc)), default=0)
            answer = run(svc, issued.token, issued.record.token_id, admitted)
            sides.append((answer, _events(svc, issued.record.token_id, before), seen))
        finally:
            svc.close()
    return tuple(sides)


ADMITTED_CASES = [
    ("demo.note", b'{"text": "hi"}'),
    ("demo.note", b'{"text": 1}'),
    ("demo.note", b'{"text": "x", "more": 1}'),
    ("demo.note", b"{"),
    ("demo.note", b'{"text": "boom"}'),
    ("demo.note", b'{"text": "bug"}'),
    ("demo.keep", b'{"text": "kept"}'),
    ("demo.retained", b'{"text": "r"}'),
    ("demo.own", b'{"text": "o"}'),
    ("demo.keep_own", b'{"text": "o"}'),
    ("demo.admin", b'{"text": "x"}'),
    ("demo.destroy", b'{"text": "x"}'),
    ("demo.missing", b"{}"),
]


def _call(svc, token, name, body, admitted, **kw):
    actor = svc.authenticate(token) if admitted else None
    return _answer(svc.call, token, name, body, admitted=actor, **kw)


@pytest.mark.parametrize(("name", "body"), ADMITTED_CASES)
def test_an_admitted_call_answers_and_audits_as_an_authenticated_one(tmp_path, name, body):
    plain, admitted = _twice(
        tmp_path, lambda svc, token, _id, adm: _call(svc, token, name, body, adm)
    )
    assert admitted[:2] == plain[:2]
    assert [o[:3] for o in admitted[2]] == [o[:3] for o in plain[2]]


@pytest.mark.parametrize(("name", "body"), ADMITTED_CASES)
def test_a_token_revoked_between_admit_and_call_is_refused_as_before(tmp_path, name, body):
    def run(svc, token, token_id, adm):
        actor = svc.authenticate(token)  # what ``admit`` returns when it lets the call in
        revoke_token(svc.storage, svc.clock, token_id)
        return _answer(svc.call, token, name, body, admitted=actor if adm else None)

    plain, admitted = _twice(tmp_path, run)
    assert plain[0][0] is ErrorCode.TOKEN_REVOKED
    assert admitted[:2] == plain[:2]  # the same answer and the same audit events
    assert admitted[2] == plain[2]  # observed as a failed authentication (no time spent)


def test_an_admitted_call_of_a_write_operation_reads_no_token_outside_its_transaction(service):
    issued = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT)
    actor = service.admit(issued.token, "demo.note", door=Door.HTTP)
    reads: list[str | None] = []
    authenticate = service.authenticate
    service.authenticate = lambda bearer: reads.append(bearer) or authenticate(bearer)
    assert service.call(issued.token, "demo.note", b'{"text": "a"}', admitted=actor).json()
    assert reads == []
    # Not deferred: an operation managing its own transactions authenticates first.
    assert service.call(issued.token, "demo.own", b'{"text": "a"}', admitted=actor).json()
    assert reads == [issued.token]
    # A refusal found before the transaction asks again whether the token still holds.
    assert code_of(service.call, issued.token, "demo.note", b"{", admitted=actor)
    assert reads == [issued.token, issued.token]


def test_an_admitted_actor_must_be_the_bearers(service):
    issued = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT)
    other = attrs.evolve(service.authenticate(issued.token), name="someone else")
    assert (
        code_of(service.call, issued.token, "demo.note", b'{"text": "a"}', admitted=other)
        is ErrorCode.INTERNAL
    )
    assert service.audit_count(operation="note") == 0


def test_a_bearer_revoked_after_admission_is_refused_by_its_call_and_then_forgotten(service):
    issued = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT)
    service.admit(issued.token, "demo.note")
    revoke_token(service.storage, service.clock, issued.record.token_id)
    actor = service.admit_recent(issued.token, "demo.note")  # memory: the body may be read
    assert actor is not None
    code = code_of(service.call, issued.token, "demo.note", b'{"text": "a"}', admitted=actor)
    assert code is ErrorCode.TOKEN_REVOKED  # ...and the call refuses it, as before
    assert service.audit_count(operation="note") == 0
    assert service.admit_recent(issued.token, "demo.note") is None
    assert code_of(service.admit, issued.token, "demo.note") is ErrorCode.TOKEN_REVOKED


def test_a_revoked_bearer_is_forgotten_by_a_call_that_authenticates_first(service):
    # demo.own manages its own transactions: its call authenticates before dispatching.
    issued = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT)
    actor = service.admit(issued.token, "demo.own")
    revoke_token(service.storage, service.clock, issued.record.token_id)
    code = code_of(service.call, issued.token, "demo.own", b'{"text": "a"}', admitted=actor)
    assert code is ErrorCode.TOKEN_REVOKED
    assert service.admit_recent(issued.token, "demo.own") is None
