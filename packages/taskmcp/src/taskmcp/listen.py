"""``subscriptions/listen`` with ``tasksStatus``: ``notifications/tasks/status`` for task handles.

The MCP Tasks extension (SEP-2663, on the 2026-07-28 wire) lets a client that declared it ask
for status notifications of task handles it holds: it sends ``subscriptions/listen`` with
``notifications.tasksStatus: [taskId, ...]`` and keeps the response stream open. The server
acknowledges first (``notifications/subscriptions/acknowledged``, naming the task ids it
agreed to: those the caller may read, as ``tasks/get`` would answer them), then sends one
``notifications/tasks/status`` whenever one of them changes status, carrying the complete
``DetailedTask`` that ``tasks/get`` would return at that moment; every frame carries the
listen request's id under ``_meta["io.modelcontextprotocol/subscriptionId"]``. A client that
did not declare the extension and asks for ``tasksStatus`` gets the missing-required-client-
capability error (the SDK's ``-32021``). The other notification kinds a listen may ask for (list changes) are
never published by this server, so they are not acknowledged.

Status changes come from the event stream (:mod:`taskcore.events.stream`: the audit log,
woken by every commit of any replica), filtered to these tasks; each notification's task is
read through the front door (``agenttask.get``, audited like a poll). Opening the listen is one
audited ``observe.events`` call. The pinned SDK (``mcp`` 2.3) serves ``subscriptions/listen``
for its own change-notification vocabulary only; this handler replaces it on the queue
endpoint and speaks the extension's shapes itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Literal

import anyio.to_thread
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)
from pydantic import BaseModel
from taskcore import Actor, Door, Service, TaskError
from taskcore.events.stream import event_batches, open_events
from taskcore.queue.handles import TaskHandle, read_handle

__all__ = ["SUBSCRIPTION_ID_META_KEY", "TASKS_STATUS_KEY", "TaskStatusNotification", "listen"]

SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"
TASKS_STATUS_KEY = "tasksStatus"
"""The key of ``notifications`` a client names its task ids under."""
_TASKS_MAX = 64


class TaskStatusNotification(BaseModel):
    """``notifications/tasks/status`` (the extension's 2026-07-28 shape: a flat DetailedTask)."""

    method: Literal["notifications/tasks/status"] = "notifications/tasks/status"
    params: dict[str, Any]


def _task_ids(params: SubscriptionsListenRequestParams) -> list[str] | None:
    raw = (params.notifications.model_extra or {}).get(TASKS_STATUS_KEY)
    if raw is None:
        return None
    if (
        not isinstance(raw, list)
        or len(raw) > _TASKS_MAX
        or not all(isinstance(t, str) and 0 < len(t) <= 128 for t in raw)
    ):
        raise MCPError(
            INVALID_PARAMS,
            f"notifications.{TASKS_STATUS_KEY} is a list of at most {_TASKS_MAX} task ids",
        )
    return list(dict.fromkeys(raw))


async def listen(
    ctx: ServerRequestContext[Any, Any],
    params: SubscriptionsListenRequestParams,
    *,
    service: Service,
    actor: Actor,
    declared: bool,
    detailed: Callable[[Service, TaskHandle], dict[str, Any]],
    missing_capability: Callable[[], MCPError],
    rpc_error: Callable[[TaskError], MCPError],
) -> HandlerResult:
    """Serve one listen stream (see the module docstring)."""
    subscription_id = ctx.request_id
    if subscription_id is None:
        raise MCPError(INVALID_PARAMS, "subscriptions/listen needs a request id")
    wanted = _task_ids(params)
    if wanted is not None and not declared:
        raise missing_capability()
    meta = {SUBSCRIPTION_ID_META_KEY: subscription_id}

    def readable(task_id: str) -> TaskHandle | None:
        try:
            return read_handle(service, actor, task_id, door=Door.MCP)
        except TaskError:
            return None  # not the caller's to read: not agreed to, nothing said about it

    handles: dict[str, TaskHandle] = {}
    for task_id in wanted or []:
        handle = await anyio.to_thread.run_sync(readable, task_id)
        if handle is not None:
            handles[task_id] = handle
    honored = SubscriptionFilter.model_validate(
        {TASKS_STATUS_KEY: list(handles)} if wanted is not None else {}
    )
    try:
        # The MCP door offers tools only: the stream is opened in process for the actor the
        # endpoint authenticated (audited as every opening is).
        opening = open_events(
            service, actor, door=Door.IN_PROCESS, task_id=None, operations=("agenttask.*",)
        )
        stream = await anyio.to_thread.run_sync(opening.__enter__)
    except TaskError as err:
        raise rpc_error(err) from None
    stream.task_ids = frozenset(handles)
    try:
        await ctx.session.send_notification(
            SubscriptionsAcknowledgedNotification(
                params=SubscriptionsAcknowledgedNotificationParams(
                    notifications=honored, _meta=meta
                )
            ),
            related_request_id=subscription_id,
        )
        last = {task_id: handle.status for task_id, handle in handles.items()}
        run = anyio.to_thread.run_sync
        async with contextlib.aclosing(event_batches(stream, run)) as batches:
            async for batch in batches:
                moved = {e.subject for e in batch if e.subject in last and e.status_after}
                for task_id in sorted(moved, key=str):
                    assert task_id is not None
                    handle = await anyio.to_thread.run_sync(readable, task_id)
                    if handle is None or handle.status == last[task_id]:
                        continue
                    last[task_id] = handle.status
                    notification = TaskStatusNotification(
                        params={**detailed(service, handle), "_meta": meta}
                    )
                    await ctx.session.send_notification(
                        notification,  # type: ignore[arg-type]  # an extension's notification
                        related_request_id=subscription_id,
                    )
    except TaskError:
        pass  # the token lapsed: end the stream gracefully
    finally:
        opening.__exit__(None, None, None)
    return SubscriptionsListenResult(_meta=meta)
