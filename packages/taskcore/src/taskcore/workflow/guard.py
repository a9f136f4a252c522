"""The authorization guard every workflow selection, read and transition consults.

The seed's lock order is: actor/workspace guard, then the journal transaction, then the
authority's writer reservation. Here the authority lives in the journal file, so the last
two are one ``BEGIN IMMEDIATE`` transaction and every authority recheck reads through it.
A caller supplies an :class:`AuthorizationGuard`:

* :meth:`AuthorizationGuard.hold` is entered *before* the journal transaction opens and is
  held across the short transition (never across external execution); contention fails
  closed with ``BUSY`` and nothing is replayed;
* :meth:`AuthorizationGuard.check` runs *inside* the transaction, for every selection, read
  and transition, with what is about to be touched; it raises to refuse.

:class:`ActorGuard` is the guard the service uses: a per-workspace lock in this process, the
live token check (a revoked token is refused in the same transaction that would act on it,
so revocation serializes with the transition) and the rules for who may cancel or reconcile.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

import attrs

from taskcore.actors import Actor, Tier
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.storage import Transaction

__all__ = [
    "ActorGuard",
    "AuthorizationGuard",
    "GuardAction",
    "GuardRequest",
    "workspace_lock",
]


class GuardAction(enum.Enum):
    """What the journal is about to do."""

    SELECT = "select"
    READ = "read"
    CHECKPOINT = "checkpoint"
    CLAIM = "claim"
    HEARTBEAT = "heartbeat"
    RESULT = "result"
    CANCEL = "cancel"
    RECONCILE = "reconcile"

    @property
    def mutates(self) -> bool:
        """Whether the action writes journal rows."""
        return self not in (GuardAction.SELECT, GuardAction.READ)


@attrs.frozen(kw_only=True)
class GuardRequest:
    """What the guard is asked about.

    ``attempt_owner``/``attempt_agent`` name who holds the attempt a cancel or reconcile
    would fence, and ``attempt_live`` whether its lease is still unexpired.
    """

    action: GuardAction
    repository_id: str
    profile_id: str
    task_id: str | None = None
    attempt_owner: str | None = None
    attempt_agent: str | None = None
    attempt_live: bool = False


class AuthorizationGuard(Protocol):
    """The caller-supplied current authorization guard (see the module docstring)."""

    def hold(self, action: GuardAction) -> AbstractContextManager[None]:
        """Acquire the actor/workspace guard before the journal transaction opens."""
        ...

    def check(self, tx: Transaction, request: GuardRequest) -> None:
        """Recheck current authorization inside the transaction; raise to refuse."""
        ...


_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


def workspace_lock(workspace: str) -> threading.RLock:
    """Return this process's lock for ``workspace`` (created on first use).

    Re-entrant: the front door takes it before the call's transaction opens and the journal
    code the handler runs takes it again on the same thread.
    """
    with _LOCKS_GUARD:
        lock = _LOCKS.get(workspace)
        if lock is None:
            lock = _LOCKS[workspace] = threading.RLock()
        return lock


class ActorGuard:
    """The service's guard for one authenticated actor.

    * ``hold`` takes the workspace's process-local lock for mutations, waiting at most
      ``wait_ms`` (then ``BUSY``); reads take no lock, only ``check``;
    * ``check`` refuses a token revoked since authentication (``TOKEN_REVOKED``), a tier
      below agent, and a cancel or reconcile of someone else's live attempt unless the actor
      is a member or admin of the workspace. Any agent of the workspace may reconcile or
      cancel an attempt whose lease expired or that was cancelled: nobody holds it.

    Actors built in-process by trusted code have no token record and pass the token check.
    """

    def __init__(self, actor: Actor, *, wait_ms: int = 10_000) -> None:
        self.actor = actor
        self.wait_ms = wait_ms

    @contextmanager
    def _hold(self, action: GuardAction) -> Iterator[None]:
        if not action.mutates:
            yield
            return
        lock = workspace_lock(self.actor.workspace)
        if not lock.acquire(timeout=self.wait_ms / 1000):
            raise TaskError(ErrorCode.BUSY, "the workspace is busy; retry the same request shortly")
        try:
            yield
        finally:
            lock.release()

    def hold(self, action: GuardAction) -> AbstractContextManager[None]:
        """Acquire the workspace lock for a mutation (fails closed with ``BUSY``)."""
        return self._hold(action)

    def check(self, tx: Transaction, request: GuardRequest) -> None:
        """Recheck the actor's authorization inside the transaction."""
        record = tx.tokens.get(self.actor.token_id)
        if record is not None and record.revoked_at_ms is not None:
            raise TaskError(ErrorCode.TOKEN_REVOKED, "the bearer token was revoked")
        if record is not None and record.workspace != self.actor.workspace:
            raise TaskError(ErrorCode.AUTHORIZATION_CHANGED, "the token's workspace changed")
        if self.actor.tier < Tier.AGENT:
            raise TaskError(ErrorCode.FORBIDDEN, "workflow tasks need at least the agent tier")
        if request.action in (GuardAction.CANCEL, GuardAction.RECONCILE):
            own = (request.attempt_owner, request.attempt_agent) == (
                self.actor.owner_id,
                self.actor.agent_id,
            )
            if not own and request.attempt_live and self.actor.tier < Tier.MEMBER:
                raise TaskError(
                    ErrorCode.FORBIDDEN,
                    "another agent holds a live lease on this attempt; only that agent or a "
                    "member of the workspace may cancel or reconcile it before it expires",
                )
