"""The carrier-verb registry: a task may only be created for a verb someone can drive.

``agent.run`` is built in. An admin registers more, per workspace, with
``agenttask.verb.register``; registering a verb twice is idempotent (``created: false``).

>>> sorted(BUILT_IN_VERBS)
['agent.run']
"""

from __future__ import annotations

from types import MappingProxyType

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import QUEUE_VERBS_MAX
from taskcore.queue.common import QueueCall
from taskcore.queue.requests import VerbRegisterIn
from taskcore.queue.types import VerbList, VerbRegistered, VerbView
from taskcore.store.queue_api import VerbRecord

__all__ = ["BUILT_IN_VERBS", "list_verbs", "register_verb", "require_registered"]

BUILT_IN_VERBS = MappingProxyType({"agent.run": "run a coding agent on the task's payload"})
"""Verbs every workspace has without registering them."""


def require_registered(call: QueueCall, verb: str, *, path: str = "$.verb") -> None:
    """Refuse (``INVALID_VALUE``) a carrier verb that is neither built in nor registered."""
    if verb in BUILT_IN_VERBS or call.tx.queue.get_verb(call.workspace, verb) is not None:
        return
    raise TaskError(
        ErrorCode.INVALID_VALUE,
        f"verb {verb!r} is not registered in this workspace; an admin registers it with "
        "agenttask.verb.register",
        path=path,
    )


def register_verb(call: QueueCall, request: VerbRegisterIn) -> VerbRegistered:
    """Register ``request.verb`` for the caller's workspace (idempotent)."""
    queue = call.tx.queue
    if request.verb in BUILT_IN_VERBS or queue.get_verb(call.workspace, request.verb):
        return VerbRegistered(verb=request.verb, created=False)
    if len(queue.list_verbs(call.workspace)) >= QUEUE_VERBS_MAX:
        raise TaskError(
            ErrorCode.OUT_OF_BOUNDS,
            f"this workspace already has {QUEUE_VERBS_MAX} registered verbs",
            path="$.verb",
        )
    queue.insert_verb(
        VerbRecord(
            workspace=call.workspace,
            verb=request.verb,
            description=request.description,
            registered_by=call.actor.token_id,
            registered_at_ms=call.now_ms,
        )
    )
    return VerbRegistered(verb=request.verb, created=True)


def list_verbs(call: QueueCall) -> VerbList:
    """The built-in verbs, then the workspace's registered ones by name."""
    built_in = tuple(
        VerbView(verb=name, description=text, built_in=True)
        for name, text in sorted(BUILT_IN_VERBS.items())
    )
    registered = tuple(
        VerbView(verb=r.verb, description=r.description, built_in=False)
        for r in call.tx.queue.list_verbs(call.workspace)
    )
    return VerbList(verbs=built_in + registered)
