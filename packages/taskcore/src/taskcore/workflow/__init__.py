"""The workflow journal: task derivation, the task/attempt state machine, the operations.

* :mod:`~taskcore.workflow.states` - the transition tables;
* :mod:`~taskcore.workflow.derive` - tasks from the installed plan and a recorded subject;
* :mod:`~taskcore.workflow.guard` - the authorization guard and the lock order;
* :mod:`~taskcore.workflow.journal` - checkpoints, claims, heartbeats, cancellation,
  reconciliation, results, and the side-effect-free reads;
* :mod:`~taskcore.workflow.recovery` - the recovery projection;
* :mod:`~taskcore.workflow.reads` - local read-only access to a data dir;
* :mod:`~taskcore.workflow.operations` - ``workflow.<op>`` on the front door.

``docs/journal.md`` describes the whole state machine.
"""

from taskcore.workflow.derive import derive_tasks, task_id_for
from taskcore.workflow.guard import (
    ActorGuard,
    AuthorizationGuard,
    GuardAction,
    GuardRequest,
)
from taskcore.workflow.journal import (
    COMPLETION_CHECKS,
    OBSERVATION_COMPLETION,
    Caller,
    WorkflowJournal,
    dependency_complete,
)
from taskcore.workflow.reads import local_reader, open_reader
from taskcore.workflow.recovery import project_recovery
from taskcore.workflow.states import (
    ATTEMPT_TRANSITIONS,
    TASK_TRANSITIONS,
    AttemptState,
    Event,
    TaskState,
    attempt_transition,
    observe_attempt,
    task_transition,
)

__all__ = [
    "ATTEMPT_TRANSITIONS",
    "COMPLETION_CHECKS",
    "OBSERVATION_COMPLETION",
    "TASK_TRANSITIONS",
    "ActorGuard",
    "AttemptState",
    "AuthorizationGuard",
    "Caller",
    "Event",
    "GuardAction",
    "GuardRequest",
    "TaskState",
    "WorkflowJournal",
    "attempt_transition",
    "dependency_complete",
    "derive_tasks",
    "local_reader",
    "observe_attempt",
    "open_reader",
    "project_recovery",
    "task_id_for",
    "task_transition",
]
