"""Wire types of the collector operations: claim, descriptor, upload, finalize, qualification.

``qualification`` answers exactly the seed's fields: ``qualified``, ``subject_current``,
``receipt_digest`` (null unless qualified), the subject ``revision``, per-task
``{task_id, task_digest, step_id, required, state}``, bounded ``failures`` of
``{task_id, code}`` with stable codes, and ``next`` as typed data (``collector_claim`` or
``reconcile`` with a ``task_id``; ``collector_finalize``, ``checkpoint`` or ``none`` without).

The v2 receipt (:class:`ReceiptV2`) names every transfer, task, attempt, fence, registration
epoch, key and collector profile, and every originating actor with its grant generation.

>>> NextStep(operation="checkpoint", task_id=None).operation
'checkpoint'
>>> NextStep(operation="reconcile", task_id=None)
Traceback (most recent call last):
taskcore.errors.TaskError: next.task_id is required for collector_claim and reconcile and absent otherwise at $.task_id
"""

from __future__ import annotations

from typing import Final, Literal

import attrs

from taskcore.codec import wire_field
from taskcore.contract.collector import SandboxMode
from taskcore.contract.collector_records import ExecutionRecord
from taskcore.contract.collector_transfer import OriginGrant
from taskcore.contract.common import ExecutorBinding, digest_field, id_field, repository_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    FINALIZE_TRANSFERS_MAX,
    LEASE_MAX_MS,
    LEASE_MIN_MS,
    QUALIFICATION_FAILURES_MAX,
    RUN_ARGV0_MAX_CHARS,
    RUN_FAILURES_MAX,
    RUN_TAIL_MAX_CHARS,
    STEPS_MAX,
)

__all__ = [
    "FAILURE_CODES",
    "NEXT_OPERATIONS",
    "TASK_STATES",
    "CollectorClaimRequest",
    "DescriptorRequest",
    "FinalizeOutcome",
    "FinalizeRequest",
    "NextStep",
    "QualificationFailure",
    "QualificationRequest",
    "QualificationResponse",
    "ReceiptTask",
    "ReceiptTransfer",
    "ReceiptV2",
    "RunSummary",
    "TaskQualification",
    "UploadOutcome",
    "output_tail",
    "run_summary",
]

_ID: Final = r"[A-Za-z0-9._-]{1,128}"
_HEX64: Final = r"[0-9a-f]{64}"

NEXT_OPERATIONS: Final = (
    "collector_claim",
    "reconcile",
    "collector_finalize",
    "checkpoint",
    "none",
)
"""Every value of ``next.operation``."""

TASK_STATES: Final = ("pending", "claimed", "succeeded", "failed", "uncertain", "blocked")
"""Every value of a qualification task's ``state``."""

FAILURE_CODES: Final = (
    "attempt_in_progress",
    "attempt_cancelled",
    "lease_expired",
    "authorization_changed",
    "prior_subject_unresolved",
    "collector_not_passed",
    "collector_profile_changed",
    "collector_profile_missing",
    "executor_revoked",
    "executor_not_current",
    "result_nonpassing",
    "dependency_incomplete",
    "not_collected",
    "receipt_missing",
    "too_many_transfers",
)
"""The stable failure codes qualification uses (never agent-authored text)."""


@attrs.frozen(kw_only=True)
class CollectorClaimRequest:
    """Claim a collector step's task for the installed collector profile's registration.

    The executor binding is derived by the authority from the current collector profile;
    the request cannot choose it.
    """

    version: int = wire_field(version=True)
    request_id: str = id_field()
    task_id: str = id_field()
    task_digest: str = digest_field()
    execution_operation_id: str = id_field()
    requested_lease_ms: int = wire_field(lo=LEASE_MIN_MS, hi=LEASE_MAX_MS)


@attrs.frozen(kw_only=True)
class DescriptorRequest:
    """Ask for the collector descriptor of one claimed collector attempt (read-only)."""

    version: int = wire_field(version=True)
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str = id_field()


