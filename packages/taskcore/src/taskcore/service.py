"""The one front door: an operation registry and :meth:`Service.dispatch`.

Every call, whichever door it comes through (HTTP, MCP, CLI, in-process), takes one path::

    authenticate -> registry lookup -> door/route check -> tier check -> autonomy check
      -> strict decode -> handler inside one journal transaction -> exactly one audit event

A refused call is audited too (in its own transaction, after the failed one rolled back), so
the audit count always equals the call count. Adapters enumerate :attr:`Service.registry`
and translate; they hold no logic of their own.

>>> import tempfile, attrs
>>> from taskcore.clock import FakeClock
>>> from taskcore.codec import wire_field
>>> @attrs.frozen(kw_only=True)
... class EchoIn:
...     text: str = wire_field(max_len=16)
>>> service = Service.open(tempfile.mkdtemp(), clock=FakeClock())
>>> service.registry.register(Operation(
...     name="demo.echo", summary="Echo text back.", input_type=EchoIn, output_type=None,
...     min_tier=Tier.AGENT, risk=RiskClass.READ, idempotent=True, mcp=False,
...     surface=Surface.ADMIN, handler=lambda ctx, req: {"text": req.text}))
>>> actor = Actor(token_id="local", workspace="w1", tier=Tier.AGENT)
>>> service.dispatch(actor, "demo.echo", b'{"text": "hi"}').json()
{'text': 'hi'}
>>> service.audit_count()
1
>>> service.close()
"""

from __future__ import annotations

import enum
import importlib
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import attrs

from taskcore.actors import Actor, RiskClass, Tier
from taskcore.auth import authenticate_in
from taskcore.clock import Clock, SystemClock
from taskcore.codec import Codec, dumps
from taskcore.digest import AUDIT_INPUT_DOMAIN, domain_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import AUDIT_VERB_MAX_CHARS, REQUEST_BODY_MAX_BYTES
from taskcore.store.audit_api import AuditEvent
from taskcore.store.storage import SqliteStorage, Storage, Transaction, open_storage

__all__ = [
    "CallContext",
    "Door",
    "Operation",
    "RawJson",
    "Registry",
    "Response",
    "Route",
    "Service",
    "ServiceConfig",
    "Surface",
    "TxMode",
]

I = TypeVar("I")  # noqa: E741 - conventional name for an input type variable
O = TypeVar("O")  # noqa: E741 - conventional name for an output type variable

_OPERATION_NAME = re.compile(r"[a-z][A-Za-z0-9_.]{0,127}")

# Modules that contribute operations: each exports ``register(registry)``.
_OPERATION_MODULES: tuple[str, ...] = ()


class Surface(enum.Enum):
    """Which family an operation belongs to; adapters route by it."""

    QUEUE = "queue"
    WORKFLOW = "workflow"
    ADMIN = "admin"
    GATE = "gate"


class Door(enum.Enum):
    """Which transport a call came through (recorded for capability checks)."""

    HTTP = "http"
    MCP = "mcp"
    CLI = "cli"
    IN_PROCESS = "in_process"


class TxMode(enum.Enum):
    """How the handler runs: inside the call's write transaction, or managing its own.

    ``WRITE`` handlers share one ``BEGIN IMMEDIATE`` transaction with the audit event, so the
    effect and its audit commit together. ``OWN`` handlers (long work such as reading a git
    object outside the journal lock) open their own transactions; their audit event is
    appended after they return.
    """

    WRITE = "write"
    OWN = "own"


@attrs.frozen(kw_only=True)
class Route:
    """Values the transport takes from the URL, never from the body (workflow operations)."""

    repository: str
    profile: str


@attrs.frozen(kw_only=True)
class ServiceConfig:
    """Service-wide settings."""

    data_dir: Path
    lease_max_ms: int = 60 * 60 * 1000
    busy_timeout_ms: int = 10_000


@attrs.frozen
class RawJson:
    """A handler result that is already encoded (a retained outcome returned byte for byte)."""

    body: bytes


@attrs.frozen
class Response:
    """A successful call: the exact response bytes."""

    body: bytes

    def json(self) -> Any:
        """Parse the body."""
        return json.loads(self.body)


@attrs.frozen(kw_only=True)
class CallContext:
    """What a handler gets besides its decoded input."""

    service: Service
    actor: Actor
    tx: Transaction | None
    route: Route | None
    door: Door
    raw_digest: str

    @property
    def clock(self) -> Clock:
        """The service clock."""
        return self.service.clock

    @property
    def now_ms(self) -> int:
        """The current time in milliseconds."""
        return self.service.clock.now_ms()

    def transaction(self) -> Transaction:
        """The open transaction (handlers with ``TxMode.OWN`` have none)."""
        if self.tx is None:
            raise TaskError(ErrorCode.INTERNAL, "this operation manages its own transactions")
        return self.tx


