"""Ids, the one not-found, bounded JSON; read-time expiry, the fence, the holder guard."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore import Actor, ErrorCode, TaskError, Tier
from taskcore.queue.common import (
    QueueCall,
    cleared_lease,
    effective_status,
    json_text,
    new_id,
    parse_json_text,
    require_holder,
    task_not_found,
)
from taskcore.queue.transitions import TaskAction
from taskcore.queue.types import TaskStatus

from tests.taskcore.queue.test_leases import HOLDER, OTHER, _code, _leased

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def test_ids_are_prefixed_random_and_fit_the_id_pattern():
    ids = {new_id("at") for _ in range(100)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"at_[0-9a-f]{32}", i) for i in ids)


def test_not_found_differs_only_by_the_id_the_caller_sent():
    a, b = task_not_found("at_a"), task_not_found("at_b")
    assert a.code is b.code is ErrorCode.NOT_FOUND
    assert a.to_json()["error"].replace("at_a", "X") == b.to_json()["error"].replace("at_b", "X")


@given(json_values)
def test_json_text_round_trips(value):
    import orjson  # noqa: F401 - loaded, as a service loads it: the fast read is live

    text = json_text(value, max_bytes=10**6, path="$.x")
    assert parse_json_text(text) == value
    assert parse_json_text(text) == json.loads(text)
    assert parse_json_text("[18446744073709551616]") == [2**64]  # beyond orjson: json reads it


def test_json_text_refuses_one_byte_over_the_bound():
    assert json_text("ab", max_bytes=4, path="$.p") == '"ab"'
    with pytest.raises(TaskError) as info:
        json_text("abc", max_bytes=4, path="$.p")
    assert (info.value.code, info.value.path) == (ErrorCode.PAYLOAD_TOO_LARGE, "$.p")


def test_a_claim_gets_what_it_asks_for_up_to_the_cap():
    call = QueueCall(
        tx=None,  # type: ignore[arg-type] - lease arithmetic needs no transaction
        actor=Actor(token_id="t", workspace="w", tier=Tier.AGENT),
        now_ms=0,
        lease_ms=300,
        lease_max_ms=1000,
    )
    assert (call.lease_length(None), call.lease_length(600), call.lease_length(5000)) == (
        300,
        600,
        1000,
    )


def test_a_lease_is_live_until_but_not_at_its_expiry():
    task = _leased(now=1000, lease=500)
    assert effective_status(task, 1499) is TaskStatus.LEASED
    assert effective_status(task, 1500) is TaskStatus.QUEUED


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
