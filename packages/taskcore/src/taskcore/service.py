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

Workflow operations are registered as ``workflow.<op>`` and reached through one envelope
(:mod:`taskcore.envelope`: :class:`Route`, :meth:`Service.call_workflow`). What an operation
is and the registry live in :mod:`taskcore.registry`; this module re-exports their names, so
``from taskcore.service import Operation, Registry, Route, ...`` keeps working.

>>> import tempfile, attrs
>>> from taskcore.actors import Actor, RiskClass, Tier
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
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import attrs

from taskcore.actors import Actor
from taskcore.admission import (
    Admission,
    Lapsed,
    authenticate_in_call,
    check_grantable,
    check_operation,
    defers_authentication,
)
from taskcore.audit import ANONYMOUS, AuditLog, input_digest
from taskcore.auth import authenticate_in, check_live_in
from taskcore.callnote import current_note, noting, valid_traceparent
from taskcore.clock import Clock, SystemClock
from taskcore.codec import Codec, default_codec, dumps
from taskcore.envelope import WorkflowCall, call_workflow, wrap_workflow
from taskcore.errors import ErrorCode, TaskError
from taskcore.names import WORKFLOW_PREFIX
from taskcore.registry import (
    MCP_TOOL_NAME_PATTERN,
    WORKFLOW_OPERATION_PATTERN,
    CallContext,
    CallObserved,
    CallPending,
    CommitThenRefuse,
    Door,
    Handler,
    Operation,
    RawJson,
    Registry,
    Response,
    ServiceConfig,
    Surface,
    TxMode,
    Wait,
    audit_subject,
    audit_workspace,
    default_registry,
    portable_tool_name,
)
from taskcore.route import Route
from taskcore.store.storage import (
    SharedWriteStorage,
    Storage,
    Transaction,
    journal_data_dir,
    open_storage,
)
from taskcore.tracing import Tracer
from taskcore.waiting import WaitingCall, WaitSlots, wait_blocking

__all__ = [
    "MCP_TOOL_NAME_PATTERN",
    "WORKFLOW_OPERATION_PATTERN",
    "WORKFLOW_PREFIX",
    "CallContext",
    "CallObserved",
    "CallPending",
    "CommitThenRefuse",
    "Door",
    "Handler",
    "Operation",
    "RawJson",
    "Registry",
    "Response",
    "Route",
    "Service",
    "ServiceConfig",
    "Surface",
    "TxMode",
    "Wait",
    "WaitingCall",
    "WorkflowCall",
    "audit_subject",
    "audit_workspace",
    "default_registry",
    "portable_tool_name",
]


_NEED_BEARER = "send 'Authorization: Bearer <token>'"
_NO_HOLD: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()  # stateless: shared