Handler = Callable[[CallContext, Any], Any]


@attrs.frozen(kw_only=True)
class Operation(Generic[I, O]):
    """One registered operation: its name, types, who may call it and the handler.

    ``output_type`` is an attrs class used for documentation and schemas, or ``None`` when the
    output is a free-form JSON object described by ``summary``. ``mcp`` says whether MCP lists
    it as a tool. ``route_required`` operations take repository and profile from the URL.
    """

    name: str
    summary: str
    input_type: type[I]
    output_type: type[O] | None
    min_tier: Tier
    risk: RiskClass
    idempotent: bool
    mcp: bool
    surface: Surface
    handler: Callable[[CallContext, I], Any]
    tx: TxMode = TxMode.WRITE
    route_required: bool = False
    max_input_bytes: int = REQUEST_BODY_MAX_BYTES
    doors: frozenset[Door] = frozenset(Door)

    @property
    def min_autonomy(self) -> int:
        """The smallest autonomy level allowed to call this operation (fixed by its risk)."""
        return self.risk.min_autonomy


class Registry:
    """The operations every door enumerates. Names are unique; order is registration order."""

    def __init__(self) -> None:
        self._ops: dict[str, Operation[Any, Any]] = {}
        self._lock = threading.Lock()

    def register(self, op: Operation[Any, Any]) -> None:
        """Add ``op``; a duplicate or malformed name is a programming error."""
        if _OPERATION_NAME.fullmatch(op.name) is None:
            raise ValueError(f"operation name {op.name!r} is malformed")
        with self._lock:
            if op.name in self._ops:
                raise ValueError(f"operation {op.name!r} is registered twice")
            self._ops[op.name] = op

    def get(self, name: str) -> Operation[Any, Any] | None:
        """Return the operation called ``name``, or ``None``."""
        return self._ops.get(name)

    def __iter__(self) -> Iterator[Operation[Any, Any]]:
        return iter(list(self._ops.values()))

    def __len__(self) -> int:
        return len(self._ops)

    def names(self, surface: Surface | None = None) -> tuple[str, ...]:
        """Return operation names (of one surface), sorted."""
        return tuple(sorted(o.name for o in self._ops.values() if surface in (None, o.surface)))


def default_registry() -> Registry:
    """Build the registry with every operation taskcore ships."""
    registry = Registry()
    for module_name in _OPERATION_MODULES:
        importlib.import_module(module_name).register(registry)
    return registry


def _raw_bytes(raw: bytes | str | Mapping[str, Any] | None) -> bytes:
    if raw is None:
        return b"{}"
    if isinstance(raw, bytes | bytearray | memoryview):
        return bytes(raw)
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogatepass")
    try:
        return dumps(dict(raw))
    except (TypeError, ValueError):
        return repr(raw).encode("utf-8", "replace")


