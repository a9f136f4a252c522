"""The workflow envelope: the route from the URL, the request envelope and the success body.

Workflow operations are registered as ``workflow.<op>`` and reached through one envelope,
``{"operation": "<op>", "request": {...}}``, with the repository and profile taken from the
URL (:class:`Route`); :func:`call_workflow` decodes the envelope, dispatches through the
front door and wraps the result as ``{"capability", "schema_version", "operation",
"result"}`` (:func:`wrap_workflow`). :class:`~taskcore.service.Service` exposes both as
methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs

from taskcore.actors import Actor
from taskcore.audit import ANONYMOUS, AuditLog, input_digest
from taskcore.codec import Codec, dumps, wire_field
from taskcore.errors import TaskError
from taskcore.names import WORKFLOW_PREFIX
from taskcore.registry import WORKFLOW_OPERATION_PATTERN, Door, Response, Surface
from taskcore.route import Route

__all__ = [
    "Route",
    "WorkflowCall",
    "WorkflowDoor",
    "call_workflow",
    "wrap_workflow",
]


@attrs.frozen(kw_only=True)
class WorkflowCall:
    """The workflow endpoint's request envelope: one operation and its request object."""

    operation: str = wire_field(max_len=64, pattern=WORKFLOW_OPERATION_PATTERN)
    request: dict[str, Any] = wire_field()


class WorkflowDoor(Protocol):
    """What :func:`call_workflow` needs of the front door (:class:`~taskcore.service.Service`).

    A protocol, so this module sits below the service that calls it: the service imports the
    envelope, never the other way round.
    """

    @property
    def codec(self) -> Codec:
        """The strict decoder of the envelope."""
        ...

    @property
    def audit(self) -> AuditLog:
        """The audit writer a refused envelope is recorded through."""
        ...

    def authenticate(self, bearer: str | None) -> Actor:
        """The actor of a bearer token (``TaskError`` when it does not authenticate)."""
        ...

    def dispatch(
        self,
        actor: Actor,
        name: str,
        raw: bytes | str | Mapping[str, Any] | None,
        *,
        route: Route | None = None,
        door: Door = Door.IN_PROCESS,
        surfaces: Iterable[Surface] | None = None,
        traceparent: str | None = None,
        _digest: str | None = None,
    ) -> Response:
        """Run one operation for ``actor`` (audited once)."""
        ...


def call_workflow(
    service: WorkflowDoor,
    principal: str | Actor | None,
    raw: bytes | str | Mapping[str, Any] | None,
    *,
    route: Route,
    door: Door = Door.IN_PROCESS,
    operation: str | None = None,
    traceparent: str | None = None,
) -> Response:
    """Run one workflow envelope ``{"operation", "request"}`` for ``route``.

    ``principal`` is a bearer token (authenticated here) or an already authenticated
    actor. With ``operation`` given, ``raw`` is that operation's own input rather than an
    envelope (the collector upload route passes the transfer bytes this way). The success
    body is ``{"capability", "schema_version", "operation", "result"}``; the result bytes
    are embedded unchanged (retained outcomes stay byte exact). Every refusal, including a
    malformed envelope, is audited once.
    """
    digest = input_digest(raw)
    name = "workflow" if operation is None else WORKFLOW_PREFIX + operation
    if isinstance(principal, Actor):
        actor = principal
    else:
        try:
            actor = service.authenticate(principal)
        except TaskError as err:
            service.audit.refusal(ANONYMOUS, "", name, digest, err)
            raise
    if operation is None:
        try:
            envelope = service.codec.decode(WorkflowCall, b"" if raw is None else raw)
        except TaskError as err:
            service.audit.refusal(actor.token_id, actor.workspace, name, digest, err)
            raise
        operation, raw = envelope.operation, envelope.request
    response = service.dispatch(
        actor,
        WORKFLOW_PREFIX + operation,
        raw,
        route=route,
        door=door,
        surfaces=(Surface.WORKFLOW,),
        traceparent=traceparent,
        _digest=digest,
    )
    return Response(wrap_workflow(operation, response.body))


def wrap_workflow(operation: str, result: bytes) -> bytes:
    """Return the workflow success body naming the capability around ``result`` bytes.

    >>> wrap_workflow("status", b'{"state":"claimed"}')
    b'{"capability":"agentscm.agent-workflow-tasks/v1","schema_version":1,"operation":"status","result":{"state":"claimed"}}'
    """
    from taskcore.contract.common import CAPABILITY, SCHEMA_VERSION

    head = dumps(
        {"capability": CAPABILITY, "schema_version": SCHEMA_VERSION, "operation": operation}
    )
    return head[:-1] + b',"result":' + result + b"}"
