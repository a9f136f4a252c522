"""``workflow.<op>`` through the front door: registration, envelope, byte-exact retries."""

import json

import pytest
from taskcore.contract import CAPABILITY
from taskcore.errors import ErrorCode, TaskError
from taskcore.service import Door, Registry, Route, Service, ServiceConfig, Surface, TxMode
from taskcore.workflow.operations import register

from tests.taskcore.workflow.support import actor, commit

EXPECTED = {
    "cancel",
    "capabilities",
    "checkpoint",
    "claim",
    "heartbeat",
    "instructions",
    "next",
    "reconcile",
    "recovery",
    "reference",
    "requirements",
    "result",
    "status",
    "task",
}


@pytest.fixture
def service(world):
    registry = Registry()
    register(registry)
    svc = Service(
        world.storage,
        config=ServiceConfig(data_dir=world.data_dir),
        clock=world.clock,
        registry=registry,
    )
    return svc


ROUTE = Route(repository="widgets", profile="default")


def _call(service, operation, request, who=None):
    body = json.dumps({"operation": operation, "request": request})
    return service.call_workflow(who or actor(), body, route=ROUTE, door=Door.HTTP)


def test_every_workflow_operation_is_registered_for_every_door(service):
    ops = service.registry.select(surfaces=(Surface.WORKFLOW,))
    assert {op.local_name for op in ops} == EXPECTED
    for op in ops:
        assert op.route_required
        assert op.mcp
        # One transaction per call: the handler runs in the service's transaction; only the
        # two operations that read git have a phase before it.
        assert op.tx is TxMode.WRITE
        assert (op.prepare is not None) is (op.local_name in {"checkpoint", "reference"})


def test_operator_acts_are_operations_no_network_door_reaches(service):
    # They name filesystem paths (a work tree): only the local operator may call them.
    for op in service.registry:
        if any(w in op.name for w in ("register", "enroll", "revoke", "install", "policy")):
            assert op.surface is Surface.OPERATOR, op.name
            assert op.doors <= {Door.CLI, Door.IN_PROCESS}, op.name


def test_capabilities_lists_the_operations_sorted(service):
    answer = _call(service, "capabilities", {}).json()
    assert answer["capability"] == CAPABILITY
    assert answer["schema_version"] == 1
    assert answer["operation"] == "capabilities"
    assert answer["result"]["operations"] == sorted(EXPECTED)
    assert answer["result"]["supported_schema_versions"] == [1]


def test_checkpoint_then_claim_retry_is_byte_identical_through_the_service(world, service):
    cp = _call(
        service,
        "checkpoint",
        {"version": 1, "change_id": "c1", "commit": world.head, "context": ""},
    )
    task_id = cp.json()["result"]["tasks"][0]["task_id"]
    offered = _call(service, "next", {"version": 1, "change_id": "c1"}).json()["result"]
    assert offered["task"]["task_id"] == task_id
    claim = {
        "version": 1,
        "request_id": "claim-1",
        "task_id": task_id,
        "task_digest": offered["task_digest"],
        "execution_operation_id": "op-1",
        "requested_lease_ms": 60_000,
        "executor": None,
    }
    first = _call(service, "claim", claim)
    world.clock.advance(1_000)
    assert _call(service, "claim", claim).body == first.body
    claim["requested_lease_ms"] = 30_000
    with pytest.raises(TaskError) as info:
        _call(service, "claim", claim)
    assert info.value.code is ErrorCode.IDEMPOTENCY_CONFLICT


def test_checkpoint_of_a_commit_the_repository_lacks_is_not_found(service):
    with pytest.raises(TaskError) as info:
        _call(
            service,
            "checkpoint",
            {"version": 1, "change_id": "c1", "commit": "0" * 40, "context": ""},
        )
    assert info.value.code is ErrorCode.NOT_FOUND


def test_checkpoint_refuses_a_ref_name_instead_of_a_commit(service):
    with pytest.raises(TaskError) as info:
        _call(
            service,
            "checkpoint",
            {"version": 1, "change_id": "c1", "commit": "HEAD", "context": ""},
        )
    assert info.value.code is ErrorCode.INVALID_VALUE


