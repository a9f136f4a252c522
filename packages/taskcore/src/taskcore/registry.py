"""The operation registry: what an operation is, and the registry every door enumerates.

:class:`Operation` names an operation's wire types, who may call it (tier, autonomy from its
risk), which doors and surface offer it, how its handler runs (:class:`TxMode`, ``prepare``,
``hold``) and the handler; :class:`CallContext` is what a handler gets besides its input;
:class:`RawJson`, :class:`CommitThenRefuse` and :class:`Wait` are the handler results the
front door treats specially; :class:`FrontDoor` is what a handler reaches of the service that
runs it, :class:`ServiceConfig` the service-wide settings it reads there and
:class:`WaitState` what it reaches of a waiting call. :func:`default_registry` collects every
module that contributes operations. :class:`~taskcore.service.Service` (the front door)
re-exports all of these names; this module imports nothing of it or of the waiting loop.
"""

from __future__ import annotations

import enum
import importlib
import re
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import attrs

from taskcore import jsontext
from taskcore.actors import Actor, RiskClass, Tier
from taskcore.clock import Clock
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    ADMISSION_MEMORY_MS,
    AUDIT_VERB_MAX_CHARS,
    CLAIM_WAITERS_MAX,
    CLAIM_WAITERS_PER_TOKEN,
    REQUEST_BODY_MAX_BYTES,
)
from taskcore.names import WORKFLOW_PREFIX
from taskcore.ratelimit import RateLimits
from taskcore.route import Route
from taskcore.store.storage import JoinedStorage, Storage, Transaction

__all__ = [
    "MCP_TOOL_NAME_PATTERN",
    "WORKFLOW_OPERATION_PATTERN",
    "CallContext",
    "CallObserved",
    "CallPending",
    "CommitThenRefuse",
    "Door",
    "FrontDoor",
    "Handler",
    "Operation",
    "RawJson",
    "Registry",
    "Response",
    "ServiceConfig",
    "Surface",
    "TxMode",
    "Wait",
    "WaitState",
    "audit_subject",
    "audit_workspace",
    "default_registry",
    "portable_tool_name",
]

I = TypeVar("I")  # noqa: E741 - conventional name for an input type variable


O = TypeVar("O")  # noqa: E741 - conventional name for an output type variable


_OPERATION_NAME = re.compile(r"[a-z][A-Za-z0-9_.]{0,127}")


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
    "taskcore.queue.held",
    "taskcore.queue.flow_operations",
    "taskcore.queue.sched_ops",
    "taskcore.donegate.operations",
    "taskcore.workflow.operations",
    "taskcore.evidence.collector_operations",
    "taskcore.observe.operations",
    "taskcore.evidence.operations",
    "taskcore.operator_ops",
    "taskcore.oauth.operations",
    "taskcore.events.operations",
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


@attrs.frozen(kw_only=True)
class Wait:
    """A handler result of a waiting call: nothing to answer yet, and what to wait for.

    Only an operation declared ``waits`` returns it, and only when the call brought a
    :class:`~taskcore.waiting.WaitingCall` that is not at its end (``ctx.waiting``). The
    front door rolls the transaction back (nothing was written, nothing is audited yet) and
    raises :class:`CallPending`; the waiting loop (:mod:`taskcore.waiting`) waits for a
    notification of ``topic`` (as one of ``group``), or ``due_in_ms``, or the call's
    deadline, and calls again. The call's one audit event is its last attempt's.
    ``generation`` is the topic's :meth:`~taskcore.store.wakeup.Wakeup.generation`, read
    before the handler looked.
    """

    topic: str
    group: Hashable | None
    generation: int
    due_in_ms: int | None = None


class CallPending(Exception):  # noqa: N818 - not an error: a call that waits
    """Raised by the front door for a :class:`Wait` result: the call is to wait and retry."""

    def __init__(self, wait: Wait) -> None:
        super().__init__(f"waiting for {wait.topic}")
        self.wait = wait