class Service:
    """The front door over one storage, one clock and one registry."""

    def __init__(
        self,
        storage: Storage,
        *,
        config: ServiceConfig,
        clock: Clock | None = None,
        registry: Registry | None = None,
    ) -> None:
        self.storage = storage
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self.registry = registry if registry is not None else default_registry()
        self.codec = Codec()

    @classmethod
    def open(
        cls,
        data_dir: Path | str,
        *,
        clock: Clock | None = None,
        registry: Registry | None = None,
        **config: Any,
    ) -> Service:
        """Open (creating if needed) the journal in ``data_dir`` and build a service on it."""
        config_obj = ServiceConfig(data_dir=Path(data_dir), **config)
        storage: SqliteStorage = open_storage(
            data_dir, create=True, busy_timeout_ms=config_obj.busy_timeout_ms
        )
        return cls(storage, config=config_obj, clock=clock, registry=registry)

    def close(self) -> None:
        """Release storage."""
        self.storage.close()

    # -- auditing ---------------------------------------------------------------------------
    def _audit(self, tx: Transaction, actor: str, workspace: str, name: str, digest: str,
               outcome: str) -> None:
        tx.audit.append(
            AuditEvent(
                at_ms=self.clock.now_ms(),
                actor=actor,
                workspace=workspace,
                operation=name[:AUDIT_VERB_MAX_CHARS],
                input_digest=digest,
                outcome=outcome,
            )
        )

    def _audit_refusal(self, actor: str, workspace: str, name: str, digest: str,
                       error: TaskError) -> None:
        try:
            with self.storage.write() as tx:
                self._audit(tx, actor, workspace, name, digest, error.code.value)
        except TaskError:
            # Storage itself refused (busy, unavailable): the caller still gets the original
            # error; there is nothing durable to audit into.
            pass

    def audit_count(self, *, workspace: str | None = None, operation: str | None = None) -> int:
        """Count audit events (tests and operators)."""
        with self.storage.read() as tx:
            return tx.audit.count(workspace=workspace, operation=operation)

    # -- calling ----------------------------------------------------------------------------
    def call(
        self,
        bearer: str | None,
        name: str,
        raw: bytes | str | Mapping[str, Any] | None,
        *,
        route: Route | None = None,
        door: Door = Door.IN_PROCESS,
    ) -> Response:
        """Authenticate ``bearer`` and dispatch; failed authentication is audited too."""
        digest = domain_digest(AUDIT_INPUT_DOMAIN, _raw_bytes(raw))
        try:
            if not bearer:
                raise TaskError(ErrorCode.UNAUTHENTICATED, "send 'Authorization: Bearer <token>'")
            with self.storage.read() as tx:
                actor = authenticate_in(tx, bearer)
        except TaskError as err:
            self._audit_refusal("anonymous", "", name, digest, err)
            raise
        return self.dispatch(actor, name, raw, route=route, door=door, _digest=digest)

    def authenticate(self, bearer: str | None) -> Actor:
        """Authenticate a bearer token without dispatching (adapters that hold a session)."""
        if not bearer:
            raise TaskError(ErrorCode.UNAUTHENTICATED, "send 'Authorization: Bearer <token>'")
        with self.storage.read() as tx:
            return authenticate_in(tx, bearer)

    def _check(self, op: Operation[Any, Any] | None, name: str, actor: Actor,
               route: Route | None, door: Door) -> Operation[Any, Any]:
        if op is None:
            raise TaskError(ErrorCode.UNKNOWN_OPERATION, f"there is no operation {name[:64]!r}; "
                            "list the operations with 'agent-task call --list'")
        if door not in op.doors:
            raise TaskError(ErrorCode.NOT_FOUND, f"{op.name} is not offered through {door.value}")
        if op.route_required and route is None:
            raise TaskError(ErrorCode.BAD_INPUT, f"{op.name} needs a repository and profile route")
        if actor.tier < op.min_tier:
            raise TaskError(ErrorCode.FORBIDDEN, f"{op.name} needs the {op.min_tier.wire} tier; "
                            f"this token is {actor.tier.wire}")
        if actor.autonomy < op.min_autonomy:
            raise TaskError(ErrorCode.AUTONOMY_EXCEEDED, f"{op.name} is {op.risk.value} and needs "
                            f"autonomy {op.min_autonomy}; this token has {actor.autonomy}")
        return op

    def _encode(self, result: Any) -> bytes:
        if isinstance(result, RawJson):
            return result.body
        return dumps(self.codec.unstructure(result))

    def dispatch(
        self,
        actor: Actor,
        name: str,
        raw: bytes | str | Mapping[str, Any] | None,
        *,
        route: Route | None = None,
        door: Door = Door.IN_PROCESS,
        _digest: str | None = None,
    ) -> Response:
        """Run operation ``name`` for ``actor`` on ``raw`` input; audit exactly once.

        Raises :class:`TaskError` on any refusal; the refusal is audited before it is raised.
        """
        digest = _digest or domain_digest(AUDIT_INPUT_DOMAIN, _raw_bytes(raw))
        try:
            op = self._check(self.registry.get(name), name, actor, route, door)
            if raw is None:
                raw = b"{}"
            request = self.codec.decode(op.input_type, raw, max_bytes=op.max_input_bytes)
        except TaskError as err:
            self._audit_refusal(actor.token_id, actor.workspace, name, digest, err)
            raise
        try:
            if op.tx is TxMode.OWN:
                ctx = CallContext(service=self, actor=actor, tx=None, route=route, door=door,
                                  raw_digest=digest)
                body = self._encode(op.handler(ctx, request))
                with self.storage.write() as tx:
                    self._audit(tx, actor.token_id, actor.workspace, name, digest, "OK")
                return Response(body)
            with self.storage.write() as tx:
                # The live authorization guard: the token must still be valid inside the
                # transaction that acts on it (revocation serializes with this commit).
                # In-process actors built by trusted code have no token record.
                record = tx.tokens.get(actor.token_id)
                if record is not None and record.revoked_at_ms is not None:
                    raise TaskError(ErrorCode.TOKEN_REVOKED, "the bearer token was revoked")
                ctx = CallContext(service=self, actor=actor, tx=tx, route=route, door=door,
                                  raw_digest=digest)
                body = self._encode(op.handler(ctx, request))
                self._audit(tx, actor.token_id, actor.workspace, name, digest, "OK")
            return Response(body)
        except TaskError as err:
            self._audit_refusal(actor.token_id, actor.workspace, name, digest, err)
            raise
        except Exception as exc:  # noqa: BLE001 - a handler bug must not become a traceback
            err = TaskError(ErrorCode.INTERNAL, f"internal error in {name} ({type(exc).__name__});"
                            " the request was not applied")
            self._audit_refusal(actor.token_id, actor.workspace, name, digest, err)
            raise err from exc
