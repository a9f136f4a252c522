"""The workflow envelope: the route from the URL, the request envelope and the success body.

Workflow operations are registered as ``workflow.<op>`` and reached through one envelope,
``{"operation": "<op>", "request": {...}}``, with the repository and profile taken from the
URL (:class:`Route`); :func:`call_workflow` decodes the envelope, dispatches through the
front door and wraps the result as ``{"capability", "schema_version", "operation",
"result"}`` (:func:`wrap_workflow`). :class:`~taskcore.service.Service` exposes both as
methods.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from taskcore.actors import Actor
from taskcore.audit import ANONYMOUS, input_digest
from taskcore.codec import dumps, wire_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.names import WORKFLOW_PREFIX
from taskcore.registry import WORKFLOW_OPERATION_PATTERN, Door, Response, Surface

TYPE_CHECKING = False
if TYPE_CHECKING:
    from taskcore.service import Service

__all__ = [
    "Route",
    "WorkflowCall",
    "call_workflow",
    "wrap_workflow",
]


_ROUTE_SEGMENT = re.compile(r"[A-Za-z0-9._-]{1,128}")


def _check_route_segment(value: str, what: str) -> None:
    if _ROUTE_SEGMENT.fullmatch(value) is None or value in (".", ".."):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"the {what} in the URL must match [A-Za-z0-9._-]{{1,128}} and not be '.' or '..'",
        )


@attrs.frozen(kw_only=True)
class Route:
    """Values the transport takes from the URL, never from the body (workflow operations).

    ``repository`` is one identifier or ``OWNER/NAME``; ``profile`` is one identifier.
    Identifiers match ``[A-Za-z0-9._-]{1,128}`` and are never ``.`` or ``..``; anything else
    is refused with ``INVALID_VALUE`` when the route is built.

    >>> Route(repository="acme/widgets", profile="default").repository
    'acme/widgets'
    >>> Route(repository="../etc", profile="p")
    Traceback (most recent call last):
    taskcore.errors.TaskError: the repository in the URL must match [A-Za-z0-9._-]{1,128} and not be '.' or '..'
    """

    repository: str = attrs.field()
    profile: str = attrs.field()

    @repository.validator
    def _check_repository(self, _: attrs.Attribute[str], value: str) -> None:
        parts = value.split("/") if isinstance(value, str) else [""]
        if len(parts) > 2:
            parts = [""]
        for part in parts:
            _check_route_segment(part, "repository")

    @profile.validator
    def _check_profile(self, _: attrs.Attribute[str], value: str) -> None:
        _check_route_segment(value if isinstance(value, str) else "", "profile")


@attrs.frozen(kw_only=True)
class WorkflowCall:
    """The workflow endpoint's request envelope: one operation and its request object."""

    operation: str = wire_field(max_len=64, pattern=WORKFLOW_OPERATION_PATTERN)
    request: dict[str, Any] = wire_field()


def call_workflow(
    service: Service,
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
            service._audit_refusal(ANONYMOUS, "", name, digest, err)
            raise
    if operation is None:
        try:
            envelope = service.codec.decode(WorkflowCall, b"" if raw is None else raw)
        except TaskError as err:
            service._audit_refusal(actor.token_id, actor.workspace, name, digest, err)
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
