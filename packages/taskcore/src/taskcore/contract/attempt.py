"""Attempts: one fresh execution of one task, with a bounded lease and a monotonic fence.

The attempt digest covers the immutable binding only (task, attempt and claim identities,
execution operation, agent, executor, fence, issued lease interval and issue time). Renewing a
lease changes the attempt's current expiry, which the journal keeps beside the attempt, not
its identity: requests keep naming the same attempt digest across heartbeats.

>>> from taskcore.contract.common import AgentIdentity
>>> agent = AgentIdentity(owner_id="acme", agent_id="agent-1")
>>> claim = TaskClaimRequest(version=1, request_id="claim-1", task_id="t1",
...     task_digest="a" * 64, execution_operation_id="exec-1", requested_lease_ms=60_000,
...     executor=None)
>>> attempt = WorkflowTaskAttempt(version=1, task_id="t1", task_digest="a" * 64,
...     attempt_id="attempt-1", claim_request_id="claim-1", execution_operation_id="exec-1",
...     agent=agent, executor=None, fence=1, lease_ms=60_000, issued_at_ms=0)
>>> attempt.validate_for_claim(claim, agent)
>>> attrs.evolve(attempt, lease_ms=60_001).validate_for_claim(claim, agent)
Traceback (most recent call last):
taskcore.errors.TaskError: the issued lease must be positive and no longer than requested at $.lease_ms
>>> attrs.evolve(attempt, fence=2).digest != attempt.digest
True
"""

from __future__ import annotations

import attrs

from taskcore.canonical import canonical_json
from taskcore.codec import wire_field
from taskcore.contract.common import AgentIdentity, ExecutorBinding, digest_field, id_field
from taskcore.contract.requests import TaskClaimRequest
from taskcore.digest import ATTEMPT_DOMAIN, domain_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import LEASE_MAX_MS

__all__ = ["WorkflowTaskAttempt", "attempt_digest"]


@attrs.frozen(kw_only=True)
class WorkflowTaskAttempt:
    """One execution: bound to the exact claim request and a positive bounded lease."""

    version: int = wire_field(version=True)
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str = id_field()
    claim_request_id: str = id_field()
    execution_operation_id: str = id_field()
    agent: AgentIdentity = wire_field()
    executor: ExecutorBinding | None = wire_field()
    fence: int = wire_field(lo=1)
    lease_ms: int = wire_field(lo=1, hi=LEASE_MAX_MS)
    issued_at_ms: int = wire_field()

    @property
    def digest(self) -> str:
        """The attempt digest (see :func:`attempt_digest`)."""
        return attempt_digest(self)

    def validate_for_claim(self, claim: TaskClaimRequest, agent: AgentIdentity) -> None:
        """Check that this attempt is exactly what ``claim`` asked for, by ``agent``.

        The attempt must name the claim's request ID, task, execution identity and executor,
        belong to the claiming agent, and have a lease no longer than requested.
        """
        checks = (
            (self.claim_request_id == claim.request_id, "claim_request_id"),
            (self.task_id == claim.task_id, "task_id"),
            (self.task_digest == claim.task_digest, "task_digest"),
            (self.execution_operation_id == claim.execution_operation_id, "execution_operation_id"),
            (self.executor == claim.executor, "executor"),
            (self.agent == agent, "agent"),
        )
        for ok, name in checks:
            if not ok:
                raise TaskError(
                    ErrorCode.BINDING_MISMATCH,
                    f"attempt {name} does not match the claim",
                    path=f"$.{name}",
                )
        if not 0 < self.lease_ms <= claim.requested_lease_ms:
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                "the issued lease must be positive and no longer than requested",
                path="$.lease_ms",
            )


def attempt_digest(attempt: WorkflowTaskAttempt) -> str:
    """Return ``agentscm.agent-workflow-attempt.v1`` over the attempt's canonical bytes."""
    return domain_digest(ATTEMPT_DOMAIN, canonical_json(attempt))
