"""Admission: whether a call may run, decided before its body is read or decoded.

The front door (:class:`~taskcore.service.Service`) decides every call in two steps. This
module holds the first, the part that needs no body:

* :func:`check_operation`: the operation exists on this route and door, and the actor's tier
  and autonomy reach it (the checks :meth:`Service.dispatch` makes before it decodes, and
  :meth:`Service.admit` before a transport reads a byte of body);
* :class:`Admission`: a network request's headers alone (:meth:`Admission.admit`): the
  bearer authenticates (failures count against the peer address), the token has calls left
  in its budget, then :func:`check_operation`; and the same decision from memory for a
  bearer admitted moments ago (:meth:`Admission.admit_recent`, never touching storage);
* :func:`authenticate_in_call`: an admitted bearer authenticated once more inside its call's
  write transaction (:class:`Lapsed` when it no longer does);
* what an approval grant can admit: :func:`check_grantable` (run by
  :meth:`Service.run_granted`) and :func:`check_escalation_target` (run by
  ``agenttask.escalate``, so that a gate its caller could never use is refused when it is
  asked for, not after an operator approved it).

It imports the registry and the token checks, never the service; the service owns one
:class:`Admission` and hands it its audit writer, its authentication and its observers.

>>> from taskcore.actors import RiskClass, Tier
>>> op = Operation(name="demo.note", summary="", input_type=bytes, output_type=None,
...     min_tier=Tier.MEMBER, risk=RiskClass.WRITE, idempotent=False, mcp=False,
...     surface=Surface.ADMIN, handler=lambda ctx, req: None)
>>> agent = Actor(token_id="t1", workspace="w1", tier=Tier.AGENT, autonomy=3)
>>> check_operation(op, op.name, agent, None, Door.HTTP, None)
Traceback (most recent call last):
taskcore.errors.TaskError: demo.note needs the member tier; this token is agent
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from taskcore.actors import Actor
from taskcore.audit import AGGREGATED_DIGEST, ANONYMOUS, AuditLog, input_digest
from taskcore.auth import RecentAdmissions, authenticate_in
from taskcore.clock import Clock
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import ADMISSION_MEMORY_MS
from taskcore.names import WORKFLOW_PREFIX
from taskcore.ratelimit import RateLimiter, RateLimits
from taskcore.registry import Door, Operation, Registry, Surface, TxMode
from taskcore.route import Route
from taskcore.store.storage import Transaction

__all__ = [
    "Admission",
    "Lapsed",
    "authenticate_in_call",
    "check_escalation_target",
    "check_grantable",
    "check_operation",
    "defers_authentication",
]

Observe = Callable[[str, Door | None, str, float], None]
"""The service's call observer: ``(operation, door, code, seconds)``."""

Authenticate = Callable[[str | None, str | None], Actor]
"""The service's authentication: ``(bearer, resource)`` to the actor, or ``TaskError``."""


class Lapsed(Exception):  # noqa: N818 -- not an error of its own: carries one
    """An admitted bearer failed authentication inside its call (``Service.call(admitted=)``).

    Carries the error :func:`~taskcore.auth.authenticate_in` raised; the service audits and
    observes it exactly as a failed authentication before dispatch.
    """

    def __init__(self, error: TaskError) -> None:
        super().__init__(error.message)
        self.error = error


def defers_authentication(op: Operation[Any, Any] | None) -> bool:
    """Whether an admitted call of ``op`` authenticates in its own write transaction.

    Only an operation whose first step after decoding is that transaction: no handler of
    its own transactions (``TxMode.OWN``), nothing prepared or held before it opens.
    """
    return op is not None and op.tx is not TxMode.OWN and op.prepare is None and op.hold is None


def _list_hint(door: Door) -> str:
    """Where a caller of ``door`` finds what it can call (MCP clients: ``tools/list``)."""
    if door is Door.MCP:
        return "list the tools with tools/list"
    return "list the operations with 'agent-task call --list' or GET /openapi.json"


