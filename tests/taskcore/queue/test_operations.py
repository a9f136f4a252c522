"""The registered operations: names, tiers, MCP exposure, scoping, audit, and a real drain."""

from __future__ import annotations

import multiprocessing
from collections import Counter

import attrs
import pytest
from taskcore import Actor, ErrorCode, FakeClock, RiskClass, Service, Surface, Tier
from taskcore.codec import wire_name
from taskcore.queue.operations import QUEUE_VERBS
from taskcore.queue.sched_ops import SCHED_VERBS
from taskcore.service import Registry, default_registry
from taskcore.store.storage import JOURNAL_FILENAME

from tests.taskcore.queue.support import ADMIN, MEMBER, OUTSIDER, START_MS, WORKER

OFF_MCP_VERBS = {"agenttask.list", "agenttask.checkpoint.prune"}
"""The seed's verbs only admins run (issue 19): everything else is an MCP tool."""
HELD = "agenttask.leases"  # ours: the caller's own leases (taskcore/queue/held.py)
FLOW_QUEUE = {"agenttask.createMany"}  # issue 28 (taskcore/queue/flow_operations.py)
FLOW_ADMIN = {"agenttask.limit.set", "agenttask.limit.list"}
MCP_VERBS = {*QUEUE_VERBS, "agenttask.gate.apply", HELD, *FLOW_QUEUE} - OFF_MCP_VERBS
ADMIN_VERBS = {
    "agenttask.verb.register",
    "agenttask.verb.list",
    "agenttask.gate.get",
    "agenttask.gate.approve",
    "agenttask.gate.reject",
    "agenttask.matter.create",
    "agenttask.matter.get",
    "agenttask.matter.grant",
    "agenttask.matter.revoke",
    *SCHED_VERBS,  # pause, resume, paused, requeueMany, cancelMany (issue 28)
}
FLOW_ADMIN_VERBS = ADMIN_VERBS | FLOW_ADMIN


def _queue_ops():
    return {op.name: op for op in default_registry() if op.name.startswith("agenttask.")}


# -- the registry -----------------------------------------------------------------------------


def test_the_nineteen_seed_verbs_and_gate_apply_are_registered_on_the_queue_surface():
    ops = _queue_ops()
    queue = {name for name, op in ops.items() if op.surface is Surface.QUEUE}
    assert queue == {*QUEUE_VERBS, "agenttask.gate.apply", HELD, *FLOW_QUEUE}
    assert len(QUEUE_VERBS) == 19


def test_mcp_is_set_for_every_verb_but_what_only_admins_do():
    ops = _queue_ops()
    assert {name for name, op in ops.items() if op.mcp} == MCP_VERBS
    assert all(ops[name].min_tier is Tier.ADMIN for name in OFF_MCP_VERBS)
    assert all(ops[name].min_tier is not Tier.ADMIN for name in MCP_VERBS)
    # the agent's worker loop: claim, heartbeat/finish, hand back, read its own task
    worker = ("claimNext", "claim", "checkpoint", "release", "get", "checkpoint.write")
    for verb in worker:
        assert ops[f"agenttask.{verb}"].min_tier is Tier.AGENT


def test_admin_verbs_are_admin_surface_and_admin_tier():
    ops = _queue_ops()
    admin = {name for name, op in ops.items() if op.surface is Surface.ADMIN}
    assert admin == FLOW_ADMIN_VERBS
    assert all(ops[name].min_tier is Tier.ADMIN and not ops[name].mcp for name in admin)


def test_tiers_and_risks_follow_the_documented_table():
    ops = _queue_ops()
    assert ops["agenttask.list"].min_tier is Tier.ADMIN
    assert ops["agenttask.feed"].min_tier is Tier.MEMBER
    assert ops["agenttask.feed"].risk is RiskClass.READ
    assert ops["agenttask.checkpoint.prune"].min_tier is Tier.ADMIN
    assert ops["agenttask.claimNext"].min_tier is Tier.AGENT
    assert ops["agenttask.cancel"].risk is RiskClass.SENSITIVE
    for name in ("agenttask.reorder", "agenttask.rankByObjective"):
        assert ops[name].risk is RiskClass.WRITE  # "NOT Sensitive"


def test_every_input_key_is_camel_case():
    for op in _queue_ops().values():
        for field in attrs.fields(op.input_type):
            assert "_" not in wire_name(field), (op.name, field.name)


def test_a_registry_can_hold_the_queue_alone():
    from taskcore.queue.operations import register

    registry = Registry()
    register(registry)
    assert set(registry.names()) == (
        set(QUEUE_VERBS) | ADMIN_VERBS - set(SCHED_VERBS) | {"agenttask.gate.apply"}
    )


# -- the front door around the verbs ------------------------------------------------------------


