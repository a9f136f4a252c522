"""Task handles: the queue task as an MCP Tasks handle, read and cancelled through the front door."""

from __future__ import annotations

import pytest
from taskcore import Door, ErrorCode, TaskError
from taskcore.queue.handles import (
    HandleStatus,
    cancel_handle,
    create_handle,
    handle_status,
    read_handle,
)
from taskcore.queue.types import TaskStatus

from tests.taskcore.queue.support import ADMIN, MEMBER, MEMBER2, OUTSIDER, WORKER


def test_every_queue_status_has_exactly_one_handle_status():
    assert {s: handle_status(s) for s in TaskStatus} == {
        TaskStatus.QUEUED: HandleStatus.WORKING,
        TaskStatus.LEASED: HandleStatus.WORKING,
        TaskStatus.ESCALATED: HandleStatus.INPUT_REQUIRED,
        TaskStatus.DONE: HandleStatus.COMPLETED,
        TaskStatus.FAILED: HandleStatus.FAILED,
        TaskStatus.CANCELLED: HandleStatus.CANCELLED,
    }
    assert {s for s in HandleStatus if s.terminal} == {
        HandleStatus.COMPLETED,
        HandleStatus.FAILED,
        HandleStatus.CANCELLED,
    }
    for status in TaskStatus:
        assert handle_status(status).terminal == status.terminal


def test_a_handle_follows_the_task_through_its_life(door, service):
    handle = create_handle(service, MEMBER, {"verb": "agent.run"}, door=Door.MCP)
    task_id = handle.task_id
    assert (handle.status, handle.output) == (HandleStatus.WORKING, None)
    fence = door(WORKER, "agenttask.claim", {"taskId": task_id})["lease"]["fence"]
    leased = read_handle(service, MEMBER, task_id, door=Door.MCP)
    assert leased.status is HandleStatus.WORKING
    assert "lease" in leased.message
    door(WORKER, "agenttask.escalate", {"taskId": task_id, "fence": fence, "reason": "why not"})
    waiting = read_handle(service, MEMBER, task_id, door=Door.MCP)
    assert waiting.status is HandleStatus.INPUT_REQUIRED
    assert waiting.gate is not None
    assert waiting.gate.reason == "why not"
    assert waiting.message.endswith(": why not")
    door(ADMIN, "agenttask.gate.approve", {"gateId": waiting.gate.gate_id})
    door(WORKER, "agenttask.claim", {"taskId": task_id})
    body = {"taskId": task_id, "status": "DONE", "checkpoint": {"output": [1, 2]}}
    door(WORKER, "agenttask.checkpoint", body)
    done = read_handle(service, MEMBER, task_id, door=Door.MCP)
    assert (done.status, done.output, done.message) == (HandleStatus.COMPLETED, [1, 2], "done")


def test_reads_and_cancels_keep_the_front_doors_rules(door, service):
    task_id = create_handle(service, MEMBER, {"verb": "agent.run"}, door=Door.MCP).task_id
    for actor in (OUTSIDER, MEMBER2, WORKER):  # other workspace, not the owner, no lease
        with pytest.raises(TaskError) as caught:
            read_handle(service, actor, task_id, door=Door.MCP)
        assert caught.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(TaskError) as caught:
        cancel_handle(service, WORKER, task_id, door=Door.MCP)
    assert caught.value.code is ErrorCode.FORBIDDEN
    cancelled = cancel_handle(service, MEMBER, task_id, door=Door.MCP)
    assert (cancelled.status, cancelled.message) == (HandleStatus.CANCELLED, "cancelled")
    assert service.audit_count(operation="agenttask.get") == 3


def test_a_failed_task_carries_its_last_error(door, service):
    task_id = create_handle(service, MEMBER, {"verb": "agent.run"}, door=Door.MCP).task_id
    door(WORKER, "agenttask.claim", {"taskId": task_id})
    door(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": "FAILED", "lastError": "x"})
    failed = read_handle(service, MEMBER, task_id, door=Door.MCP)
    assert (failed.status, failed.message) == (HandleStatus.FAILED, "x")
