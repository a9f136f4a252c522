"""``agenttask.leases``: the live leases the caller's token holds (ours, a read).

An agent that starts a session, is resumed, or comes back from a compaction has lost the
claim answer it got earlier: which task it holds, under which fence, until when. This read
gives it back, for the caller only (the lease owner is the caller's token id; another
token's leases are never listed, whatever its tier). The SessionStart hook
(``agent-task session-start``, :mod:`taskcore.agentsetup.sessionstart`) asks it at every
session start and tells the agent; an agent can ask it over MCP too
(``agenttask_leases``).

Each held lease comes with its task view (payload, checkpoint, fence, lease) and the mark of
the task's newest phase checkpoint (index, key, time; not its state, which can be 1 MiB):
the agent reads the state with the claim's ``resume`` or ``agenttask.get``.

At most :data:`~taskcore.limits.LEASES_HELD_MAX` leases are listed, soonest expiry first;
``more`` says the caller holds others. Only live leases count: an expired one is already
``QUEUED`` to every reader.

The operation lives in its own module (not ``queue/operations.py``) and registers itself:
:func:`register` is listed in ``taskcore.registry``.

>>> from taskcore.service import Registry
>>> registry = Registry()
>>> register(registry)
>>> op = registry.get("agenttask.leases")
>>> op.mcp, op.tool_name, op.min_tier.wire, op.risk.value
(True, 'agenttask_leases', 'agent', 'read')
"""

from __future__ import annotations

from typing import Any

import attrs

from taskcore.actors import RiskClass, Tier
from taskcore.codec import wire_field
from taskcore.limits import LEASE_DEFAULT_MS, LEASE_MAX_MS, LEASES_HELD_MAX, QUEUE_LIST_MAX
from taskcore.queue.common import QueueCall, lease_is_live
from taskcore.queue.requests import NoInput
from taskcore.queue.types import TaskView
from taskcore.queue.views import task_view
from taskcore.service import CallContext, Operation, Registry, Surface
from taskcore.store.queue_api import TaskRecord

__all__ = ["HeldLease", "HeldLeases", "PhaseMark", "held_leases", "register"]

LEASES = "agenttask.leases"


@attrs.frozen(kw_only=True)
class PhaseMark:
    """Where a task's newest phase checkpoint is (its state is read with the task)."""

    phase_index: int = wire_field(wire="phaseIndex")
    phase_key: str = wire_field(wire="phaseKey")
    created_at_ms: int = wire_field(wire="createdAtMs")


@attrs.frozen(kw_only=True)
class HeldLease:
    """One task the caller holds: its view and its newest phase checkpoint's mark."""

    task: TaskView = wire_field()
    last_phase: PhaseMark | None = wire_field(wire="lastPhase")


@attrs.frozen(kw_only=True)
class HeldLeases:
    """The caller's live leases, soonest expiry first, at the service's ``nowMs``."""

    now_ms: int = wire_field(wire="nowMs", doc="the service's clock when it read the leases")
    leases: tuple[HeldLease, ...] = wire_field()
    more: bool = wire_field(doc="the caller holds more leases than are listed")


def _held(call: QueueCall) -> list[TaskRecord]:
    """Every live lease of the caller's token in its workspace (read in pages)."""
    owner = call.actor.token_id
    held: list[TaskRecord] = []
    after: TaskRecord | None = None
    while True:
        page = call.tx.queue.backlog(
            call.workspace,
            status="LEASED",
            verb=None,
            matter_id=None,
            after=after,
            limit=QUEUE_LIST_MAX,
            now_ms=call.now_ms,
        )
        held += [t for t in page if t.lease_owner == owner and lease_is_live(t, call.now_ms)]
        if len(page) < QUEUE_LIST_MAX:
            return held
        after = page[-1]


def held_leases(call: QueueCall, _: Any = None) -> HeldLeases:
    """The caller's live leases (at most :data:`LEASES_HELD_MAX`), soonest expiry first."""
    held = sorted(_held(call), key=lambda t: (t.lease_expires_at_ms or 0, t.seq))
    out = []
    for task in held[:LEASES_HELD_MAX]:
        phase = call.tx.queue.latest_phase(call.workspace, task.task_id)
        mark = (
            None
            if phase is None
            else PhaseMark(
                phase_index=phase.phase_index,
                phase_key=phase.phase_key,
                created_at_ms=phase.created_at_ms,
            )
        )
        out.append(HeldLease(task=task_view(task, call.now_ms), last_phase=mark))
    return HeldLeases(now_ms=call.now_ms, leases=tuple(out), more=len(held) > LEASES_HELD_MAX)


def _handler(ctx: CallContext, request: NoInput) -> HeldLeases:
    call = QueueCall(
        tx=ctx.transaction(),
        actor=ctx.actor,
        now_ms=ctx.now_ms,
        lease_ms=LEASE_DEFAULT_MS,
        lease_max_ms=LEASE_MAX_MS,
    )
    return held_leases(call, request)


def register(registry: Registry) -> None:
    """Add ``agenttask.leases`` to ``registry``."""
    registry.register(
        Operation(
            name=LEASES,
            summary="The live leases this token holds: task, fence, expiry, last phase.",
            input_type=NoInput,
            output_type=HeldLeases,
            min_tier=Tier.AGENT,
            risk=RiskClass.READ,
            idempotent=True,
            mcp=True,
            surface=Surface.QUEUE,
            handler=_handler,
            description="Only the caller's own leases (its token id is the lease owner), "
            f"soonest expiry first, at most {LEASES_HELD_MAX}; `more` says there are others. "
            "An expired lease is not listed: the task is QUEUED again. Each comes with the "
            "task view (fence, lease.expiresAtMs, payload, checkpoint) and the mark of its "
            "newest phase checkpoint. Renew with agenttask.checkpoint {taskId, fence}; "
            "finish with status DONE.",
        )
    )