def test_unknown_field_is_refused_strictly(service):
    with pytest.raises(TaskError) as info:
        _call(service, "next", {"version": 1, "change_id": "c1", "path": "/etc"})
    assert info.value.code is ErrorCode.UNKNOWN_FIELD


def test_every_call_is_audited_once_reads_included(world, service):
    before = service.audit_count()
    _call(service, "requirements", {"version": 1, "change_id": None})
    _call(service, "next", {"version": 1, "change_id": "c1"})
    assert service.audit_count() == before + 2


def test_checkpoint_of_a_new_commit_supersedes_through_the_service(world, service):
    first = _call(
        service,
        "checkpoint",
        {"version": 1, "change_id": "c1", "commit": world.head, "context": ""},
    )
    again = _call(
        service,
        "checkpoint",
        {"version": 1, "change_id": "c1", "commit": world.head, "context": ""},
    )
    assert again.json()["result"]["created"] is False
    new_head = commit(world.repo, {"src/app.py": "print('two')\n"})
    second = _call(
        service, "checkpoint", {"version": 1, "change_id": "c1", "commit": new_head, "context": ""}
    )
    result = second.json()["result"]
    assert result["created"] is True
    assert result["superseded_change_version"] == 1
    assert result["subject"]["change_version"] == 2
    assert first.json()["result"]["tasks"][0]["task_id"] != result["tasks"][0]["task_id"]


def _claimable(world, service):
    cp = _call(
        service,
        "checkpoint",
        {"version": 1, "change_id": "c1", "commit": world.head, "context": ""},
    )
    offered = _call(service, "next", {"version": 1, "change_id": "c1"}).json()["result"]
    assert offered["task"]["task_id"] == cp.json()["result"]["tasks"][0]["task_id"]
    return {
        "version": 1,
        "request_id": "claim-1",
        "task_id": offered["task"]["task_id"],
        "task_digest": offered["task_digest"],
        "execution_operation_id": "op-1",
        "requested_lease_ms": 60_000,
        "executor": None,
    }


def _claim_rows(world, task_id):
    with world.storage.read() as tx:
        task = tx.journal.get_task(task_id)
        return (
            task.state,
            tx.journal.attempts_of_task(task_id),
            tx.journal.get_request("acme", "agent1", "claim-1"),
            [t.event for t in tx.journal.transitions_of_task(task_id)],
            [(e.operation, e.outcome) for e in tx.audit.recent(workspace="acme", limit=50)],
        )


def test_a_claim_and_its_audit_event_commit_together(world, service, monkeypatch):
    # The failure comes after the claim wrote its attempt, task, idempotency and transition
    # rows, while the audit event is written in the same transaction: neither survives.
    claim = _claimable(world, service)
    real = service.audit.record

    def failing(tx, actor, workspace, name, digest, outcome, subject=None):
        if name == "workflow.claim" and outcome == "OK":
            assert tx.journal.attempts_of_task(claim["task_id"])  # the domain rows are there
            raise OSError("disk gone after the domain write")
        real(tx, actor, workspace, name, digest, outcome, subject)

    monkeypatch.setattr(service.audit, "record", failing)
    with pytest.raises(TaskError) as info:
        _call(service, "claim", claim)
    assert info.value.code is ErrorCode.INTERNAL
    state, attempts, request, events, audit = _claim_rows(world, claim["task_id"])
    assert state == "pending"
    assert attempts == ()
    assert request is None
    assert events == ["derive"]
    assert ("workflow.claim", "OK") not in audit
    assert audit.count(("workflow.claim", "INTERNAL")) == 1  # the refusal, in its own tx
    monkeypatch.undo()
    # Nothing was bound: the same request now claims, and its audit event is there with it.
    _call(service, "claim", claim)
    state, attempts, request, events, audit = _claim_rows(world, claim["task_id"])
    assert (state, len(attempts), request is not None) == ("claimed", 1, True)
    assert events == ["derive", "claim"]
    assert audit.count(("workflow.claim", "OK")) == 1


