"""Shared helpers for the queue tests: in-process actors and a dispatching door."""

from __future__ import annotations

from typing import Any

import pytest
from taskcore import Actor, FakeClock, Service, TaskError, Tier

START_MS = 1_700_000_000_000

ADMIN = Actor(token_id="admin", workspace="w", tier=Tier.ADMIN, autonomy=3)
MEMBER = Actor(token_id="member", workspace="w", tier=Tier.MEMBER, autonomy=2)
MEMBER2 = Actor(token_id="member2", workspace="w", tier=Tier.MEMBER, autonomy=2)
WORKER = Actor(token_id="worker", workspace="w", tier=Tier.AGENT, autonomy=1)
WORKER2 = Actor(token_id="worker2", workspace="w", tier=Tier.AGENT, autonomy=1)
HIGH_WORKER = Actor(token_id="high", workspace="w", tier=Tier.AGENT, autonomy=3)
OUTSIDER = Actor(token_id="outsider", workspace="other", tier=Tier.ADMIN, autonomy=3)


class Door:
    """Calls ``Service.dispatch`` and returns the decoded JSON, or the refusal."""

    def __init__(self, service: Service, clock: FakeClock) -> None:
        self.service = service
        self.clock = clock

    def __call__(self, actor: Actor, verb: str, body: dict[str, Any] | None = None) -> Any:
        return self.service.dispatch(actor, verb, body or {}).json()

    def refused(self, actor: Actor, verb: str, body: dict[str, Any] | None = None) -> TaskError:
        with pytest.raises(TaskError) as info:
            self.service.dispatch(actor, verb, body or {})
        return info.value

    def create(self, actor: Actor = MEMBER, **body: Any) -> dict[str, Any]:
        return self(actor, "agenttask.create", {"verb": "agent.run", **body})

    def claimed(self, actor: Actor = WORKER, task_id: str | None = None) -> dict[str, Any]:
        """Create a task (unless given) and claim it; return the claim result."""
        if task_id is None:
            task_id = self.create()["taskId"]
        return self(actor, "agenttask.claim", {"taskId": task_id})

    def row(self, task_id: str) -> Any:
        """The stored record, bypassing the front door (for invariants)."""
        with self.service.storage.read() as tx:
            for workspace in ("w", "other"):
                task = tx.queue.get_task(workspace, task_id)
                if task is not None:
                    return task
        return None