class Service:
    """The front door over one storage, one clock and one registry."""

    def __init__(
        self,
        storage: Storage,
        *,
        config: ServiceConfig,
        clock: Clock | None = None,
        registry: Registry | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        # jsontext parses and writes JSON with orjson where it is loaded: a service, not a hook.
        import orjson  # noqa: F401

        self.storage = storage
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self.registry = registry if registry is not None else default_registry()
        self.codec: Codec = default_codec()
        """The process-wide codec (its converter is built once; compiled hooks are shared)."""
        self._write_lock = threading.Lock()
        self.observers: list[Callable[[CallObserved], None]] = []
        """Called once per call after it is audited (metrics); must not raise or block."""
        self.tracer = tracer
        """One span per call when set (:mod:`taskcore.tracing`); ``None``: no tracing."""
        self.audit = AuditLog(self.write, self.clock, tracer)
        """The one audit writer of this front door (:mod:`taskcore.audit`)."""
        self._admission = Admission(
            registry=self.registry,
            audit=self.audit,
            # late-bound: admission authenticates with whatever ``authenticate`` is now
            authenticate=lambda bearer, resource: (
                self.authenticate(bearer)
                if resource is None
                else self.authenticate(bearer, resource=resource)
            ),
            observe=self._observe,
            clock=self.clock,
            limits=config.rate_limits,
            memory_ms=config.admission_memory_ms,
        )
        self.waiters = WaitSlots(
            per_token=config.claim_waiters_per_token, total=config.claim_waiters_max
        )
        """The bounds on waiting calls (:mod:`taskcore.waiting`), per token and in all."""

    @classmethod
    def open(
        cls,
        data_dir: Path | str | None = None,
        *,
        database: str | None = None,
        clock: Clock | None = None,
        registry: Registry | None = None,
        init: bool = False,
        tracer: Tracer | None = None,
        **config: Any,
    ) -> Service:
        """Open (creating if needed) the journal and build a service on it.

        ``data_dir``: default ``$AGENT_TASK_DATA_DIR`` or the user data dir; a URL is refused
        (``INVALID_PATH``). ``database``: as ``agent-task serve --database`` (a
        ``postgresql://`` URL is the journal, ``data_dir`` keeps the authority key; default
        ``$AGENT_TASK_DATABASE``; ``""``: SQLite in ``data_dir``). See docs/library.md. The
        authority key is generated here the first time; a journal is created only in a
        data dir without an earlier one's state (``JOURNAL_MISSING``; ``init=True`` moves it
        aside, :mod:`taskcore.store.datadir`).
        """
        directory = journal_data_dir(data_dir)
        config_obj = ServiceConfig(data_dir=directory, **config)
        timeout = config_obj.busy_timeout_ms
        storage = open_storage(
            directory, create=True, busy_timeout_ms=timeout, init=init, database=database
        )
        # The authority's descriptor-signing key is made with the data dir it belongs to.
        from taskcore.evidence.authority_key import ensure_authority_key

        ensure_authority_key(config_obj.data_dir)
        return cls(storage, config=config_obj, clock=clock, registry=registry, tracer=tracer)

    def close(self) -> None:
        """Write the aggregated refusals still counted, then release storage."""
        self.audit.close()
        self.storage.close()

    def write(self, *, shared: bool = False) -> contextlib.AbstractContextManager[Transaction]:
        """A write transaction, queued behind this process's other writers.

        A storage that queues and groups writers itself (``groups_writers``: the SQLite
        storage's group commit, :mod:`taskcore.store.groupcommit`) gets them concurrently;
        any other is entered one writer at a time. ``TxMode.OWN`` handlers should open their
        writes here too.

        ``shared`` is for a ``row_safe`` operation's call: a storage that offers
        ``write_shared`` (``shares_writers``: PostgreSQL's shared writer lock) runs it there,
        concurrently with other such calls and without this process's lock. Any other storage
        ignores it (SQLite's group commit already serializes every writer).
        """
        storage = self.storage
        if shared and getattr(storage, "shares_writers", False):
            return cast("SharedWriteStorage", storage).write_shared()
        if getattr(storage, "groups_writers", False):
            return storage.write()
        return self._locked_write()

    @contextlib.contextmanager
    def _locked_write(self) -> Iterator[Transaction]:
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
        self._audit_refusal(token_id, workspace, name, input_digest(raw), error)
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
    def authenticate(self, bearer: str | None, *, resource: str | None = None) -> Actor:
        """Authenticate a bearer token without dispatching (adapters that hold a session).

        ``resource``: the MCP endpoint's URL, where an OAuth access token is accepted too.
        """
        if not bearer:
            raise TaskError(ErrorCode.UNAUTHENTICATED, _NEED_BEARER)
        with self.storage.read() as tx:
            return authenticate_in(tx, bearer, resource=resource, now_ms=self.clock.now_ms())

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

        ``resource`` (an MCP endpoint's URL) admits OAuth access tokens issued for it.
        Without :attr:`ServiceConfig.rate_limits` only 1 and 3 apply. A refusal is audited
        under ``name``, or ``label`` when the operation is not known yet (``workflow``,
        ``mcp.queue``).
        """
        return self._admission.admit(
            bearer,
            name,
            client=client,
            route=route,
            door=door,
            surfaces=surfaces,
            label=label,
            resource=resource,
        )

    def admit_recent(
        self,
        bearer: str | None,
        name: str | None,
        *,
        door: Door = Door.HTTP,
        surfaces: Iterable[Surface] | None = None,
    ) -> Actor | None:
        """:meth:`admit` from memory alone, for a bearer it admitted within the last second.

        Never touches storage and never blocks, so a transport may ask it on its event loop
        and skip the worker thread :meth:`admit` needs. It answers the actor only when
        :meth:`admit` would admit the request (the bearer authenticated moments ago, its
        token has calls left, the operation exists on this door and the tier and autonomy
        allow it); ``None`` otherwise, and the transport asks :meth:`admit`, which decides
        and audits any refusal. The call then authenticates the bearer in its own
        transaction as after :meth:`admit`, so a revocation since is still refused there.
        Without ``name`` (MCP learns the tool from the body) only the bearer and its budget
        are decided, as :meth:`admit` does without one. How long "moments" is:
        :attr:`ServiceConfig.admission_memory_ms` (0: never).
        """
        return self._admission.admit_recent(bearer, name, door=door, surfaces=surfaces)

    def call(
        self,
        bearer: str | None,
        name: str,
        raw: bytes | str | Mapping[str, Any] | None,
        *,
        route: Route | None = None,
        door: Door = Door.IN_PROCESS,
        surfaces: Iterable[Surface] | None = None,
        admitted: Actor | None = None,
        traceparent: str | None = None,
        waiting: WaitingCall | None = None,
    ) -> Response:
        """Authenticate ``bearer`` and dispatch; failed authentication is audited too.

        ``traceparent`` is the W3C trace context the caller sent (ignored unless valid).

        ``admitted`` is the actor :meth:`admit` returned for this same ``bearer`` moments
        ago. For an operation that runs in the call's write transaction (no ``prepare``, no
        ``hold``) the bearer is then authenticated once, inside that transaction, where the
        live token check reads the token anyway, instead of again in a read transaction of
        its own first. What can change since admission is only a revocation; it is refused
        with the same error and audited the same way as when this method's own
        authentication finds it (a refusal of the request itself, found before the
        transaction, first authenticates the bearer again so that a revoked token is still
        what is reported). Any other operation authenticates as without ``admitted``.

        ``waiting`` is the :class:`~taskcore.waiting.WaitingCall` of an adapter that waits
        itself (:func:`taskcore.waiting.wait_async`): an attempt with nothing to answer yet
        raises :class:`CallPending`. Without it, a call of an operation that ``waits`` blocks
        this thread until it answers (:func:`taskcore.waiting.wait_blocking`).
        """
        digest = input_digest(raw)
        if admitted is not None and defers_authentication(self.registry.get(name)):
            try:
                return Response(
                    self._run(
                        admitted,
                        name,
                        raw,
                        route,
                        door,
                        surfaces,
                        digest,
                        bearer,
                        waiting=waiting,
                        traceparent=traceparent,
                    )[1]
                )
            except Lapsed as lapsed:
                if bearer:
                    self._admission.forget(bearer)
                self._audit_refusal(ANONYMOUS, "", name, digest, lapsed.error)
                self._observe(name, door, lapsed.error.code.value, 0.0)
                raise lapsed.error from None
        try:
            actor = self.authenticate(bearer)
        except TaskError as err:
            if bearer:
                self._admission.forget(bearer)
            self._audit_refusal(ANONYMOUS, "", name, digest, err)
            self._observe(name, door, err.code.value, 0.0)
            raise
        return self.dispatch(
            actor,
            name,
            raw,
            route=route,
            door=door,
            surfaces=surfaces,
            traceparent=traceparent,
            _digest=digest,
            waiting=waiting,
        )

    def call_workflow(
        self,
        principal: str | Actor | None,
        raw: bytes | str | Mapping[str, Any] | None,
        *,
        route: Route,
        door: Door = Door.IN_PROCESS,
        operation: str | None = None,
        traceparent: str | None = None,
    ) -> Response:
        """Run one workflow envelope for ``route`` (:func:`taskcore.envelope.call_workflow`)."""
        return call_workflow(
            self,
            principal,
            raw,
            route=route,
            door=door,
            operation=operation,
            traceparent=traceparent,
        )

    @staticmethod
    def wrap_workflow(operation: str, result: bytes) -> bytes:
        """The workflow success body around ``result`` (:func:`taskcore.envelope.wrap_workflow`)."""
        return wrap_workflow(operation, result)

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
        return self._run_inner(ctx, name, raw, granted=True)

    def run_nested(self, ctx: CallContext, name: str, raw: Mapping[str, Any]) -> Any:
        """Run ``name`` on ``raw`` inside ``ctx``'s transaction with its own audit event.

        A bulk act's step (``agenttask.requeueMany``: one event per task it changes), with
        every check of the front door, the autonomy bound included (:meth:`run_granted`).
        """
        return self._run_inner(ctx, name, raw, granted=False)

    def _run_inner(
        self, ctx: CallContext, name: str, raw: Mapping[str, Any], *, granted: bool
    ) -> Any:
        tx = ctx.transaction()
        op = check_operation(
            self.registry.get(name), name, ctx.actor, ctx.route, ctx.door, None, granted=granted
        )
        check_grantable(op)
        request = self._decode(op, raw)
        digest = input_digest(raw)
        # The granted call's own event: its own note (status moves), the same trace context.
        with noting(getattr(current_note(), "traceparent", None), door=ctx.door.value) as note:
            note.started_ns = time.time_ns()
            result = op.handler(attrs.evolve(ctx, raw_digest=digest), request)
            if isinstance(result, CommitThenRefuse):
                raise result.error
            self._audit(
                tx,
                ctx.actor.token_id,
                ctx.actor.workspace,
                op.name,
                digest,
                "OK",
                audit_subject(request, result),
            )
            if note.span is not None:
                note.span.end("OK")
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
        traceparent: str | None = None,
        _digest: str | None = None,
        waiting: WaitingCall | None = None,
    ) -> Response:
        """Run operation ``name`` for ``actor`` on ``raw`` input; audit exactly once.

        ``surfaces`` restricts which families the calling route serves (``POST /v/{verb}``
        serves queue and admin operations only); an operation outside them is unknown there.
        Raises :class:`TaskError` on any refusal; the refusal is audited before it is raised.
        Each observer in :attr:`observers` then sees the call once (:class:`CallObserved`).
        ``traceparent``: the caller's W3C trace context (:mod:`taskcore.tracing`); ``waiting``
        as for :meth:`call`.
        """
        return Response(
            self._run(
                actor,
                name,
                raw,
                route,
                door,
                surfaces,
                _digest,
                None,
                waiting=waiting,
                traceparent=traceparent,
            )[1]
        )

    def _waits(self, name: str) -> bool:
        """Whether ``name`` is an operation that may wait (see :attr:`Operation.waits`)."""
        op = self.registry.get(name)
        return op is not None and op.waits

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
        bearer: str | None = None,
        waiting: WaitingCall | None = None,
        traceparent: str | None = None,
    ) -> tuple[Any, bytes]:
        if waiting is None and self._waits(name):  # an in-process caller: wait in its thread
            return wait_blocking(
                self,
                lambda w: self._run(
                    actor, name, raw, route, door, surfaces, digest, bearer, w, traceparent
                ),
            )
        started = time.perf_counter()
        code: str | None = ErrorCode.INTERNAL._value_
        incoming = None if traceparent is None else valid_traceparent(traceparent)
        # The call's note: its task's status moves and its trace (taskcore.callnote).
        with noting(incoming, door=door._value_, started_ns=time.time_ns()) as note:
            try:
                outcome = self._dispatch(
                    actor, name, raw, route, door, surfaces, digest, bearer, waiting
                )
                code = "OK"
                return outcome
            except TaskError as err:
                code = err.code.value
                raise
            except Lapsed as lapsed:
                code = None  # observed by ``call``, as a failed authentication
                if note.span is not None:
                    note.span.end(lapsed.error.code.value)
                raise
            except CallPending:
                code = None  # observed by the answering attempt
                raise
            finally:
                if code is not None:
                    self._observe(name, door, code, time.perf_counter() - started)
                    if note.span is not None:
                        note.span.end(code)

    def _dispatch(
        self,
        actor: Actor,
        name: str,
        raw: bytes | str | Mapping[str, Any] | None,
        route: Route | None,
        door: Door,
        surfaces: Iterable[Surface] | None,
        _digest: str | None,
        bearer: str | None = None,
        waiting: WaitingCall | None = None,
    ) -> tuple[Any, bytes]:
        """Check, decode, run and audit one call (see :meth:`dispatch`).

        ``bearer`` is set when ``actor`` was admitted and the bearer is to be authenticated
        in the call's transaction (:meth:`call`); a failure raises
        :class:`~taskcore.admission.Lapsed`. A
        handler's :class:`Wait` rolls the transaction back and raises :class:`CallPending`
        (nothing written, nothing audited: the attempt that answers is audited).
        """
        digest = _digest or input_digest(raw)
        wanted = None if surfaces is None else frozenset(surfaces)
        try:
            op = check_operation(self.registry.get(name), name, actor, route, door, wanted)
            request = self._decode(op, raw)
        except TaskError as err:
            if bearer is not None:
                self._admission.authenticate_again(bearer)  # a revoked token outranks it
            self._audit_refusal(actor.token_id, actor.workspace, name, digest, err)
            raise
        refusal: TaskError | None = None
        subject = audit_subject(request)
        outside = None
        if op.tx is TxMode.OWN or op.prepare is not None or op.hold is not None:
            outside = CallContext(
                service=self, actor=actor, tx=None, route=route, door=door, raw_digest=digest
            )
        try:
            if op.tx is TxMode.OWN:
                assert outside is not None
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
                            subject or audit_subject(None, result),
                        )
            else:
                prepared, held = request, _NO_HOLD
                if outside is not None:
                    prepared = request if op.prepare is None else op.prepare(outside, request)
                    held = _NO_HOLD if op.hold is None else op.hold(outside)
                with held, self.write(shared=op.row_safe) as tx:
                    if op.read_ahead is not None:  # the handler's first read, sent with:
                        op.read_ahead(tx, actor, prepared)
                    # The live authorization guard: the token must still be valid inside the
                    # transaction that acts on it (a revocation, an exclusive writer,
                    # serializes with this commit). Trusted in-process actors have no token.
                    if bearer is not None:
                        authenticate_in_call(tx, bearer, actor)
                    else:
                        check_live_in(tx, actor.token_id)
                    ctx = CallContext(
                        service=self,
                        actor=actor,
                        tx=tx,
                        route=route,
                        door=door,
                        raw_digest=digest,
                        waiting=waiting,
                    )
                    result = op.handler(ctx, prepared)
                    if isinstance(result, Wait):
                        raise CallPending(result)  # rolls the attempt back, unaudited
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
                        subject or audit_subject(None, result),
                    )
        except TaskError as err:
            self._audit_refusal(actor.token_id, actor.workspace, name, digest, err, subject)
            raise
        except (Lapsed, CallPending):
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
