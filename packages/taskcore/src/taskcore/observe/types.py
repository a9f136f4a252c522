"""Results of the operator reads: plain views, camelCase keys, never a secret or a path.

A token view carries no hash; a repository view no work-tree path; a transfer view its
digest, outcome and (for a failed command) a bounded excerpt of the retained output.
"""

from __future__ import annotations

from typing import Any

import attrs

from taskcore.codec import wire_field
from taskcore.queue.types import ApprovalGateView, PhaseView, TaskView

__all__ = [
    "ApprovalEntry",
    "ApprovalsResult",
    "AttemptView",
    "AuditEntry",
    "AuditResult",
    "BacklogResult",
    "ChangeView",
    "ChangesResult",
    "CountView",
    "IssuedTokenView",
    "ReceiptView",
    "RepositoriesResult",
    "RepositoryView",
    "RetentionView",
    "StatsResult",
    "SubjectDetail",
    "SubjectView",
    "SubjectsResult",
    "TaskDetail",
    "TokenView",
    "TokensResult",
    "TransferView",
    "WhoAmI",
    "WorkflowTaskView",
]


@attrs.frozen(kw_only=True)
class WhoAmI:
    """The caller as the service sees it (``observe.whoami``)."""

    token_id: str = wire_field(wire="tokenId")
    name: str = wire_field()
    workspace: str = wire_field()
    tier: str = wire_field()
    autonomy: int = wire_field()


@attrs.frozen(kw_only=True)
class AuditEntry:
    """One audit event: who called what, on which task, with which outcome."""

    seq: int = wire_field()
    at_ms: int = wire_field(wire="atMs")
    actor: str = wire_field(doc="token id, or anonymous")
    operation: str = wire_field()
    code: str = wire_field(doc="OK or the error code")
    task_id: str | None = wire_field(wire="taskId")
    input_digest: str = wire_field(wire="inputDigest")


@attrs.frozen(kw_only=True)
class AuditResult:
    """A page of the audit feed."""

    events: tuple[AuditEntry, ...] = wire_field()
    next_cursor: str | None = wire_field(wire="nextCursor")


@attrs.frozen(kw_only=True)
class BacklogResult:
    """A page of the queue in drain order."""

    tasks: tuple[TaskView, ...] = wire_field()
    next_cursor: str | None = wire_field(wire="nextCursor")


@attrs.frozen(kw_only=True)
class TaskDetail:
    """One queue task with its phases, approval gate and audit trail (``observe.task``)."""

    task: TaskView = wire_field()
    phases: tuple[PhaseView, ...] = wire_field(doc="newest first, at most OBSERVE_TASK_PHASES")
    gate: ApprovalGateView | None = wire_field()
    audit: tuple[AuditEntry, ...] = wire_field(doc="newest first, at most OBSERVE_TASK_AUDIT")


@attrs.frozen(kw_only=True)
class ApprovalEntry:
    """A gate and its task: what approving it would let the task's next claim do."""

    gate: ApprovalGateView = wire_field()
    task: TaskView = wire_field()
    grant: str = wire_field(doc="what the one-shot grant allows, in words")


@attrs.frozen(kw_only=True)
class ApprovalsResult:
    """A page of approval gates, oldest request first."""

    approvals: tuple[ApprovalEntry, ...] = wire_field()
    next_cursor: str | None = wire_field(wire="nextCursor")


@attrs.frozen(kw_only=True)
class TokenView:
    """A token without its secret or hash."""

    token_id: str = wire_field(wire="tokenId")
    name: str = wire_field()
    tier: str = wire_field()
    autonomy: int = wire_field()
    created_at_ms: int = wire_field(wire="createdAtMs")
    revoked_at_ms: int | None = wire_field(wire="revokedAtMs")


@attrs.frozen(kw_only=True)
class TokensResult:
    """A page of the workspace's tokens, oldest first."""

    tokens: tuple[TokenView, ...] = wire_field()
    next_cursor: str | None = wire_field(wire="nextCursor")


@attrs.frozen(kw_only=True)
class IssuedTokenView:
    """A new token: ``token`` is the bearer secret, returned this once and stored nowhere."""

    token: str = wire_field()
    record: TokenView = wire_field()
    workspace: str = wire_field()


@attrs.frozen(kw_only=True)
class RepositoryView:
    """A registered repository of the workspace (its work tree path is not shown)."""

    repository_id: str = wire_field(wire="repositoryId")
    registered_at_ms: int = wire_field(wire="registeredAtMs")
    policy_epoch: int = wire_field(wire="policyEpoch")
    policy_digest: str = wire_field(wire="policyDigest")


@attrs.frozen(kw_only=True)
class RepositoriesResult:
    """A page of repositories by ID."""

    repositories: tuple[RepositoryView, ...] = wire_field()
    next_cursor: str | None = wire_field(wire="nextCursor")


@attrs.frozen(kw_only=True)
class CountView:
    """A labelled count."""

    key: str = wire_field()
    count: int = wire_field()


@attrs.frozen(kw_only=True)
class ChangeView:
    """A Change at its current subject: version, revision, task states, receipt."""

    profile_id: str = wire_field(wire="profileId")
    change_id: str = wire_field(wire="changeId")
    subject_seq: int = wire_field(wire="subjectSeq")
    change_version: int = wire_field(wire="changeVersion")
    revision: str = wire_field()
    commit: str = wire_field()
    recorded_at_ms: int = wire_field(wire="recordedAtMs")
    tasks: tuple[CountView, ...] = wire_field(doc="task count by state")
    receipt_digest: str | None = wire_field(wire="receiptDigest")
    qualified: bool = wire_field(
        doc="a receipt is recorded for this subject; workflow.qualification rechecks it"
    )


