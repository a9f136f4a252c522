"""Views are computed at a point in time from stored records."""

from __future__ import annotations

import attrs
from taskcore import Actor, Tier
from taskcore.queue.leases import granted_lease
from taskcore.queue.types import TaskStatus
from taskcore.queue.views import feed_entry, task_view
from taskcore.store.queue_api import TaskRecord

WORKER = Actor(token_id="w", workspace="ws", tier=Tier.AGENT, autonomy=1)


def _record(**over) -> TaskRecord:
    base = {
        "task_id": "at_1",
        "workspace": "ws",
        "verb": "agent.run",
        "payload_json": '{"title":"x"}',
        "status": "QUEUED",
        "priority": 0,
        "autonomy_ceiling": 1,
        "depth": 0,
        "parent_task_id": None,
        "run_id": None,
        "matter_id": None,
        "matter_step_id": None,
        "created_by": "c",
        "created_at_ms": 0,
        "updated_at_ms": 0,
    }
    return TaskRecord(**{**base, **over})


def test_a_live_lease_is_shown_and_an_expired_one_reads_as_queued():
    leased = granted_lease(_record(), WORKER, 100, 50)
    live = task_view(leased, 149)
    assert (live.status, live.lease.owner, live.lease.expires_at_ms) == (
        TaskStatus.LEASED,
        "w",
        150,
    )
    expired = task_view(leased, 150)
    assert (expired.status, expired.lease, expired.fence) == (TaskStatus.QUEUED, None, 1)
    assert expired.payload == {"title": "x"}


def test_feed_entries_take_a_string_rationale_and_hide_state_unless_asked():
    record = _record(checkpoint_json='{"rationale":"why","output":[1]}', exercised_autonomy=1)
    full = feed_entry(record, 0, with_state=True)
    assert (full.rationale, full.output, full.autonomy_exercised) == ("why", [1], 1)
    bare = feed_entry(record, 0, with_state=False)
    assert (bare.rationale, bare.checkpoint, bare.output) == ("why", None, None)
    odd = feed_entry(attrs.evolve(record, checkpoint_json='{"rationale": 5}'), 0, with_state=True)
    assert odd.rationale is None
    assert (
        feed_entry(attrs.evolve(record, checkpoint_json="[1]"), 0, with_state=True).output is None
    )
