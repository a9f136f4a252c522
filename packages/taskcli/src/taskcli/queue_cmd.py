"""``agent-task queue ...``: one command per ``agenttask.*`` operation, generated.

Each command is :func:`taskcli.generate.operation_command` of an operation the queue module
registers (``agenttask.claimNext`` -> ``queue claim-next``): one flag per field of its input
type, the first field positional when it is a required string (``queue get TASK_ID``). The
request goes to ``POST /v/{verb}``; the answer is printed readably (``--json`` for programs).
``agent-task call agenttask.X --request ...`` takes the same request as one JSON body.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import attrs
import click
from taskcore.queue import flow_operations, held, operations, sched_ops
from taskcore.service import Operation, Registry

from taskcli.common import ServiceClient, client_options, human
from taskcli.generate import Call, Shape, command_name, operation_command

__all__ = ["command_for", "queue_group", "queue_operations", "readable", "register"]


def _iso(ms: Any) -> str:
    if not isinstance(ms, int):
        return str(ms)
    stamp = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def _task_line(task: dict[str, Any]) -> str:
    """One line for a task view: id, verb, status, fence and lease expiry when leased."""
    parts = [str(task.get("taskId")), f"({task.get('verb')})", str(task.get("status"))]
    if task.get("fence"):
        parts.append(f"fence {task['fence']}")
    lease = task.get("lease")
    if isinstance(lease, dict) and isinstance(lease.get("expiresAtMs"), int):
        parts.append(f"lease until {_iso(lease['expiresAtMs'])}")
    if isinstance(task.get("maxAttempts"), int) and task["maxAttempts"] > 1:
        parts.append(f"attempt {task.get('attempt')}/{task['maxAttempts']}")
    if task.get("status") == "QUEUED" and isinstance(task.get("runAtMs"), int):
        parts.append(f"not before {_iso(task['runAtMs'])}")
    return " ".join(parts)


def readable(answer: Any) -> str:
    """A summary line for the everyday answers, then the full answer, for people.

    >>> readable({"claimed": False})
    'nothing to claim: no queued task this token may run'
    >>> readable({"taskId": "at_1", "verb": "agent.run", "status": "DONE"}).splitlines()[0]
    'at_1 (agent.run) DONE'
    >>> readable({"taskId": "at_2", "verb": "agent.run", "status": "QUEUED", "attempt": 2,
    ...     "maxAttempts": 3, "runAtMs": 0}).splitlines()[0]
    'at_2 (agent.run) QUEUED attempt 2/3 not before 1970-01-01T00:00:00Z'
    """
    if isinstance(answer, dict):
        if answer.get("claimed") is False:
            return "nothing to claim: no queued task this token may run"
        task = answer.get("task") if answer.get("claimed") is True else answer
        if isinstance(task, dict) and "taskId" in task and "status" in task:
            return _task_line(task) + "\n" + human(answer)
    return human(answer)


def _sender(verb: str) -> Call:
    def call(body: dict[str, Any], options: dict[str, Any]) -> Any:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        return ServiceClient(options["url"], options["token_file"]).verb(verb, data)

    return call


# How the commands spell some fields (presentation; the fields are the input types'):
# the field taken positionally when it is not the first required string (the default), and
# the flag spellings of the hand-written commands these replaced.
_ARGUMENT: dict[str, str | None] = {"agenttask.feed": "task_id"}
_ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    "agenttask.create": {"parent_task_id": ("--parent",), "matter_id": ("--matter",)},
}


def queue_operations() -> tuple[Operation[Any, Any], ...]:
    """The queue's operations: the nineteen verbs, gate.apply, the admin verbs, and ours.

    Ours: ``agenttask.leases``, the queue-flow verbs (``createMany``, ``limit.set``,
    ``limit.list``) and the scheduling verbs (pause, resume, paused, the bulk requeue and
    cancel), which their own modules register.
    """
    registry = Registry()
    operations.register(registry)
    held.register(registry)
    flow_operations.register(registry)
    sched_ops.register(registry)
    return tuple(registry)


def command_for(op: Operation[Any, Any]) -> str:
    """The command name of a queue operation: ``agenttask.claimNext`` -> ``claim-next``."""
    return command_name(op.name.removeprefix("agenttask."))


def _argument(op: Operation[Any, Any]) -> str | None:
    """The positional field: the first one, when it is a required string (``queue get TASK_ID``)."""
    if op.name in _ARGUMENT:
        return _ARGUMENT[op.name]
    first = next(iter(attrs.fields(op.input_type)), None)
    if first is None or first.default is not attrs.NOTHING:
        return None
    attrs.resolve_types(op.input_type)
    return first.name if first.type is str else None


@click.group("queue")
def queue_group() -> None:
    """The agent task queue (agenttask.* verbs)."""


def _generate() -> None:
    for op in queue_operations():
        shape = Shape(argument=_argument(op), aliases=_ALIASES.get(op.name, {}))
        queue_group.add_command(
            operation_command(
                op,
                command_for(op),
                _sender(op.name),
                shape=shape,
                render=readable,
                options=(client_options,),
            )
        )


_generate()


def register(group: click.Group) -> None:
    """Add ``queue``."""
    group.add_command(queue_group)
