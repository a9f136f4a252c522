"""Request identity: the canonical bytes and the digest a request ID is bound to.

The journal binds a request ID to :func:`request_canonical_bytes` (the request, the
authenticated agent and the request kind), so an identical retry is recognised and a changed
field under the same ID conflicts. The kind must fit the request's type, so this module sees
every request type: the claims and mutations of :mod:`taskcore.contract.requests` and the
result assertion of :mod:`taskcore.contract.assertion` (which itself builds on the attempt,
and so on the claim request; keeping this check out of ``requests`` keeps that chain acyclic).

>>> import attrs
>>> from taskcore.contract.requests import MutationAction
>>> req = TaskMutationRequest(version=1, request_id="r1", action=MutationAction.HEARTBEAT,
...     task_id="t1", task_digest="a" * 64, attempt_id="a1", attempt_digest="b" * 64,
...     execution_operation_id="op1", executor=None, fence=1, reason=None)
>>> agent = AgentIdentity(owner_id="acme", agent_id="tok")
>>> cancel = attrs.evolve(req, action=MutationAction.CANCEL, reason="stop")
>>> request_digest("heartbeat", req, agent) != request_digest("cancel", cancel, agent)
True
>>> request_digest("cancel", req, agent)
Traceback (most recent call last):
taskcore.errors.TaskError: a TaskMutationRequest is hashed as heartbeat, not cancel
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from taskcore.canonical import canonical_json
from taskcore.contract.assertion import TaskResultAssertion
from taskcore.contract.common import AgentIdentity
from taskcore.contract.requests import (
    InstructionsRequest,
    ReferenceFetchRequest,
    TaskClaimRequest,
    TaskMutationRequest,
    TaskStatusRequest,
)
from taskcore.digest import domain_digest, request_domain
from taskcore.errors import ErrorCode, TaskError

__all__ = ["RequestKind", "request_canonical_bytes", "request_digest"]


RequestKind = Literal[
    "claim",
    "heartbeat",
    "cancel",
    "reconcile",
    "result",
    "collector_claim",
    "collector_upload",
    "collector_finalize",
]


_READS = (TaskStatusRequest, InstructionsRequest, ReferenceFetchRequest)


def _check_kind(kind: str, request: Any) -> None:
    """Refuse a digest whose ``kind`` cannot be the kind of ``request``.

    The kind is the digest's domain: a heartbeat request hashed as a cancel would be a
    different request identity, so the pairing is checked rather than trusted.
    """
    if kind not in get_args(RequestKind):
        raise TaskError(ErrorCode.INVALID_VALUE, f"{kind!r} is not a request kind")
    if isinstance(request, _READS):
        raise TaskError(
            ErrorCode.INVALID_VALUE, "reads consume no request identity and have no digest"
        )
    expected: tuple[str, ...] | None = None
    if isinstance(request, TaskMutationRequest):
        expected = (request.action.value,)
    elif isinstance(request, TaskClaimRequest):
        expected = ("claim", "collector_claim")
    elif isinstance(request, TaskResultAssertion):
        expected = ("result",)
    if expected is not None and kind not in expected:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"a {type(request).__name__} is hashed as {' or '.join(expected)}, not {kind}",
        )


def request_canonical_bytes(kind: str, request: Any, agent: AgentIdentity) -> bytes:
    """Return the bytes a request ID is bound to: kind, authenticated agent, and the request.

    The agent comes from the credential, so the same request sent by another agent is a
    different request even with the same ID (IDs are scoped to owner and agent anyway).
    The bytes are the canonical JSON of ``{"kind": kind, "agent": agent, "request": request}``
    in that order. ``kind`` must be a :data:`RequestKind` that fits the request's type (a
    mutation's own ``action``; ``claim`` or ``collector_claim`` for a claim; ``result`` for an
    assertion); status, instruction and reference reads have no request identity.

    >>> claim = TaskClaimRequest(version=1, request_id="r1", task_id="t1", task_digest="a" * 64,
    ...     execution_operation_id="op1", requested_lease_ms=60000, executor=None)
    >>> request_canonical_bytes("claim", claim, AgentIdentity(owner_id="o", agent_id="g"))[:57]
    b'{"kind":"claim","agent":{"owner_id":"o","agent_id":"g"},"'
    """
    _check_kind(kind, request)
    return canonical_json({"kind": kind, "agent": agent, "request": request})


def request_digest(kind: str, request: Any, agent: AgentIdentity) -> str:
    """Return the request digest, domain-separated by ``kind`` (the action).

    Domain: ``agentscm.agent-workflow-request.v1.<kind>`` over
    :func:`request_canonical_bytes`.
    """
    return domain_digest(request_domain(kind), request_canonical_bytes(kind, request, agent))