@attrs.frozen(kw_only=True)
class RunSummary:
    """Why a collector run ended as it did, for people: outcome, exit, ``argv[0]``, output tails.

    ``argv0`` is what the pinned ``argv[0]`` resolved to on the collector's machine (from the
    record's runtime identity); the tails are the last characters of the retained stdout and
    stderr, decoded as UTF-8 with replacement. All bounded; never used to decide anything.
    """

    task_id: str = id_field()
    step_id: str = id_field()
    outcome: str = wire_field(max_len=32, pattern=_ID)
    exit_status: int | None = wire_field(hi=255)
    signal: int | None = wire_field(lo=1, hi=128)
    argv0: str = wire_field(max_len=RUN_ARGV0_MAX_CHARS)
    stdout_tail: str = wire_field(max_len=RUN_TAIL_MAX_CHARS)
    stderr_tail: str = wire_field(max_len=RUN_TAIL_MAX_CHARS)


def output_tail(data: bytes, limit: int = RUN_TAIL_MAX_CHARS) -> str:
    r"""The last ``limit`` characters of ``data`` decoded as UTF-8 (invalid bytes replaced).

    >>> output_tail(b"E   ModuleNotFoundError: No module named 'pytest'", 24)
    "No module named 'pytest'"
    """
    return data[-4 * limit :].decode("utf-8", "replace")[-limit:]


def run_summary(record: ExecutionRecord, *, task_id: str, step_id: str) -> RunSummary:
    """The :class:`RunSummary` of one execution record."""
    return RunSummary(
        task_id=task_id,
        step_id=step_id,
        outcome=record.outcome.value,
        exit_status=record.exit_status,
        signal=record.signal,
        argv0=record.runtime.executable[:RUN_ARGV0_MAX_CHARS],
        stdout_tail=output_tail(record.stdout.retained()),
        stderr_tail=output_tail(record.stderr.retained()),
    )


@attrs.frozen(kw_only=True)
class UploadOutcome:
    """The authority's answer to a validated upload (retained; an exact retry gets it back)."""

    transfer_digest: str = digest_field()
    upload_request_id: str = id_field()
    task_id: str = id_field()
    attempt_id: str = id_field()
    fence: int = wire_field(lo=1)
    record_outcome: str = wire_field(max_len=32, pattern=_ID)
    completes_dependency: bool = wire_field()
    admission: Literal["requires_finalization", "nonpassing"] = wire_field()
    run: RunSummary | None = wire_field(default=None)
    """Why the run ended as it did (additive; absent from views retained before it existed)."""
    sandbox: SandboxMode | None = wire_field(default=None, omit_none=True)
    """How the record's command was isolated (its runtime identity's sandbox); absent only in
    answers retained before it was recorded."""


@attrs.frozen(kw_only=True)
class FinalizeRequest:
    """Create (or return) the v2 receipt of a Change's current subject."""

    version: int = wire_field(version=True)
    change_id: str = id_field()


@attrs.frozen(kw_only=True)
class ReceiptTask:
    """One task a receipt covers."""

    task_id: str = id_field()
    task_digest: str = digest_field()
    step_id: str = id_field()
    required: bool = wire_field()
    completion: str = wire_field(max_len=32, pattern=_ID)


@attrs.frozen(kw_only=True)
class ReceiptTransfer:
    """One retained transfer a receipt relies on, with every identity it was bound to."""

    transfer_digest: str = digest_field()
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str = id_field()
    attempt_digest: str = digest_field()
    fence: int = wire_field(lo=1)
    registration: ExecutorBinding = wire_field()
    public_key: str = digest_field()
    collector_profile_id: str = id_field()
    collector_profile_digest: str = digest_field()
    origin: OriginGrant = wire_field()
    outcome: str = wire_field(max_len=32, pattern=_ID)
    sandbox: SandboxMode | None = wire_field(default=None, omit_none=True)
    """The sandbox the transfer's command ran in (absent for transfers imported before it was
    recorded); its exact settings are the runtime identity the collector profile pins."""


