"""The workflow journal: checkpoints, selection, claims, fences, results, reads, recovery.

One :class:`WorkflowJournal` works over one :class:`~taskcore.store.storage.Storage`. Every
public method takes a :class:`Caller` (the authenticated actor, the route's repository and
profile, and the authorization guard) and follows the same shape:

* mutations: ``guard.hold`` (actor/workspace guard), then one ``BEGIN IMMEDIATE``
  transaction in which the route is resolved, ``guard.check`` rechecks authorization, the
  request ID is looked up, the authority is rechecked through the same transaction, the
  transition is taken from the tables in :mod:`~taskcore.workflow.states`, and the new rows,
  the idempotency row (exact outcome bytes) and a transition-log row are written together;
  any refusal raises before anything is written, so nothing is half-applied;
* reads (status, recovery, requirements, next, instructions, reference): one read
  transaction, ``guard.check`` and no write at all; on a read-only storage they never
  create a journal file (see :mod:`taskcore.workflow.reads`).

Idempotency: a mutation's request ID is scoped to the authenticated owner and agent and bound
to the domain-separated digest of its exact canonical bytes and kind
(:func:`taskcore.contract.request_digest`). An identical retry returns the retained outcome
byte for byte, after the current authorization check and even if the subject or enrollment
went stale since; the same ID with any changed field, another kind or another route is
``IDEMPOTENCY_CONFLICT``. A refused request binds nothing: its ID stays free, and retrying it
re-evaluates it. Status and the other reads consume no request ID.

The class is composed by concern: :mod:`~taskcore.workflow.journal_checkpoints`,
:mod:`~taskcore.workflow.journal_claims`, :mod:`~taskcore.workflow.journal_attempts`,
:mod:`~taskcore.workflow.journal_results` and :mod:`~taskcore.workflow.journal_reads` over
:mod:`~taskcore.workflow.journal_base`; the shared lookups are :mod:`taskcore.workflow.lookups`.
"""

from __future__ import annotations

from taskcore.workflow.journal_attempts import AttemptsMixin
from taskcore.workflow.journal_checkpoints import CheckpointsMixin
from taskcore.workflow.journal_claims import ClaimsMixin
from taskcore.workflow.journal_reads import ReadsMixin
from taskcore.workflow.journal_results import ResultsMixin
from taskcore.workflow.lookups import (
    COMPLETION_CHECKS,
    OBSERVATION_COMPLETION,
    Caller,
    dependency_complete,
    retry_refusal,
    unresolved_prior_task,
)

__all__ = [
    "COMPLETION_CHECKS",
    "OBSERVATION_COMPLETION",
    "Caller",
    "WorkflowJournal",
    "dependency_complete",
    "retry_refusal",
    "unresolved_prior_task",
]


class WorkflowJournal(CheckpointsMixin, ClaimsMixin, AttemptsMixin, ResultsMixin, ReadsMixin):
    """The journal over one storage; see the module docstring for the common shape.

    ``lease_max_ms`` is the configured maximum lease; a claim gets
    ``min(requested, lease_max_ms, the repository policy's lease_max_ms)``.
    """
