"""What every queue verb shares: the call context, ids, bounded JSON, the one not-found.

A task of another workspace, a task the caller may not read and a task that does not exist
all produce the *same* error (:func:`task_not_found`): same code, same message, same path.
Nothing in a refusal tells them apart.

>>> task_not_found("at_1").to_json()
{'error': 'no task at_1 in this workspace at $.taskId', 'code': 'NOT_FOUND', 'path': '$.taskId'}
>>> json_text({"a": [1, 2]}, max_bytes=64, path="$.payload")
'{"a":[1,2]}'
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import attrs

from taskcore.actors import Actor, Tier
from taskcore.codec import dumps
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.queue_api import TaskRecord
from taskcore.store.storage import Transaction

__all__ = [
    "QueueCall",
    "is_admin",
    "json_text",
    "load_task",
    "new_id",
    "parse_json_text",
    "task_not_found",
    "write_task",
]


@attrs.frozen(kw_only=True)
class QueueCall:
    """One verb call: the open transaction, the caller, the time, the lease lengths.

    ``now_ms`` is read once per call so every timestamp the call writes agrees. ``lease_ms``
    is granted when a claim asks for no length; no claim gets more than ``lease_max_ms``.
    """

    tx: Transaction
    actor: Actor
    now_ms: int
    lease_ms: int
    lease_max_ms: int

    def lease_length(self, requested: int | None) -> int:
        """The lease a claim gets: what it asked for (or the default), capped."""
        return min(self.lease_ms if requested is None else requested, self.lease_max_ms)

    @property
    def workspace(self) -> str:
        """The caller's workspace: the explicit predicate of every query."""
        return self.actor.workspace


def is_admin(actor: Actor) -> bool:
    """Whether the caller has the admin tier (break-glass reads, matter access)."""
    return actor.tier >= Tier.ADMIN


def new_id(prefix: str) -> str:
    """Return a fresh random identifier such as ``at_<32 hex>``."""
    return f"{prefix}_{secrets.token_hex(16)}"


def task_not_found(task_id: str, *, path: str = "$.taskId") -> TaskError:
    """The one error for a missing, foreign or unreadable task."""
    return TaskError(ErrorCode.NOT_FOUND, f"no task {task_id} in this workspace", path=path)


def load_task(call: QueueCall, task_id: str, *, path: str = "$.taskId") -> TaskRecord:
    """Return the caller's workspace's task, or raise :func:`task_not_found`."""
    task = call.tx.queue.get_task(call.workspace, task_id)
    if task is None:
        raise task_not_found(task_id, path=path)
    return task


def json_text(value: Any, *, max_bytes: int, path: str) -> str:
    """Encode a JSON value compactly, refusing it above ``max_bytes`` (``PAYLOAD_TOO_LARGE``)."""
    data = dumps(value)
    if len(data) > max_bytes:
        raise TaskError(
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"{len(data)} bytes of JSON; at most {max_bytes} are allowed",
            path=path,
        )
    return data.decode("utf-8")


def parse_json_text(text: str | None) -> Any:
    """Decode JSON text written by :func:`json_text` (``None`` stays ``None``)."""
    return None if text is None else json.loads(text)


def write_task(call: QueueCall, task: TaskRecord) -> TaskRecord:
    """Store ``task`` if its row is unchanged since it was read; return the stored record.

    A lost compare-and-set (another writer changed the row) is a ``CONFLICT`` and the
    caller's transaction is rolled back, so nothing of the call is kept.
    """
    if not call.tx.queue.update_task(task):
        raise TaskError(
            ErrorCode.CONFLICT, "the task changed while this call ran; read it and retry"
        )
    return attrs.evolve(task, version=task.version + 1)