@attrs.frozen
class Response:
    """A successful call: the exact response bytes."""

    body: bytes

    def json(self) -> Any:
        """Parse the body (:func:`taskcore.jsontext.loads`: orjson where a service loaded it)."""
        return jsontext.loads(self.body)


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
    admission_memory_ms: int = ADMISSION_MEMORY_MS
    claim_waiters_per_token: int = CLAIM_WAITERS_PER_TOKEN
    claim_waiters_max: int = CLAIM_WAITERS_MAX


class FrontDoor(Protocol):
    """What a handler reaches of the front door running it (:class:`~taskcore.service.Service`).

    A protocol, so that the registry (and every module registering operations) sits below the
    service: the service imports this module, never the other way round.
    """

    @property
    def storage(self) -> Storage:
        """The journal the service runs on."""
        ...

    @property
    def clock(self) -> Clock:
        """The service clock."""
        ...

    @property
    def config(self) -> ServiceConfig:
        """The service-wide settings."""
        ...

    @property
    def registry(self) -> Registry:
        """The operations the service dispatches."""
        ...

    def run_granted(self, ctx: CallContext, name: str, raw: Mapping[str, Any]) -> Any:
        """Run ``name`` inside ``ctx``'s transaction under an approval grant."""
        ...

    def run_nested(self, ctx: CallContext, name: str, raw: Mapping[str, Any]) -> Any:
        """Run ``name`` inside ``ctx``'s transaction with its own audit event (bulk acts)."""
        ...


class WaitState(Protocol):
    """What a handler of a waiting call reaches of it (:class:`~taskcore.waiting.WaitingCall`).

    A protocol, so the registry stays below the waiting loop that imports it.
    """

    found: bool
    """Set by a handler that found what it waited for (the wake-up is passed on)."""
    abandoned: bool
    """Set when the caller went away: the attempt answers at once and takes nothing."""

    def begin(self, token_id: str, wait_ms: int | None) -> bool:
        """Whether this attempt, which found nothing, should wait (else answer now)."""
        ...


@attrs.frozen(kw_only=True)
class CallContext:
    """What a handler gets besides its decoded input."""

    service: FrontDoor
    actor: Actor
    tx: Transaction | None
    route: Route | None
    door: Door
    raw_digest: str
    waiting: WaitState | None = None
    """The waiting call this attempt belongs to (an operation declared ``waits``), if any."""

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
        return JoinedStorage(self.tx, wakeup=self.service.storage.wakeup)


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

    ``offered_to`` narrows what :meth:`offers` says beyond tier and autonomy: whether the
    service would answer ``actor`` through ``door`` at all (``session_gate`` answers a
    network caller only for the workspaces the operator named). The handler still decides;
    this is the same rule asked before the call, so a door does not list what it refuses.

    ``row_safe`` declares that every read-modify-write the operation does (handler, token
    check, audit row) is guarded by a row lock, a row version compare-and-set or a unique
    key, so it stays correct beside other row-safe calls without the single-writer lock: a
    storage that can (PostgreSQL's ``write_shared``) runs such calls concurrently under the
    shared form of its writer lock, every other write still exclusive. SQLite ignores it.

    ``waits`` declares that the handler may answer :class:`Wait` (a call that has nothing to
    answer yet and asked to wait: a ``claimNext`` with ``waitMs``). Doors run such calls
    through :mod:`taskcore.waiting`; the front door does for in-process callers.

    ``read_ahead`` (a ``TxMode.WRITE`` operation) is called with the call's transaction,
    actor and (prepared) input before the token re-check: it tells the stores what the
    handler reads first (``QueueStore.read_ahead``), which a storage may send with the
    re-check in one round trip. A hint only: the handler reads as it always does.
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
    row_safe: bool = False
    offered_to: Callable[[FrontDoor, Actor, Door], bool] | None = None
    waits: bool = False
    read_ahead: Callable[[Transaction, Actor, I], None] | None = None

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

    def offers(self, service: FrontDoor, actor: Actor, door: Door) -> bool:
        """Whether a door should list this operation to ``actor`` (admits, and offered_to)."""
        if not self.admits(actor):
            return False
        return self.offered_to is None or self.offered_to(service, actor, door)

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