@attrs.frozen(kw_only=True)
class ChangesResult:
    """A page of a repository's Changes, newest subject first."""

    repository_id: str = wire_field(wire="repositoryId")
    changes: tuple[ChangeView, ...] = wire_field()
    next_cursor: str | None = wire_field(wire="nextCursor")


@attrs.frozen(kw_only=True)
class SubjectView:
    """One recorded subject (a version of a Change)."""

    subject_seq: int = wire_field(wire="subjectSeq")
    profile_id: str = wire_field(wire="profileId")
    change_id: str = wire_field(wire="changeId")
    change_version: int = wire_field(wire="changeVersion")
    revision: str = wire_field()
    commit: str = wire_field()
    target: str = wire_field()
    binding_digest: str = wire_field(wire="bindingDigest")
    recorded_at_ms: int = wire_field(wire="recordedAtMs")
    superseded_at_ms: int | None = wire_field(wire="supersededAtMs")
    receipt_digest: str | None = wire_field(wire="receiptDigest")


@attrs.frozen(kw_only=True)
class SubjectsResult:
    """A page of a Change's subjects, newest first."""

    subjects: tuple[SubjectView, ...] = wire_field()
    next_cursor: str | None = wire_field(wire="nextCursor")


@attrs.frozen(kw_only=True)
class AttemptView:
    """One attempt of a workflow task (its binding is in the attempt digest)."""

    attempt_id: str = wire_field(wire="attemptId")
    fence: int = wire_field()
    state: str = wire_field()
    owner_id: str = wire_field(wire="ownerId")
    agent_id: str = wire_field(wire="agentId")
    lease_expires_at_ms: int = wire_field(wire="leaseExpiresAtMs")
    superseded_by_fence: int | None = wire_field(wire="supersededByFence")
    created_at_ms: int = wire_field(wire="createdAtMs")
    result_outcome: str | None = wire_field(wire="resultOutcome", doc="a retained result's")


@attrs.frozen(kw_only=True)
class TransferView:
    """A retained signed transfer: digest, outcome, and a failure excerpt when it failed.

    ``failureExcerpt`` is the end of the command's retained output (stderr, then stdout), at
    most ``FAILURE_EXCERPT_MAX_BYTES`` bytes decoded as UTF-8 with replacement; ``null`` for a
    passing transfer, a review, or bytes the retention sweep dropped (``bytesPruned``).
    """

    transfer_digest: str = wire_field(wire="transferDigest")
    task_id: str = wire_field(wire="taskId")
    attempt_id: str = wire_field(wire="attemptId")
    kind: str = wire_field()
    outcome: str = wire_field()
    passing: bool = wire_field()
    length: int = wire_field()
    retained_at_ms: int = wire_field(wire="retainedAtMs")
    bytes_pruned: bool = wire_field(wire="bytesPruned")
    failure_excerpt: str | None = wire_field(wire="failureExcerpt")


@attrs.frozen(kw_only=True)
class WorkflowTaskView:
    """A workflow task of a subject, with its newest attempts and its transfer."""

    task_id: str = wire_field(wire="taskId")
    step_id: str = wire_field(wire="stepId")
    plan_index: int = wire_field(wire="planIndex")
    state: str = wire_field()
    completion: str | None = wire_field()
    next_fence: int = wire_field(wire="nextFence")
    attempts: tuple[AttemptView, ...] = wire_field(doc="newest first")
    attempts_total: int = wire_field(wire="attemptsTotal")
    transfer: TransferView | None = wire_field(doc="of the current attempt")


@attrs.frozen(kw_only=True)
class ReceiptView:
    """A v2 receipt of a subject."""

    receipt_digest: str = wire_field(wire="receiptDigest")
    created_at_ms: int = wire_field(wire="createdAtMs")
    body: Any = wire_field(doc="the receipt's canonical JSON, parsed")


@attrs.frozen(kw_only=True)
class SubjectDetail:
    """One subject with everything recorded about it (``observe.subject``)."""

    repository_id: str = wire_field(wire="repositoryId")
    subject: SubjectView = wire_field()
    tasks: tuple[WorkflowTaskView, ...] = wire_field()
    receipt: ReceiptView | None = wire_field()


@attrs.frozen(kw_only=True)
class RetentionView:
    """The last finished retention sweep (counts per table) and when it ran."""

    finished_at_ms: int | None = wire_field(wire="finishedAtMs")
    deleted: tuple[CountView, ...] = wire_field()


@attrs.frozen(kw_only=True)
class StatsResult:
    """Counts for ``/metrics`` and the board's header, for the caller's workspace.

    ``queue`` counts tasks by effective status (plus ``LEASE_EXPIRED``: leases that lapsed
    and are claimable again); ``approvals`` gates by status; ``transfers`` retained transfers
    by outcome; ``receipts`` the receipts recorded.
    """

    workspace: str = wire_field()
    queue: tuple[CountView, ...] = wire_field()
    approvals: tuple[CountView, ...] = wire_field()
    transfers: tuple[CountView, ...] = wire_field()
    receipts: int = wire_field()
    retention: RetentionView = wire_field()