def test_a_claim_failing_after_its_rows_leaves_no_row_and_one_refusal(world, service, monkeypatch):
    from taskcore.evidence import forge

    claim = _claimable(world, service)

    def boom(*args, **kwargs):
        raise RuntimeError("the forge outbox row could not be written")

    monkeypatch.setattr(forge, "status_for_claim", boom)
    with pytest.raises(TaskError) as info:
        _call(service, "claim", claim)
    assert info.value.code is ErrorCode.INTERNAL
    state, attempts, request, events, audit = _claim_rows(world, claim["task_id"])
    assert (state, attempts, request, events) == ("pending", (), None, ["derive"])
    assert [a for a in audit if a[0] == "workflow.claim"] == [("workflow.claim", "INTERNAL")]


def test_threads_mixing_workflow_and_queue_calls_keep_one_audit_event_per_call(world):
    # Real threads through one service on a real journal file: workflow mutations take the
    # workspace guard, then the service's writer; queue calls take the writer only. Nothing
    # deadlocks, every call (refusals included) leaves exactly one audit event, and each
    # task's fences stay distinct and increasing.
    import random
    import threading

    from taskcore.actors import Tier
    from taskcore.codec import default_codec
    from taskcore.contract import MutationAction

    from tests.taskcore.workflow.support import claim_request, mutation, parse

    codec = default_codec()
    service = Service(
        world.storage, config=ServiceConfig(data_dir=world.data_dir), clock=world.clock
    )
    tasks = [world.task(world.checkpoint(f"c{n}"), "implement") for n in range(3)]
    conclusive = {
        ErrorCode.ILLEGAL_TRANSITION,
        ErrorCode.STALE_FENCE,
        ErrorCode.FORBIDDEN,
        ErrorCode.PRIOR_SUBJECT_UNRESOLVED,
        ErrorCode.NOT_FOUND,
    }
    calls = [0] * 8
    claims: list[int] = [0] * 8
    failures: list[BaseException] = []

    def workflow_worker(n: int) -> None:
        who = actor(f"agent{n}")
        rng = random.Random(n)

        def send(op, request):
            calls[n] += 1
            body = json.dumps({"operation": op, "request": codec.unstructure(request)})
            try:
                return parse(service.call_workflow(who, body, route=ROUTE).body)["result"]
            except TaskError as err:
                if err.code not in conclusive:
                    raise
                return None

        try:
            for i in range(12):
                task = rng.choice(tasks)
                claimed = send("claim", claim_request(task, f"cl-{n}-{i}", op=f"op-{n}-{i}"))
                send("next", {"version": 1, "change_id": "c0"})
                if claimed is None:
                    continue
                claims[n] += 1
                send("cancel", mutation(claimed, MutationAction.CANCEL, f"ca-{n}-{i}", reason="t"))
                send(
                    "reconcile",
                    mutation(claimed, MutationAction.RECONCILE, f"re-{n}-{i}", reason="t"),
                )
        except BaseException as exc:  # reported below
            failures.append(exc)

    def queue_worker(n: int) -> None:
        from taskcore.actors import Actor

        member = Actor(token_id=f"m{n}", workspace="acme", tier=Tier.MEMBER, autonomy=1)
        try:
            for _ in range(15):
                calls[n] += 1
                service.dispatch(member, "agenttask.create", {"verb": "agent.run"})
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=workflow_worker, args=(n,)) for n in range(6)]
    threads += [threading.Thread(target=queue_worker, args=(n,)) for n in (6, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(t.is_alive() for t in threads), "a worker never finished (deadlock?)"
    assert failures == []
    assert service.audit_count(workspace="acme") == sum(calls)
    assert sum(claims) > 0
    with world.storage.read() as tx:
        fences = [f.fence for t in tasks for f in tx.journal.attempts_of_task(t.task_id)]
        assert len(fences) == sum(claims)
        for task in tasks:
            own = [a.fence for a in tx.journal.attempts_of_task(task.task_id)]
            assert own == sorted(set(own))