def check_operation(
    op: Operation[Any, Any] | None,
    name: str,
    actor: Actor,
    route: Route | None,
    door: Door,
    surfaces: frozenset[Surface] | None,
    *,
    granted: bool = False,
) -> Operation[Any, Any]:
    """Return ``op`` if ``actor`` may call it here; raise the refusal otherwise.

    In order: the operation exists among ``surfaces`` (``UNKNOWN_OPERATION``), is offered
    through ``door`` (``NOT_FOUND``), has its route when it needs one (``BAD_INPUT``), and
    the actor's tier (``FORBIDDEN``) and, unless an approval grant lifts it (``granted``),
    autonomy (``AUTONOMY_EXCEEDED``) reach it.
    """
    if op is None or (surfaces is not None and op.surface not in surfaces):
        shown = (
            name[:64].removeprefix(WORKFLOW_PREFIX)
            if surfaces == frozenset({Surface.WORKFLOW})
            else name[:64]
        )
        what = "tool" if door is Door.MCP else "operation"
        raise TaskError(
            ErrorCode.UNKNOWN_OPERATION,
            f"there is no {what} {shown!r} here; {_list_hint(door)}",
        )
    if door not in op.doors or (door is Door.MCP and not op.mcp_tool):
        raise TaskError(
            ErrorCode.NOT_FOUND,
            f"{op.name} is not offered through {door.value}; {_list_hint(door)}",
        )
    if op.route_required and route is None:
        raise TaskError(ErrorCode.BAD_INPUT, f"{op.name} needs a repository and profile route")
    if actor.tier < op.min_tier:
        raise TaskError(
            ErrorCode.FORBIDDEN,
            f"{op.name} needs the {op.min_tier.wire} tier; this token is {actor.tier.wire}",
        )
    if actor.autonomy < op.min_autonomy and not granted:
        raise TaskError(
            ErrorCode.AUTONOMY_EXCEEDED,
            f"{op.name} is {op.risk.value} and needs autonomy {op.min_autonomy}; "
            f"this token has {actor.autonomy}",
        )
    return op


def check_grantable(op: Operation[Any, Any]) -> Operation[Any, Any]:
    """Return ``op`` if it can run under an approval grant; ``INVALID_VALUE`` otherwise.

    A granted call runs inside the granting call's one transaction, on JSON input: an
    operation with its own transactions, a raw body, a ``prepare`` or a ``hold`` (its lock
    comes before the writer's, not inside it) cannot.
    """
    if op.tx is not TxMode.WRITE or op.raw_input or op.prepare is not None or op.hold is not None:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"{op.name} manages its own transactions and cannot run under an approval grant",
        )
    return op


def check_escalation_target(
    registry: Registry, verb: str, actor: Actor, *, path: str = "$.targetVerb"
) -> None:
    """Refuse an escalation whose grant ``actor`` could never apply (``agenttask.escalate``).

    A grant lifts the autonomy bound of one call, never the tier, and runs the call in
    ``agenttask.gate.apply``'s transaction on the queue's route. So when ``verb`` names an
    operation of this service, ``actor``'s tier must reach it (``FORBIDDEN``, naming the tier
    it needs, ``details.requiredTier``) and it must be one a grant can run: no workflow route,
    :func:`check_grantable` (``INVALID_VALUE``). A ``verb`` that names no operation here is
    left alone: the gate records an action outside agent-task for the operator, and admits
    no call (``GRANT_VERB_MISMATCH`` / ``UNKNOWN_OPERATION`` if one is tried).

    >>> from taskcore.actors import RiskClass, Tier
    >>> registry = Registry()
    >>> registry.register(Operation(name="demo.cancel", summary="", input_type=bytes,
    ...     output_type=None, min_tier=Tier.MEMBER, risk=RiskClass.SENSITIVE, idempotent=False,
    ...     mcp=False, surface=Surface.QUEUE, handler=lambda ctx, req: None))
    >>> agent = Actor(token_id="t1", workspace="w1", tier=Tier.AGENT, autonomy=1)
    >>> check_escalation_target(registry, "demo.cancel", agent)
    Traceback (most recent call last):
    taskcore.errors.TaskError: demo.cancel needs the member tier and this token is agent; a grant never lifts the tier: a member token makes this call (or escalates for it) at $.targetVerb
    >>> check_escalation_target(registry, "deploy.production", agent) is None
    True
    """
    op = registry.get(verb)
    if op is None:
        return
    if actor.tier < op.min_tier:
        raise TaskError(
            ErrorCode.FORBIDDEN,
            f"{op.name} needs the {op.min_tier.wire} tier and this token is {actor.tier.wire}; "
            f"a grant never lifts the tier: a {op.min_tier.wire} token makes this call (or "
            "escalates for it)",
            path=path,
            details={"requiredTier": op.min_tier.wire},
        )
    if op.route_required:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"{op.name} takes its repository and profile from a workflow URL and cannot run "
            "under an approval grant",
            path=path,
        )
    try:
        check_grantable(op)
    except TaskError as err:
        raise err.at(path) from None


def authenticate_in_call(tx: Transaction, bearer: str, admitted: Actor) -> None:
    """The admitted bearer's authentication, inside the call's write transaction.

    The same check as :meth:`Service.authenticate` (the token must exist, match and be
    live), reading the token row the live guard reads; :class:`Lapsed` if it fails.
    """
    try:
        actor = authenticate_in(tx, bearer)
    except TaskError as err:
        raise Lapsed(err) from None
    if actor != admitted:
        raise TaskError(ErrorCode.INTERNAL, "the admitted actor is not the bearer's")


