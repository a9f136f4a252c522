"""The one front door: an operation registry and :meth:`Service.dispatch`.

Every call, whichever door it comes through (HTTP, MCP, CLI, in-process), takes one path::

    authenticate -> registry lookup -> surface/door/route check -> tier check -> autonomy check
      -> strict decode -> [prepare, outside any transaction] -> [hold, e.g. the workspace
      guard] -> handler inside one journal transaction (which re-checks the token)
      -> exactly one audit event, in that same transaction

A refused call is audited too (in its own transaction, after the failed one rolled back), so
the audit count always equals the call count; a transport that refuses a request before it
reaches dispatch (too large, wrong media type) reports it through :meth:`Service.refuse`.
Adapters enumerate :meth:`Registry.select` and translate; they hold no logic of their own.

Workflow operations are registered as ``workflow.<op>`` and reached through one envelope,
``{"operation": "<op>", "request": {...}}``, with the repository and profile taken from the
URL (:class:`Route`); :meth:`Service.call_workflow` decodes the envelope and wraps the result
as ``{"capability", "schema_version", "operation", "result"}``.

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

import contextlib
import enum
import importlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Generic, TypeVar

import attrs

from taskcore.actors import Actor, RiskClass, Tier
from taskcore.audit import AGGREGATED_DIGEST, ANONYMOUS, AuditLog, input_digest
from taskcore.auth import authenticate_in
from taskcore.clock import Clock, SystemClock
from taskcore.codec import Codec, dumps, wire_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import AUDIT_VERB_MAX_CHARS, REQUEST_BODY_MAX_BYTES
from taskcore.names import WORKFLOW_PREFIX
from taskcore.ratelimit import RateLimiter, RateLimits
from taskcore.store.storage import JoinedStorage, Storage, Transaction, open_storage

__all__ = [
    "MCP_TOOL_NAME_PATTERN",
    "WORKFLOW_PREFIX",
    "CallContext",
    "CallObserved",
    "CommitThenRefuse",
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
    "WorkflowCall",
    "audit_subject",
    "audit_workspace",
    "default_registry",
    "portable_tool_name",
]

I = TypeVar("I")  # noqa: E741 - conventional name for an input type variable
O = TypeVar("O")  # noqa: E741 - conventional name for an output type variable

_OPERATION_NAME = re.compile(r"[a-z][A-Za-z0-9_.]{0,127}")
_ROUTE_SEGMENT = re.compile(r"[A-Za-z0-9._-]{1,128}")

WORKFLOW_OPERATION_PATTERN = r"[a-z][a-z0-9_]{0,63}"
"""The spelling of ``operation`` in the workflow envelope (``claim``, ``collector_upload``)."""

MCP_TOOL_NAME_PATTERN = r"[a-zA-Z0-9_-]{1,64}"
"""The tool names every MCP client accepts (Claude Desktop and claude.ai withhold all of a
server's tools when one name fails it; the OpenAI API refuses the others)."""


def portable_tool_name(name: str) -> str:
    """The MCP tool name of an operation's local name: the one rule is ``.`` -> ``_``.

    HTTP (``POST /v/agenttask.cancel``), the audit log and the CLI keep the dotted names the
    seeds spell; only MCP tool names are mapped. The registry refuses an operation whose
    mapped name collides with another's or (for an MCP tool) fails
    :data:`MCP_TOOL_NAME_PATTERN`, so the mapping is reversible.

    >>> portable_tool_name("agenttask.checkpoint.write")
    'agenttask_checkpoint_write'
    >>> portable_tool_name("session_gate")
    'session_gate'
    """
    return name.replace(".", "_")


# Modules that contribute operations: each exports ``register(registry)``.
_OPERATION_MODULES: tuple[str, ...] = (
    "taskcore.queue.operations",
    "taskcore.gate.operations",
    "taskcore.workflow.operations",
    "taskcore.collector.operations",
    "taskcore.observe.operations",
    "taskcore.evidence.operations",
    "taskcore.operator_ops",
)


class Surface(enum.Enum):
    """Which family an operation belongs to; adapters route by it."""

    QUEUE = "queue"
    WORKFLOW = "workflow"
    ADMIN = "admin"
    GATE = "gate"
    OPERATOR = "operator"


class Door(enum.Enum):
    """Which transport a call came through (recorded for capability checks)."""

    HTTP = "http"
    MCP = "mcp"
    CLI = "cli"
    IN_PROCESS = "in_process"
    BOARD = "board"


class TxMode(enum.Enum):
    """How the handler runs: inside the call's write transaction, or managing its own.

    ``WRITE`` handlers share one ``BEGIN IMMEDIATE`` transaction with the audit event, so the
    effect and its audit commit together (an operation with slow work to do first, such as
    reading git, gives it to :attr:`Operation.prepare`, which runs before that transaction
    opens). ``OWN`` handlers (long reads that must not hold the writer: a landing check, an
    operator read of retained transfer bytes, the done gate's own index) open their own
    read transactions; their audit event is appended after they return.
    """

    WRITE = "write"
    OWN = "own"


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


@attrs.frozen(kw_only=True)
class ServiceConfig:
    """Service-wide settings.

    ``rate_limits`` are applied to network requests (:meth:`Service.admit`); ``None`` (the
    default for an embedded service) applies none, ``agent-task serve`` always sets them.
    ``session_gate_workspaces`` says whose tokens may ask ``session_gate`` about this host's
    coding-agent sessions through a network door (HTTP, MCP): by default nobody's (the tool
    answers from the service host's own transcripts, which belong to no workspace); the
    operator of a single-user host names the workspace they belong to. ``None`` lets every
    caller ask (``agent-task mcp --stdio``, whose caller is the local user).
    """

    data_dir: Path
    lease_max_ms: int = 60 * 60 * 1000
    busy_timeout_ms: int = 10_000
    rate_limits: RateLimits | None = None
    session_gate_workspaces: frozenset[str] | None = frozenset()


@attrs.frozen
class RawJson:
    """A handler result that is already encoded (a retained outcome returned byte for byte)."""

    body: bytes


@attrs.frozen
class CommitThenRefuse:
    """A handler result: keep what the transaction wrote, yet answer the caller with ``error``.

    For refusals that must leave a trace, such as the lease runaway guard that requeues the
    task and refuses the renewal: the effects and the audit event (with the error's code)
    commit together in the call's one transaction, then ``error`` is raised to the caller.
    """

    error: TaskError


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

    @property
    def storage(self) -> Storage:
        """The storage a handler's domain code should use.

        Inside the call's transaction it is that transaction (:class:`JoinedStorage`: its
        ``write()`` and ``read()`` neither begin nor commit), so everything the handler
        calls commits with the call's audit event; for ``prepare`` and ``TxMode.OWN``
        handlers, which run outside it, the service's storage.
        """
        if self.tx is None:
            return self.service.storage
        return JoinedStorage(self.tx)


Handler = Callable[[CallContext, Any], Any]


@attrs.frozen(kw_only=True)
class CallObserved:
    """What a call observer sees once per call: never the input, the actor or the result.

    ``operation`` is a registered name, or ``"unknown"`` for a name the registry does not
    hold (callers choose those, so they must not become metric labels). ``door`` is ``None``
    for a refusal a transport reported through :meth:`Service.refuse`. ``code`` is ``"OK"``
    or the error's wire code; ``seconds`` the time spent in the front door.
    """

    operation: str
    door: Door | None
    code: str
    seconds: float


def audit_subject(request: Any, result: Any = None) -> str | None:
    """The task a call named, for its audit event: ``taskId`` of the input, else of the result.

    >>> class In: task_id = "at_1"
    >>> audit_subject(In())
    'at_1'
    >>> audit_subject(None) is None
    True
    """
    for source in (request, result, getattr(result, "task", None)):
        for attr in ("task_id", "agent_task_id"):
            value = getattr(source, attr, None)
            if isinstance(value, str) and value:
                return value[:AUDIT_VERB_MAX_CHARS]
    return None


def audit_workspace(result: Any) -> str:
    """The workspace an act of an actor without one names: its result's ``workspace``.

    The local operator belongs to no workspace; its acts are audited under the workspace
    they act on, so that workspace's audit feed shows them.

    >>> class Out: workspace = "acme"
    >>> audit_workspace(Out()), audit_workspace(None)
    ('acme', '')
    """
    value = getattr(result, "workspace", None)
    return value if isinstance(value, str) else ""


@attrs.frozen(kw_only=True)
class Operation(Generic[I, O]):
    """One registered operation: its name, types, who may call it and the handler.

    ``input_type`` is an attrs wire type decoded strictly from JSON, or ``bytes`` for an
    operation that takes a raw body (the collector upload): its handler gets the bytes as
    they arrived, bounded by ``max_input_bytes``. ``output_type`` is an attrs class used for
    documentation and schemas, or ``None`` when the output is a free-form JSON object
    described by ``summary``. ``mcp`` says whether the queue MCP endpoint offers it as a
    tool (workflow operations are offered on the workspace MCP endpoint unless ``doors``
    leaves out MCP). ``route_required`` operations take repository and profile from the URL.
    ``description`` is the longer text tools and ``/openapi.json`` show after ``summary``.
    See :attr:`mcp_tool` for exactly which operations MCP offers.

    ``prepare`` (``TxMode.WRITE`` only) is the first phase of a two-phase operation: it runs
    with the decoded input before the call's transaction opens (``ctx.tx`` is ``None``; it
    may read in a transaction of its own and do slow work such as reading git), and the
    handler then gets its result instead of the input, inside the call's transaction. A
    refusal in either phase is audited once. ``hold`` is entered after ``prepare`` and
    before the transaction opens, and held until it commits: the workflow operations take
    the actor/workspace guard there (the seed's lock order: guard, then transaction).
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
    prepare: Callable[[CallContext, I], Any] | None = None
    hold: Callable[[CallContext], AbstractContextManager[None]] | None = None
    route_required: bool = False
    max_input_bytes: int = REQUEST_BODY_MAX_BYTES
    doors: frozenset[Door] = frozenset(Door)
    description: str = ""

    @property
    def min_autonomy(self) -> int:
        """The smallest autonomy level allowed to call this operation (fixed by its risk)."""
        return self.risk.min_autonomy

    @property
    def raw_input(self) -> bool:
        """Whether the handler takes the raw request bytes instead of a decoded JSON object."""
        return self.input_type is bytes

    @property
    def local_name(self) -> str:
        """The name a route or tool uses: ``claim`` for ``workflow.claim``, else the full name.

        >>> op = Operation(name="workflow.claim", summary="", input_type=bytes, output_type=None,
        ...     min_tier=Tier.AGENT, risk=RiskClass.WRITE, idempotent=False, mcp=False,
        ...     surface=Surface.WORKFLOW, handler=lambda ctx, req: None)
        >>> op.local_name
        'claim'
        """
        if self.surface is Surface.WORKFLOW:
            return self.name.removeprefix(WORKFLOW_PREFIX)
        return self.name

    @property
    def tool_name(self) -> str:
        """The MCP tool name: :func:`portable_tool_name` of :attr:`local_name`.

        >>> op = Operation(name="agenttask.claimNext", summary="", input_type=bytes,
        ...     output_type=None, min_tier=Tier.AGENT, risk=RiskClass.WRITE, idempotent=False,
        ...     mcp=True, surface=Surface.QUEUE, handler=lambda ctx, req: None)
        >>> op.tool_name
        'agenttask_claimNext'
        """
        return portable_tool_name(self.local_name)

    def admits(self, actor: Actor) -> bool:
        """Whether ``actor``'s tier and autonomy reach this operation (what a door may list).

        The front door still checks both on every call (and a presented approval grant can
        lift the autonomy bound for one call); this only decides what to offer.
        """
        return actor.tier >= self.min_tier and actor.autonomy >= self.min_autonomy

    @property
    def mcp_tool(self) -> bool:
        """Whether an MCP endpoint offers this operation as a tool (listed and callable).

        Queue and done-gate operations are tools when ``mcp`` is set; workflow operations are
        tools on the workspace endpoint unless they take raw bytes (the upload stays on its
        HTTP route); admin operations never are. ``doors`` must include MCP in every case.
        """
        if Door.MCP not in self.doors or self.raw_input:
            return False
        if self.surface is Surface.WORKFLOW:
            return True
        return self.mcp and self.surface in (Surface.QUEUE, Surface.GATE)

    @property
    def description_text(self) -> str:
        """``summary`` followed by ``description`` (when there is one)."""
        return f"{self.summary}\n\n{self.description}".strip() if self.description else self.summary


class Registry:
    """The operations every door enumerates. Names are unique; order is registration order."""

    def __init__(self) -> None:
        self._ops: dict[str, Operation[Any, Any]] = {}
        self._tools: dict[str, str] = {}
        self._lock = threading.Lock()

    def register(self, op: Operation[Any, Any]) -> None:
        """Add ``op``; a duplicate or malformed name is a programming error.

        So is a tool name (:attr:`Operation.tool_name`) that another operation already maps
        to, or an MCP tool whose name does not match :data:`MCP_TOOL_NAME_PATTERN`.
        """
        if _OPERATION_NAME.fullmatch(op.name) is None:
            raise ValueError(f"operation name {op.name!r} is malformed")
        if op.surface is Surface.WORKFLOW and (
            not op.name.startswith(WORKFLOW_PREFIX)
            or re.fullmatch(WORKFLOW_OPERATION_PATTERN, op.local_name) is None
        ):
            raise ValueError(f"workflow operation {op.name!r} must be named 'workflow.<op>'")
        if op.mcp_tool and re.fullmatch(MCP_TOOL_NAME_PATTERN, op.tool_name) is None:
            raise ValueError(
                f"MCP tool name {op.tool_name!r} of {op.name!r} must match {MCP_TOOL_NAME_PATTERN}"
            )
        with self._lock:
            if op.name in self._ops:
                raise ValueError(f"operation {op.name!r} is registered twice")
            if op.tool_name in self._tools:
                raise ValueError(
                    f"operation {op.name!r} maps to the tool name {op.tool_name!r} of "
                    f"{self._tools[op.tool_name]!r}"
                )
            self._ops[op.name] = op
            self._tools[op.tool_name] = op.name

    def get(self, name: str) -> Operation[Any, Any] | None:
        """Return the operation called ``name``, or ``None``."""
        return self._ops.get(name)

    def for_tool(
        self, tool_name: str, surfaces: Iterable[Surface] | None = None
    ) -> Operation[Any, Any] | None:
        """Return the operation an MCP tool name stands for (of ``surfaces``), or ``None``.

        The listed name is the portable one (``agenttask_cancel``); ``tools/call`` also
        accepts the operation's own dotted spelling (``agenttask.cancel``, the seed's "MCP
        tool agenttask.cancel"), which is never listed. Both resolve to one operation: tool
        names are unique and never contain a dot.
        """
        op = self._ops.get(self._tools.get(tool_name, tool_name))
        wanted = None if surfaces is None else frozenset(surfaces)
        if op is None or (wanted is not None and op.surface not in wanted):
            return None
        return op

    def __iter__(self) -> Iterator[Operation[Any, Any]]:
        return iter(list(self._ops.values()))

    def __len__(self) -> int:
        return len(self._ops)

    def names(self, surface: Surface | None = None) -> tuple[str, ...]:
        """Return operation names (of one surface), sorted."""
        return tuple(sorted(o.name for o in self._ops.values() if surface in (None, o.surface)))

    def select(
        self,
        *,
        surfaces: Iterable[Surface] | None = None,
        door: Door | None = None,
        mcp: bool | None = None,
        raw_input: bool | None = None,
    ) -> tuple[Operation[Any, Any], ...]:
        """Return the operations a door offers, sorted by name.

        ``surfaces`` keeps those families, ``door`` those reachable through it, ``mcp`` those
        whose ``mcp`` flag matches and ``raw_input`` those taking raw bytes (or JSON).
        """
        wanted = None if surfaces is None else frozenset(surfaces)
        out = [
            op
            for op in self._ops.values()
            if (wanted is None or op.surface in wanted)
            and (door is None or door in op.doors)
            and (mcp is None or op.mcp is mcp)
            and (raw_input is None or op.raw_input is raw_input)
        ]
        return tuple(sorted(out, key=lambda o: o.name))


def default_registry() -> Registry:
    """Build the registry with every operation taskcore ships."""
    registry = Registry()
    for module_name in _OPERATION_MODULES:
        importlib.import_module(module_name).register(registry)
    return registry


_input_digest = input_digest

_NEED_BEARER = "send 'Authorization: Bearer <token>'"


def _list_hint(door: Door) -> str:
    """Where a caller of ``door`` finds what it can call (MCP clients: ``tools/list``)."""
    if door is Door.MCP:
        return "list the tools with tools/list"
    return "list the operations with 'agent-task call --list' or GET /openapi.json"


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
        self._write_lock = threading.Lock()
        self.observers: list[Callable[[CallObserved], None]] = []
        """Called once per call after it is audited (metrics); must not raise or block."""
        limits = config.rate_limits
        self._token_calls: RateLimiter | None = None
        self._address_refusals: RateLimiter | None = None
        if limits is not None:
            self._token_calls = RateLimiter(
                rate=limits.token_calls_per_second,
                burst=limits.token_calls_burst,
                keys_max=limits.keys_max,
                clock=self.clock,
            )
            self._address_refusals = RateLimiter(
                rate=limits.address_refusals_per_second,
                burst=limits.address_refusals_burst,
                keys_max=limits.keys_max,
                clock=self.clock,
            )
        self.audit = AuditLog(self.write, self.clock)
        """The one audit writer of this front door (:mod:`taskcore.audit`)."""

    @classmethod
    def open(
        cls,
        data_dir: Path | str,
        *,
        clock: Clock | None = None,
        registry: Registry | None = None,
        init: bool = False,
        **config: Any,
    ) -> Service:
        """Open (creating if needed) the journal in ``data_dir`` and build a service on it.

        The authority's descriptor-signing key (``DATA_DIR/authority-key.json``) is generated
        here the first time.
        A journal is created only in a data directory that holds no state of an earlier one
        (``JOURNAL_MISSING`` otherwise); ``init=True`` moves that state aside first
        (see :mod:`taskcore.store.datadir`).
        """
        config_obj = ServiceConfig(data_dir=Path(data_dir), **config)
        storage = open_storage(
            data_dir, create=True, busy_timeout_ms=config_obj.busy_timeout_ms, init=init
        )
        # The authority's descriptor-signing key is made with the data dir it belongs to.
        from taskcore.collector.authority_key import ensure_authority_key

        ensure_authority_key(config_obj.data_dir)
        return cls(storage, config=config_obj, clock=clock, registry=registry)

    def close(self) -> None:
        """Write the aggregated refusals still counted, then release storage."""
        self.audit.close()
        self.storage.close()

    @contextlib.contextmanager
    def write(self) -> Iterator[Transaction]:
        """A write transaction, queued behind this process's other writers.

        SQLite admits one writer at a time; threads of one process that all try ``BEGIN
        IMMEDIATE`` at once would wait in SQLite's sleeping busy handler and wake late. They
        wait on a lock here instead and go in turn (other processes still meet the busy
        timeout). ``TxMode.OWN`` handlers should open their writes here too.
        """
        with self._write_lock, self.storage.write() as tx:
            yield tx

    def ping(self) -> None:
        """Raise ``STORAGE_UNAVAILABLE`` unless storage answers (the health check; no auth)."""
        self.storage.ping()

    def health(self) -> dict[str, Any]:
        """The health answer: storage answers; its backend and schema version per component.

        Raises ``STORAGE_UNAVAILABLE`` unless storage answers.
        """
        self.storage.ping()
        return {"status": "ok", "backend": self.storage.backend, "schema": self.storage.schema()}

    # -- auditing (through taskcore.audit, the one writer) ------------------------------------
    def _audit(
        self,
        tx: Transaction,
        actor: str,
        workspace: str,
        name: str,
        digest: str,
        outcome: str,
        subject: str | None = None,
    ) -> None:
        self.audit.record(tx, actor, workspace, name, digest, outcome, subject)

    def _audit_refusal(
        self,
        actor: str,
        workspace: str,
        name: str,
        digest: str,
        error: TaskError,
        subject: str | None = None,
    ) -> None:
        self.audit.refusal(actor, workspace, name, digest, error, subject)

    def flush_refusals(self) -> int:
        """Write the aggregated refusals counted so far; return how many calls were written."""
        return self.audit.flush()

    def audit_count(self, *, workspace: str | None = None, operation: str | None = None) -> int:
        """Count audited calls (tests and operators); aggregated refusals are written first."""
        self.flush_refusals()
        with self.storage.read() as tx:
            return tx.audit.count(workspace=workspace, operation=operation)

    def refuse(
        self,
        bearer: str | None,
        name: str,
        error: TaskError,
        raw: bytes | str | Mapping[str, Any] | None = b"",
    ) -> TaskError:
        """Audit a call a transport refused before dispatch and return ``error`` to raise.

        Adapters use it for what only the transport can see (a body over its bound, a wrong
        content type, a missing credential on an MCP request), so those calls are audited like
        every other. The event is attributed to the token when it authenticates.
        """
        token_id, workspace = ANONYMOUS, ""
        if bearer:
            try:
                actor = self.authenticate(bearer)
                token_id, workspace = actor.token_id, actor.workspace
            except TaskError:
                pass  # an unknown or revoked token is audited as anonymous
        self._audit_refusal(token_id, workspace, name, _input_digest(raw), error)
        self._observe(name, None, error.code.value, 0.0)
        return error

    def _observe(self, name: str, door: Door | None, code: str, seconds: float) -> None:
        if not self.observers:
            return
        event = CallObserved(
            operation=name if self.registry.get(name) is not None else "unknown",
            door=door,
            code=code,
            seconds=seconds,
        )
        for observer in list(self.observers):
            with contextlib.suppress(Exception):  # metrics must never fail a call
                observer(event)

    # -- calling ----------------------------------------------------------------------------
    def authenticate(self, bearer: str | None) -> Actor:
        """Authenticate a bearer token without dispatching (adapters that hold a session)."""
        if not bearer:
            raise TaskError(ErrorCode.UNAUTHENTICATED, _NEED_BEARER)
        with self.storage.read() as tx:
            return authenticate_in(tx, bearer)

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
    ) -> Actor:
        """Decide, from a network request's headers alone, whether it may send its body.

        Transports call this before they read a byte of body, then read the (bounded) body
        and :meth:`call` as usual; an admitted request is audited by that call, a refused one
        here, once. In order:

        1. the bearer token must authenticate; a failure counts against ``client`` (the
           peer address) and, once that address has spent its refusal budget, is answered
           ``RATE_LIMITED`` with a retry time instead of ``UNAUTHENTICATED``;
        2. the token must have calls left in its budget (``RATE_LIMITED``);
        3. with ``name``, the operation must exist on this route and door, and the token's
           tier and autonomy must allow it (the checks :meth:`dispatch` makes before it
           decodes anything).

        Without :attr:`ServiceConfig.rate_limits` only 1 and 3 apply. A refusal is audited
        under ``name``, or ``label`` when the operation is not known yet (``workflow``,
        ``mcp.queue``).
        """
        shown = name or label
        try:
            actor = self.authenticate(bearer)
        except TaskError as err:
            refusal = self._address_refusal(client, err)
            self._audit_refusal(ANONYMOUS, "", shown, AGGREGATED_DIGEST, refusal)
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
                self._audit_refusal(
                    actor.token_id, actor.workspace, shown, AGGREGATED_DIGEST, limited
                )
                self._observe(shown, door, limited.code.value, 0.0)
                raise limited
        if name is not None:
            wanted = None if surfaces is None else frozenset(surfaces)
            try:
                self._check(self.registry.get(name), name, actor, route, door, wanted)
            except TaskError as err:
                self._audit_refusal(actor.token_id, actor.workspace, name, _input_digest(b""), err)
                self._observe(name, door, err.code.value, 0.0)
                raise
        return actor

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

    def call(
        self,
        bearer: str | None,
        name: str,
        raw: bytes | str | Mapping[str, Any] | None,
        *,
        route: Route | None = None,
        door: Door = Door.IN_PROCESS,
        surfaces: Iterable[Surface] | None = None,
    ) -> Response:
        """Authenticate ``bearer`` and dispatch; failed authentication is audited too."""
        digest = _input_digest(raw)
        try:
            actor = self.authenticate(bearer)
        except TaskError as err:
            self._audit_refusal(ANONYMOUS, "", name, digest, err)
            self._observe(name, door, err.code.value, 0.0)
            raise
        return self.dispatch(
            actor, name, raw, route=route, door=door, surfaces=surfaces, _digest=digest
        )

    def call_workflow(
        self,
        principal: str | Actor | None,
        raw: bytes | str | Mapping[str, Any] | None,
        *,
        route: Route,
        door: Door = Door.IN_PROCESS,
        operation: str | None = None,
    ) -> Response:
        """Run one workflow envelope ``{"operation", "request"}`` for ``route``.

        ``principal`` is a bearer token (authenticated here) or an already authenticated
        actor. With ``operation`` given, ``raw`` is that operation's own input rather than an
        envelope (the collector upload route passes the transfer bytes this way). The success
        body is ``{"capability", "schema_version", "operation", "result"}``; the result bytes
        are embedded unchanged (retained outcomes stay byte exact). Every refusal, including a
        malformed envelope, is audited once.
        """
        digest = _input_digest(raw)
        name = "workflow" if operation is None else WORKFLOW_PREFIX + operation
        if isinstance(principal, Actor):
            actor = principal
        else:
            try:
                actor = self.authenticate(principal)
            except TaskError as err:
                self._audit_refusal(ANONYMOUS, "", name, digest, err)
                raise
        if operation is None:
            try:
                envelope = self.codec.decode(WorkflowCall, b"" if raw is None else raw)
            except TaskError as err:
                self._audit_refusal(actor.token_id, actor.workspace, name, digest, err)
                raise
            operation, raw = envelope.operation, envelope.request
        response = self.dispatch(
            actor,
            WORKFLOW_PREFIX + operation,
            raw,
            route=route,
            door=door,
            surfaces=(Surface.WORKFLOW,),
            _digest=digest,
        )
        return Response(self.wrap_workflow(operation, response.body))

    @staticmethod
    def wrap_workflow(operation: str, result: bytes) -> bytes:
        """Return the workflow success body naming the capability around ``result`` bytes.

        >>> Service.wrap_workflow("status", b'{"state":"claimed"}')
        b'{"capability":"agentscm.agent-workflow-tasks/v1","schema_version":1,"operation":"status","result":{"state":"claimed"}}'
        """
        from taskcore import CAPABILITY, SCHEMA_VERSION

        head = dumps(
            {"capability": CAPABILITY, "schema_version": SCHEMA_VERSION, "operation": operation}
        )
        return head[:-1] + b',"result":' + result + b"}"

    def _check(
        self,
        op: Operation[Any, Any] | None,
        name: str,
        actor: Actor,
        route: Route | None,
        door: Door,
        surfaces: frozenset[Surface] | None,
        *,
        granted: bool = False,
    ) -> Operation[Any, Any]:
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

    def _decode(self, op: Operation[Any, Any], raw: bytes | str | Mapping[str, Any] | None) -> Any:
        if op.raw_input:
            if not isinstance(raw, bytes | bytearray | memoryview):
                raise TaskError(
                    ErrorCode.BAD_INPUT,
                    f"{op.name} takes the raw transfer bytes on its upload route, not JSON",
                )
            if len(raw) > op.max_input_bytes:
                raise TaskError(
                    ErrorCode.PAYLOAD_TOO_LARGE,
                    f"the body is {len(raw)} bytes; the limit is {op.max_input_bytes} bytes",
                )
            return bytes(raw)
        return self.codec.decode(
            op.input_type, b"{}" if raw is None else raw, max_bytes=op.max_input_bytes
        )

    def _encode(self, result: Any) -> bytes:
        if isinstance(result, RawJson):
            return result.body
        return dumps(self.codec.unstructure(result))

    def run_granted(self, ctx: CallContext, name: str, raw: Mapping[str, Any]) -> Any:
        """Run ``name`` on ``raw`` inside ``ctx``'s transaction, beyond the actor's autonomy.

        The admission of an approval grant: the calling handler (``agenttask.gate.apply``) has
        verified the grant and consumes it in this same transaction, so the call and the
        consumption commit or roll back together. Every other check of the front door applies
        (registry, door, route, tier, strict decoding, and the outer call's token re-check);
        only the autonomy bound of the operation's risk is lifted. The operation must run in
        the call's transaction (``TxMode.WRITE``) and take JSON. It gets its own audit event
        in that transaction, so the log shows the granted call beside the grant's. Returns the
        operation's plain JSON result.
        """
        tx = ctx.transaction()
        op = self._check(
            self.registry.get(name), name, ctx.actor, ctx.route, ctx.door, None, granted=True
        )
        if (
            op.tx is not TxMode.WRITE
            or op.raw_input
            or op.prepare is not None
            or op.hold is not None  # its lock comes before the writer's, not inside it
        ):
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                f"{op.name} manages its own transactions and cannot run under an approval grant",
            )
        request = self._decode(op, raw)
        digest = _input_digest(raw)
        result = op.handler(attrs.evolve(ctx, raw_digest=digest), request)
        if isinstance(result, CommitThenRefuse):
            raise result.error
        self._audit(tx, ctx.actor.token_id, ctx.actor.workspace, op.name, digest, "OK")
        return json.loads(self._encode(result))

    def dispatch(
        self,
        actor: Actor,
        name: str,
        raw: bytes | str | Mapping[str, Any] | None,
        *,
        route: Route | None = None,
        door: Door = Door.IN_PROCESS,
        surfaces: Iterable[Surface] | None = None,
        _digest: str | None = None,
    ) -> Response:
        """Run operation ``name`` for ``actor`` on ``raw`` input; audit exactly once.

        ``surfaces`` restricts which families the calling route serves (``POST /v/{verb}``
        serves queue and admin operations only); an operation outside them is unknown there.
        Raises :class:`TaskError` on any refusal; the refusal is audited before it is raised.
        Each observer in :attr:`observers` then sees the call once (:class:`CallObserved`).
        """
        return Response(self._run(actor, name, raw, route, door, surfaces, _digest)[1])

    def invoke(
        self,
        actor: Actor,
        name: str,
        raw: bytes | str | Mapping[str, Any] | None,
        *,
        route: Route | None = None,
        door: Door = Door.IN_PROCESS,
    ) -> Any:
        """:meth:`dispatch` for trusted in-process callers that want the result object.

        The same path (checks, decoding, one transaction, one audit event), but the
        handler's return value is handed back as it is instead of its encoded bytes (the
        operator's commands print records the way they always have).
        """
        return self._run(actor, name, raw, route, door, None, None)[0]

    def _run(
        self,
        actor: Actor,
        name: str,
        raw: bytes | str | Mapping[str, Any] | None,
        route: Route | None,
        door: Door,
        surfaces: Iterable[Surface] | None,
        digest: str | None,
    ) -> tuple[Any, bytes]:
        started = time.perf_counter()
        code = ErrorCode.INTERNAL.value
        try:
            outcome = self._dispatch(actor, name, raw, route, door, surfaces, digest)
            code = "OK"
            return outcome
        except TaskError as err:
            code = err.code.value
            raise
        finally:
            self._observe(name, door, code, time.perf_counter() - started)

    def _dispatch(
        self,
        actor: Actor,
        name: str,
        raw: bytes | str | Mapping[str, Any] | None,
        route: Route | None,
        door: Door,
        surfaces: Iterable[Surface] | None,
        _digest: str | None,
    ) -> tuple[Any, bytes]:
        digest = _digest or _input_digest(raw)
        wanted = None if surfaces is None else frozenset(surfaces)
        try:
            op = self._check(self.registry.get(name), name, actor, route, door, wanted)
            request = self._decode(op, raw)
        except TaskError as err:
            self._audit_refusal(actor.token_id, actor.workspace, name, digest, err)
            raise
        refusal: TaskError | None = None
        subject = audit_subject(request)
        outside = CallContext(
            service=self, actor=actor, tx=None, route=route, door=door, raw_digest=digest
        )
        try:
            if op.tx is TxMode.OWN:
                result = op.handler(outside, request)
                if isinstance(result, CommitThenRefuse):
                    refusal = result.error
                    self._audit_refusal(
                        actor.token_id, actor.workspace, name, digest, refusal, subject
                    )
                    body = b""
                else:
                    body = self._encode(result)
                    with self.write() as tx:
                        self._audit(
                            tx,
                            actor.token_id,
                            actor.workspace or audit_workspace(result),
                            name,
                            digest,
                            "OK",
                            audit_subject(request, result),
                        )
            else:
                prepared = request if op.prepare is None else op.prepare(outside, request)
                held = contextlib.nullcontext() if op.hold is None else op.hold(outside)
                with held, self.write() as tx:
                    # The live authorization guard: the token must still be valid inside the
                    # transaction that acts on it (revocation serializes with this commit).
                    # In-process actors built by trusted code have no token record.
                    record = tx.tokens.get(actor.token_id)
                    if record is not None and record.revoked_at_ms is not None:
                        raise TaskError(ErrorCode.TOKEN_REVOKED, "the bearer token was revoked")
                    ctx = attrs.evolve(outside, tx=tx)
                    result = op.handler(ctx, prepared)
                    if isinstance(result, CommitThenRefuse):
                        refusal = result.error
                        outcome, body = refusal.code.value, b""
                    else:
                        outcome, body = "OK", self._encode(result)
                    self._audit(
                        tx,
                        actor.token_id,
                        actor.workspace or audit_workspace(result),
                        name,
                        digest,
                        outcome,
                        audit_subject(request, result),
                    )
        except TaskError as err:
            self._audit_refusal(actor.token_id, actor.workspace, name, digest, err, subject)
            raise
        except Exception as exc:  # a handler bug must not become a traceback
            failure = TaskError(
                ErrorCode.INTERNAL,
                f"internal error in {name} ({type(exc).__name__}); the request was not applied",
            )
            self._audit_refusal(actor.token_id, actor.workspace, name, digest, failure, subject)
            raise failure from exc
        if refusal is not None:
            raise refusal
        return result, body