@attrs.frozen(kw_only=True)
class ReceiptV2:
    """An imported v2 graph receipt for one exact subject (its digest names it)."""

    receipt_version: Literal[2] = wire_field()
    capability: str = wire_field(max_len=128)
    audience: str = id_field()
    repository_id: str = repository_field()
    workflow_profile_id: str = id_field()
    change_id: str = id_field()
    change_version: int = wire_field(lo=1)
    revision: str = digest_field()
    commit: str = wire_field(max_len=64)
    subject_binding_digest: str = digest_field()
    policy_epoch: int = wire_field()
    requirement_digest: str = digest_field()
    plan_digest: str = digest_field()
    tasks: tuple[ReceiptTask, ...] = wire_field(max_len=STEPS_MAX)
    transfers: tuple[ReceiptTransfer, ...] = wire_field(max_len=FINALIZE_TRANSFERS_MAX)


@attrs.frozen(kw_only=True)
class FinalizeOutcome:
    """The receipt finalization created or found."""

    receipt_digest: str = digest_field()
    created: bool = wire_field()
    receipt: ReceiptV2 = wire_field()


@attrs.frozen(kw_only=True)
class QualificationRequest:
    """The same subject as ``next``: a Change of the route."""

    version: int = wire_field(version=True)
    change_id: str = id_field()


@attrs.frozen(kw_only=True)
class TaskQualification:
    """One task of the subject as qualification sees it."""

    task_id: str = id_field()
    task_digest: str = digest_field()
    step_id: str = id_field()
    required: bool = wire_field()
    state: Literal["pending", "claimed", "succeeded", "failed", "uncertain", "blocked"] = (
        wire_field()
    )


@attrs.frozen(kw_only=True)
class QualificationFailure:
    """A typed failure: which task and a stable code (never agent-authored text)."""

    task_id: str = id_field()
    code: str = id_field()


@attrs.frozen(kw_only=True)
class NextStep:
    """What to do next, as data; a client decides what to run."""

    operation: Literal[
        "collector_claim", "reconcile", "collector_finalize", "checkpoint", "none"
    ] = wire_field()
    task_id: str | None = wire_field(default=None, max_len=128, pattern=_ID)

    def __attrs_post_init__(self) -> None:
        needs = self.operation in ("collector_claim", "reconcile")
        if needs != (self.task_id is not None):
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "next.task_id is required for collector_claim and reconcile and absent otherwise",
                path="$.task_id",
            )

    def to_json(self) -> dict[str, str]:
        """The wire form: ``task_id`` present only for collector_claim and reconcile.

        >>> NextStep(operation="none").to_json()
        {'operation': 'none'}
        """
        out: dict[str, str] = {"operation": self.operation}
        if self.task_id is not None:
            out["task_id"] = self.task_id
        return out


@attrs.frozen(kw_only=True)
class QualificationResponse:
    """The read-only, advisory answer: admission still rechecks."""

    qualified: bool = wire_field()
    subject_current: bool = wire_field()
    receipt_digest: str | None = wire_field(max_len=64, pattern=_HEX64)
    revision: str | None = wire_field(max_len=64, pattern=_HEX64)
    tasks: tuple[TaskQualification, ...] = wire_field(max_len=STEPS_MAX)
    failures: tuple[QualificationFailure, ...] = wire_field(max_len=QUALIFICATION_FAILURES_MAX)
    next: NextStep = wire_field()
    run_failures: tuple[RunSummary, ...] = wire_field(factory=tuple, max_len=RUN_FAILURES_MAX)
    """Additive to the seed's answer: why the subject's retained runs did not pass, bounded.

    Present on the wire only when not empty, so an answer without a failed run has exactly the
    seed's fields.
    """

    def to_json(self) -> dict[str, object]:
        """The wire form (``next`` without an absent ``task_id``; ``run_failures`` if any)."""
        out: dict[str, object] = {
            "qualified": self.qualified,
            "subject_current": self.subject_current,
            "receipt_digest": self.receipt_digest,
            "revision": self.revision,
            "tasks": [
                {
                    "task_id": t.task_id,
                    "task_digest": t.task_digest,
                    "step_id": t.step_id,
                    "required": t.required,
                    "state": t.state,
                }
                for t in self.tasks
            ],
            "failures": [{"task_id": f.task_id, "code": f.code} for f in self.failures],
            "next": self.next.to_json(),
        }
        if self.run_failures:
            out["run_failures"] = [attrs.asdict(r) for r in self.run_failures]
        return out
