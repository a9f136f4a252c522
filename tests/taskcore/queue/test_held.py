"""``agenttask.leases``: the caller's own live leases, soonest expiry first, with the last phase."""

from __future__ import annotations

import pytest
from taskcore import Actor, ErrorCode, Tier
from taskcore.limits import LEASE_DEFAULT_MS, LEASES_HELD_MAX
from taskcore.queue import held

from tests.taskcore.queue.support import ADMIN, MEMBER, OUTSIDER, START_MS, WORKER, WORKER2

LEASES = "agenttask.leases"


def test_nothing_held_is_an_empty_list_at_the_service_clock(door):
    assert door(WORKER, LEASES) == {"nowMs": START_MS, "leases": [], "more": False}


def test_a_claimed_task_is_listed_with_its_fence_expiry_and_payload(door):
    task_id = door.create(payload={"goal": "fix login"})["taskId"]
    claim = door(WORKER, "agenttask.claim", {"taskId": task_id, "leaseMs": 120_000})
    answer = door(WORKER, LEASES)
    [lease] = answer["leases"]
    assert lease["task"]["taskId"] == task_id
    assert lease["task"]["fence"] == claim["lease"]["fence"] == 1
    assert lease["task"]["lease"]["expiresAtMs"] == START_MS + 120_000
    assert lease["task"]["lease"]["owner"] == WORKER.token_id
    assert lease["task"]["payload"] == {"goal": "fix login"}
    assert lease["lastPhase"] is None
    assert answer["more"] is False


def test_only_the_callers_own_leases_are_listed_whatever_its_tier(door):
    mine = door.claimed(WORKER)["task"]["taskId"]
    door.claimed(WORKER2)
    door.claimed(ADMIN, door.create(ADMIN)["taskId"])
    assert [x["task"]["taskId"] for x in door(WORKER, LEASES)["leases"]] == [mine]
    # An admin sees its own leases here, not the workspace's.
    assert len(door(ADMIN, LEASES)["leases"]) == 1
    # Another workspace's admin holds nothing in this one.
    assert door(OUTSIDER, LEASES)["leases"] == []
    # A member token that claims holds its lease like an agent's.
    member_task = door.claimed(MEMBER)["task"]["taskId"]
    assert [x["task"]["taskId"] for x in door(MEMBER, LEASES)["leases"]] == [member_task]


def test_the_newest_phase_checkpoint_is_marked_without_its_state(door, clock):
    task_id = door.claimed(WORKER)["task"]["taskId"]
    for key in ("plan", "tests-written"):
        clock.advance(1_000)
        door(
            WORKER,
            "agenttask.checkpoint.write",
            {"taskId": task_id, "phaseKey": key, "state": {"big": "x" * 100}, "outputs": []},
        )
    [lease] = door(WORKER, LEASES)["leases"]
    assert lease["lastPhase"] == {
        "phaseIndex": 1,
        "phaseKey": "tests-written",
        "createdAtMs": START_MS + 2_000,
    }


def test_an_expired_lease_is_not_held_and_a_finished_task_is_gone(door, clock):
    done = door.claimed(WORKER)["task"]["taskId"]
    door(WORKER, "agenttask.checkpoint", {"taskId": done, "status": "DONE"})
    assert door(WORKER, LEASES)["leases"] == []
    door.claimed(WORKER)
    clock.advance(LEASE_DEFAULT_MS)  # expiry is read-time: the lease is gone at this instant
    assert door(WORKER, LEASES)["leases"] == []


def test_soonest_expiry_first_and_more_past_the_cap(door, clock):
    ids = []
    for i in range(LEASES_HELD_MAX + 1):
        task_id = door.create()["taskId"]
        # Later claims ask for shorter leases: the order is by expiry, not by claim.
        door(WORKER, "agenttask.claim", {"taskId": task_id, "leaseMs": 600_000 - i * 1_000})
        ids.append(task_id)
    answer = door(WORKER, LEASES)
    assert answer["more"] is True
    listed = [x["task"]["taskId"] for x in answer["leases"]]
    assert listed == list(reversed(ids))[:LEASES_HELD_MAX]
    expiries = [x["task"]["lease"]["expiresAtMs"] for x in answer["leases"]]
    assert expiries == sorted(expiries)


def test_leases_are_read_past_one_page_of_the_workspaces_leases(door, monkeypatch):
    monkeypatch.setattr(held, "QUEUE_LIST_MAX", 2)
    for _ in range(3):
        door.claimed(WORKER2)
    mine = [door.claimed(WORKER)["task"]["taskId"] for _ in range(2)]
    assert sorted(x["task"]["taskId"] for x in door(WORKER, LEASES)["leases"]) == sorted(mine)


def test_input_is_strict_and_every_call_is_audited(door, service):
    before = service.audit_count(operation=LEASES)
    door(WORKER, LEASES)
    assert door.refused(WORKER, LEASES, {"owner": "someone"}).code is ErrorCode.UNKNOWN_FIELD
    assert service.audit_count(operation=LEASES) == before + 2


def test_an_agent_of_autonomy_zero_may_read_its_leases(door):
    reader = Actor(token_id="r", workspace="w", tier=Tier.AGENT, autonomy=0)
    assert door(reader, LEASES)["leases"] == []


@pytest.mark.parametrize("verb", [LEASES])
def test_offered_over_mcp_to_agents_under_its_portable_name(service, verb):
    op = service.registry.get(verb)
    assert op.tool_name == "agenttask_leases"
    assert op.admits(Actor(token_id="a", workspace="w", tier=Tier.AGENT, autonomy=0))
