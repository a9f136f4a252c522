"""queue/flow_operations.py: agenttask.createMany, agenttask.limit.set / limit.list (both backends)."""

from __future__ import annotations

from taskcore import ErrorCode, RiskClass, Surface, Tier
from taskcore.limits import CREATE_MANY_MAX
from taskcore.queue.flow_operations import FLOW_VERBS
from taskcore.service import default_registry

from tests.taskcore.queue.support import ADMIN, MEMBER, WORKER

MANY = "agenttask.createMany"


def _count(door) -> int:
    return len(door(ADMIN, "agenttask.list", {"limit": 1000})["tasks"])


def test_the_flow_verbs_are_registered_with_their_tiers():
    ops = {op.name: op for op in default_registry() if op.name in FLOW_VERBS}
    assert set(ops) == set(FLOW_VERBS)
    many = ops[MANY]
    assert (many.min_tier, many.surface, many.mcp, many.risk) == (
        Tier.MEMBER,
        Surface.QUEUE,
        True,
        RiskClass.WRITE,
    )
    for name in ("agenttask.limit.set", "agenttask.limit.list"):
        assert (ops[name].min_tier, ops[name].surface, ops[name].mcp) == (
            Tier.ADMIN,
            Surface.ADMIN,
            False,
        )


def test_create_many_answers_each_create_in_order(door):
    answer = door(
        MEMBER,
        MANY,
        {
            "tasks": [
                {"verb": "agent.run", "payload": {"n": 1}},
                {"verb": "agent.run", "payload": {"n": 2}, "concurrencyKey": "k"},
                {"verb": "agent.run", "payload": {"n": 3}, "uniqueKey": "u"},
            ]
        },
    )
    tasks = answer["tasks"]
    assert [t["payload"] for t in tasks] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert [t["status"] for t in tasks] == ["QUEUED"] * 3
    assert tasks[1]["concurrencyKey"] == "k"
    assert tasks[2]["uniqueKey"] == "u"
    assert _count(door) == 3


def test_create_many_is_all_or_nothing_and_names_the_refused_entry(door, service):
    audited = service.audit_count()
    err = door.refused(
        MEMBER,
        MANY,
        {"tasks": [{"verb": "agent.run"}, {"verb": "agent.run"}, {"verb": "nope.verb"}]},
    )
    assert err.code is ErrorCode.INVALID_VALUE
    assert err.path == "$.tasks[2].verb"
    assert service.audit_count() == audited + 1  # the refusal only
    assert _count(door) == 0


def test_create_many_audits_each_task_created(door, service):
    answer = door(MEMBER, MANY, {"tasks": [{"verb": "agent.run"}, {"verb": "agent.run"}]})
    ids = [t["taskId"] for t in answer["tasks"]]
    with service.storage.read() as tx:
        events = tx.audit.after(0, up_to=10**9, limit=100)
    per_task = [e for e in events if e.operation == "agenttask.create"]
    assert [(e.subject, e.status_after, e.calls) for e in per_task] == [
        (ids[0], "QUEUED", 0),
        (ids[1], "QUEUED", 0),
    ]
    assert [e.outcome for e in events if e.operation == MANY] == ["OK"]
    assert service.audit_count() == len([e for e in events if e.calls])  # calls still add up


def test_create_many_dedups_within_the_batch_and_against_the_queue(door):
    live = door.create(MEMBER, uniqueKey="old")
    answer = door(
        MEMBER,
        MANY,
        {
            "tasks": [
                {"verb": "agent.run", "uniqueKey": "new"},
                {"verb": "agent.run", "uniqueKey": "new"},
                {"verb": "agent.run", "uniqueKey": "old"},
            ]
        },
    )
    first, again, old = answer["tasks"]
    assert (again["taskId"], again["deduplicated"]) == (first["taskId"], True)
    assert (old["taskId"], old["deduplicated"]) == (live["taskId"], True)
    assert _count(door) == 2


def test_create_many_entries_may_run_after_earlier_entries(door):
    parent = door.create(MEMBER)
    answer = door(MEMBER, MANY, {"tasks": [{"verb": "agent.run", "after": [parent["taskId"]]}]})
    assert answer["tasks"][0]["blockedBy"] == [parent["taskId"]]


def test_create_many_takes_one_to_the_bound(door):
    err = door.refused(MEMBER, MANY, {"tasks": []})
    assert err.path == "$.tasks"
    err = door.refused(MEMBER, MANY, {"tasks": [{"verb": "agent.run"}] * (CREATE_MANY_MAX + 1)})
    assert err.path == "$.tasks"
    answer = door(MEMBER, MANY, {"tasks": [{"verb": "agent.run"}] * CREATE_MANY_MAX})
    assert len(answer["tasks"]) == CREATE_MANY_MAX == _count(door)


def test_create_many_needs_the_member_tier(door):
    err = door.refused(WORKER, MANY, {"tasks": [{"verb": "agent.run"}]})
    assert err.code is ErrorCode.FORBIDDEN


def test_limit_list_is_empty_until_a_limit_is_set(door):
    assert door(ADMIN, "agenttask.limit.list", {}) == {"limits": [], "defaultMax": 1}
    door(ADMIN, "agenttask.limit.set", {"key": "b", "max": 3})
    door(ADMIN, "agenttask.limit.set", {"key": "a", "max": 1})
    door(ADMIN, "agenttask.limit.set", {"key": "b", "max": 4})
    listed = door(ADMIN, "agenttask.limit.list", {})["limits"]
    assert [(x["key"], x["max"]) for x in listed] == [("a", 1), ("b", 4)]
