"""The agent task queue: the nineteen ``agenttask.*`` verbs, approval gates, matters, phases.

Statuses are ``QUEUED``, ``LEASED``, ``ESCALATED``, ``DONE``, ``FAILED``, ``CANCELLED``; the
transition table is :mod:`taskcore.queue.transitions`. Leases, fences and the runaway guard
are :mod:`taskcore.queue.leases` (read-time expiry and the holder guard in
:mod:`taskcore.queue.common`). The verbs are registered with the front door by
:func:`taskcore.queue.operations.register`; ``docs/queue.md`` documents each one.
"""

from taskcore.queue.common import QueueCall
from taskcore.queue.transitions import (
    GATE_TRANSITIONS,
    TASK_TRANSITIONS,
    GateAction,
    TaskAction,
    next_gate_status,
    next_status,
)
from taskcore.queue.types import (
    ApprovalGateView,
    ClaimResult,
    FeedResult,
    GateStatus,
    Grant,
    LeaseHandle,
    LeaseView,
    TaskStatus,
    TaskView,
)

__all__ = [
    "GATE_TRANSITIONS",
    "TASK_TRANSITIONS",
    "ApprovalGateView",
    "ClaimResult",
    "FeedResult",
    "GateAction",
    "GateStatus",
    "Grant",
    "LeaseHandle",
    "LeaseView",
    "QueueCall",
    "TaskAction",
    "TaskStatus",
    "TaskView",
    "next_gate_status",
    "next_status",
]