class Admission:
    """A front door's decisions from a network request's headers, and their rate limits.

    ``authenticate`` is the service's (a read transaction per bearer; ``resource``, an MCP
    endpoint's URL, admits OAuth access tokens issued for it), ``audit`` its one
    audit writer and ``observe`` its call observer; ``limits`` (``None``: none) the token
    and address budgets; ``memory_ms`` how long an admitted bearer is remembered
    (:meth:`admit_recent`; 0: never).
    """

    def __init__(
        self,
        *,
        registry: Registry,
        audit: AuditLog,
        authenticate: Authenticate,
        observe: Observe,
        clock: Clock,
        limits: RateLimits | None = None,
        memory_ms: int = ADMISSION_MEMORY_MS,
    ) -> None:
        self._registry = registry
        self._audit = audit
        self._authenticate = authenticate
        self._observe = observe
        self._token_calls: RateLimiter | None = None
        self._address_refusals: RateLimiter | None = None
        if limits is not None:
            self._token_calls = RateLimiter(
                rate=limits.token_calls_per_second,
                burst=limits.token_calls_burst,
                keys_max=limits.keys_max,
                clock=clock,
            )
            self._address_refusals = RateLimiter(
                rate=limits.address_refusals_per_second,
                burst=limits.address_refusals_burst,
                keys_max=limits.keys_max,
                clock=clock,
            )
        self._recent = RecentAdmissions(memory_ms=memory_ms)

    def admit(
        self,
        bearer: str | None,
        name: str | None = None,
        *,
        client: str | None = None,
        route: Route | None = None,
        door: Door = Door.HTTP,
        surfaces: Iterable[Surface] | None = None,
        label: str = "",
        resource: str | None = None,
    ) -> Actor:
        """Decide whether a request may send its body (:meth:`Service.admit`)."""
        shown = name or label
        try:
            actor = self._authenticate(bearer, resource)
        except TaskError as err:
            refusal = self._address_refusal(client, err)
            self._audit.refusal(ANONYMOUS, "", shown, AGGREGATED_DIGEST, refusal)
            self._observe(shown, door, refusal.code.value, 0.0)
            raise refusal from None
        if self._token_calls is not None:
            decision = self._token_calls.take(actor.token_id)
            if not decision.allowed:
                limited = TaskError(
                    ErrorCode.RATE_LIMITED,
                    f"this token called more than {self._token_calls.rate:g} times a second "
                    f"(bursts of {self._token_calls.burst}); retry in {decision.retry_after} s",
                    retry_after=decision.retry_after,
                )
                self._audit.refusal(
                    actor.token_id, actor.workspace, shown, AGGREGATED_DIGEST, limited
                )
                self._observe(shown, door, limited.code.value, 0.0)
                raise limited
        if name is not None:
            wanted = None if surfaces is None else frozenset(surfaces)
            try:
                check_operation(self._registry.get(name), name, actor, route, door, wanted)
            except TaskError as err:
                self._audit.refusal(actor.token_id, actor.workspace, name, input_digest(b""), err)
                self._observe(name, door, err.code.value, 0.0)
                raise
        if bearer and resource is None:  # it authenticated; OAuth's resource check is not kept
            self._recent.remember(bearer, actor)
        return actor

    def admit_recent(
        self,
        bearer: str | None,
        name: str | None,
        *,
        door: Door = Door.HTTP,
        surfaces: Iterable[Surface] | None = None,
    ) -> Actor | None:
        """:meth:`admit` from memory alone (:meth:`Service.admit_recent`)."""
        if not bearer:
            return None
        actor = self._recent.recall(bearer)
        if actor is None:
            return None
        if name is not None:  # without one, as admit: the bearer and its budget only
            op = self._registry.get(name)
            wanted = None if surfaces is None else frozenset(surfaces)
            if op is None or op.route_required:
                return None
            try:
                check_operation(op, name, actor, None, door, wanted)
            except TaskError:
                return None
        if self._token_calls is not None and not self._token_calls.take(actor.token_id).allowed:
            return None  # admit refuses it again (a refused take takes nothing), and audits
        return actor

    def forget(self, bearer: str) -> None:
        """Forget ``bearer`` (it failed authentication since it was admitted)."""
        self._recent.forget(bearer)

    def authenticate_again(self, bearer: str) -> None:
        """Authenticate an admitted bearer once more; :class:`Lapsed` if it no longer does."""
        try:
            self._authenticate(bearer, None)
        except TaskError as err:
            raise Lapsed(err) from None

    def _address_refusal(self, client: str | None, err: TaskError) -> TaskError:
        if self._address_refusals is None or not client:
            return err
        decision = self._address_refusals.take(client)
        if decision.allowed:
            return err
        return TaskError(
            ErrorCode.RATE_LIMITED,
            "too many requests from this address failed to authenticate; send a valid "
            f"'Authorization: Bearer <token>' and retry in {decision.retry_after} s",
            retry_after=decision.retry_after,
        )
