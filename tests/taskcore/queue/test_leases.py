"""Read-time expiry, the fence, the holder guard, the runaway guard."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore import Actor, ErrorCode, TaskError, Tier
from taskcore.limits import LEASE_WALLCLOCK_CAP_SECONDS, MAX_LEASE_EXTENSIONS
from taskcore.queue.leases import (
    cleared_lease,
    effective_status,
    granted_lease,
    lease_length,
    renewed_lease,
    require_holder,
    runaway_reason,
)
from taskcore.queue.transitions import TaskAction
from taskcore.queue.types import TaskStatus
from taskcore.store.queue_api import TaskRecord

HOLDER = Actor(token_id="holder", workspace="w", tier=Tier.AGENT, autonomy=2)
OTHER = Actor(token_id="other", workspace="w", tier=Tier.AGENT, autonomy=1)


def _queued() -> TaskRecord:
    return TaskRecord(
        task_id="at_1",
        workspace="w",
        verb="agent.run",
        payload_json=None,
        status="QUEUED",
        priority=0,
        autonomy_ceiling=3,
        depth=0,
        parent_task_id=None,
        run_id=None,
        matter_id=None,
        matter_step_id=None,
        created_by="c",
        created_at_ms=0,
        updated_at_ms=0,
    )


def _leased(now: int = 1000, lease: int = 500) -> TaskRecord:
    return granted_lease(_queued(), HOLDER, now, lease)


def _code(fn, *args) -> ErrorCode | None:
    try:
        fn(*args)
    except TaskError as err:
        return err.code
    return None


def test_a_lease_is_live_until_but_not_at_its_expiry():
    task = _leased(now=1000, lease=500)
    assert effective_status(task, 1499) is TaskStatus.LEASED
    assert effective_status(task, 1500) is TaskStatus.QUEUED


def test_a_claim_grows_the_fence_and_starts_a_new_budget():
    task = attrs.evolve(_leased(), lease_extensions=3)
    again = granted_lease(cleared_lease(task, TaskStatus.QUEUED, 2000), OTHER, 2000, 100)
    assert again.fence == task.fence + 1
    assert (again.lease_extensions, again.first_leased_at_ms) == (0, 2000)
    assert again.exercised_autonomy == OTHER.autonomy


def test_a_renewal_keeps_the_length_the_claim_granted():
    task = _leased(now=1000, lease=700)
    assert lease_length(task, 5) == 700
    renewed = renewed_lease(task, 1300, 5)
    assert (renewed.lease_expires_at_ms, renewed.heartbeat_at_ms) == (2000, 1300)
    assert renewed.lease_extensions == 1
    assert lease_length(_queued(), 5) == 5


@given(st.sampled_from(list(TaskStatus)), st.integers(0, 10**12))
def test_clearing_a_lease_sets_finished_at_exactly_for_terminal_statuses(status, now):
    cleared = cleared_lease(_leased(), status, now)
    assert (cleared.finished_at_ms is not None) is status.terminal
    assert (cleared.lease_owner, cleared.lease_expires_at_ms, cleared.first_leased_at_ms) == (
        None,
        None,
        None,
    )


def test_the_holder_guard_checks_fence_then_status_then_owner():
    task = _leased(now=1000, lease=500)
    guard = require_holder
    assert _code(guard, task, HOLDER, 1200, 1, TaskAction.RENEW) is None
    assert _code(guard, task, HOLDER, 1200, 2, TaskAction.RENEW) is ErrorCode.STALE_FENCE
    assert _code(guard, task, OTHER, 1200, None, TaskAction.RENEW) is ErrorCode.LEASE_NOT_HELD
    assert _code(guard, task, HOLDER, 1500, None, TaskAction.RENEW) is ErrorCode.LEASE_NOT_HELD
    done = cleared_lease(task, TaskStatus.DONE, 1200)
    assert _code(guard, done, HOLDER, 1300, None, TaskAction.RENEW) is ErrorCode.ILLEGAL_TRANSITION
    assert _code(guard, done, HOLDER, 1300, 9, TaskAction.RENEW) is ErrorCode.STALE_FENCE
    escalated = cleared_lease(task, TaskStatus.ESCALATED, 1200)
    assert _code(guard, escalated, HOLDER, 1300, None, TaskAction.RENEW) is (
        ErrorCode.LEASE_NOT_HELD
    )


@pytest.mark.parametrize("extensions", range(MAX_LEASE_EXTENSIONS + 2))
def test_the_runaway_guard_allows_four_extensions(extensions):
    task = attrs.evolve(_leased(now=0), lease_extensions=extensions)
    tripped = runaway_reason(task, 1) is not None
    assert tripped is (extensions >= MAX_LEASE_EXTENSIONS)


def test_the_runaway_guard_trips_past_the_wallclock_cap():
    task = _leased(now=0)
    cap = LEASE_WALLCLOCK_CAP_SECONDS * 1000
    assert runaway_reason(task, cap) is None
    assert "cap" in runaway_reason(task, cap + 1)