def test_every_call_is_audited_once_refusals_included(door, service):
    before = service.audit_count()
    task_id = door.create()["taskId"]
    door(WORKER, "agenttask.claimNext")
    door.refused(WORKER, "agenttask.list")  # tier
    door.refused(WORKER, "agenttask.claim", {"taskId": task_id})  # conflict
    door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id, "fence": 9})  # stale
    door.refused(WORKER, "agenttask.checkpoint", {"taskId": task_id, "nope": 1})  # decode
    door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": "DONE"})
    assert service.audit_count() == before + 7
    with service.storage.read() as tx:
        outcomes = [e.outcome for e in tx.audit.recent(workspace="w", limit=7)]
    assert outcomes[::-1] == [
        "OK",
        "OK",
        "FORBIDDEN",
        "CONFLICT",
        "STALE_FENCE",
        "UNKNOWN_FIELD",
        "OK",
    ]


def _foreign_calls(task_id: str) -> list[tuple[Actor, str, dict]]:
    t = {"taskId": task_id}
    return [
        (ADMIN, "agenttask.get", t),
        (WORKER, "agenttask.claim", t),
        (WORKER, "agenttask.checkpoint", t),
        (WORKER, "agenttask.release", t),
        (MEMBER, "agenttask.requeue", t),
        (MEMBER, "agenttask.cancel", t),
        (ADMIN, "agenttask.escalate", t),
        (MEMBER, "agenttask.reorder", {**t, "priority": 1}),
        (MEMBER, "agenttask.rankByObjective", t),
        (ADMIN, "agenttask.feed", t),
        (WORKER, "agenttask.checkpoint.write", {**t, "phaseKey": "p", "state": 1, "outputs": []}),
        (ADMIN, "agenttask.checkpoint.clear", t),
        (
            WORKER,
            "agenttask.ext.create",
            {"agentTaskId": task_id, "title": "t", "prompt": "p", "sourceType": "s"},
        ),
        (WORKER, "agenttask.ext.setWaiting", {"agentTaskId": task_id, "waiting": True}),
        (WORKER, "agenttask.ext.update", {"agentTaskId": task_id, "durationMs": 1}),
        (MEMBER, "agenttask.create", {"verb": "agent.run", "parentTaskId": task_id}),
    ]


@pytest.mark.parametrize("index", range(16))
def test_another_workspaces_task_is_indistinguishable_from_a_missing_one(door, index):
    foreign = door.create(OUTSIDER)["taskId"]
    door(
        OUTSIDER,
        "agenttask.ext.create",
        {"agentTaskId": foreign, "title": "t", "prompt": "p", "sourceType": "s"},
    )
    before = door.row(foreign)
    missing = "at_" + "9" * 32
    actor, verb, body = _foreign_calls(foreign)[index]
    _, _, missing_body = _foreign_calls(missing)[index]
    err_foreign = door.refused(actor, verb, body)
    err_missing = door.refused(actor, verb, missing_body)
    assert err_foreign.code is err_missing.code is ErrorCode.NOT_FOUND
    assert err_foreign.to_json() == {
        k: (v.replace(missing, foreign) if isinstance(v, str) else v)
        for k, v in err_missing.to_json().items()
    }
    assert door.row(foreign) == before


# -- eight processes drain one journal ----------------------------------------------------------


def _drain(data_dir: str, token: str) -> tuple[list[tuple[str, int]], int]:
    service = Service.open(data_dir, clock=FakeClock(START_MS), busy_timeout_ms=120_000)
    me = Actor(token_id=token, workspace="w", tier=Tier.AGENT, autonomy=1)
    done: list[tuple[str, int]] = []
    calls = 0
    try:
        while True:
            calls += 1
            claim = service.dispatch(me, "agenttask.claimNext", b"{}").json()
            if not claim["claimed"]:
                return done, calls
            task_id, fence = claim["task"]["taskId"], claim["lease"]["fence"]
            calls += 1
            body = {"taskId": task_id, "status": "DONE", "fence": fence}
            service.dispatch(me, "agenttask.checkpoint", body)
            done.append((task_id, fence))
    finally:
        service.close()


@pytest.mark.slow
def test_eight_processes_drain_two_thousand_tasks_exactly_once(tmp_path, backend):
    data_dir = tmp_path / "data"
    service = Service.open(data_dir, clock=FakeClock(START_MS), busy_timeout_ms=120_000)
    ids = {
        service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run"}).json()["taskId"]
        for _ in range(2000)
    }
    service.close()
    # The journal is the data dir's file on SQLite, the shared database on PostgreSQL.
    assert (data_dir / JOURNAL_FILENAME).exists() == (backend == "sqlite")
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        results = pool.starmap(_drain, [(str(data_dir), f"drainer-{n}") for n in range(8)])
    finished = [item for done, _ in results for item in done]
    calls = sum(c for _, c in results)
    counts = Counter(task_id for task_id, _ in finished)
    assert set(counts) == ids
    assert max(counts.values()) == 1  # every task finished exactly once
    assert {fence for _, fence in finished} == {1}  # nobody ever claimed a task twice
    service = Service.open(data_dir, clock=FakeClock(START_MS))
    with service.storage.read() as tx:
        for task_id in ids:
            row = tx.queue.get_task("w", task_id)
            assert (row.status, row.fence, row.lease_owner) == ("DONE", 1, None)
    assert service.audit_count(workspace="w") == len(ids) + calls
    assert service.audit_count(operation="agenttask.checkpoint") == len(ids)
    service.close()
