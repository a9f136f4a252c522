r"""Results: :class:`TaskResultAssertion` with one criterion row per task criterion.

Field order is the seed's declared struct order, which the observation signing bytes follow:
version, task_id, task_digest, attempt_id, attempt_digest, request_id,
execution_operation_id, agent, executor, fence, trust_class, outcome, criteria,
executor_provenance. Counts and completeness are derived, never submitted.

Shape rules hold on decode; task-aware rules (:func:`validate_against_task`) and attempt
binding (:func:`validate_against_attempt`) are checked by the journal against the stored
canonical task and attempt.

>>> from taskcore.codec import decode
>>> row = decode(CriterionResult, {"criterion": "unit-tests", "outcome": "failed",
...     "findings": ["1 failed", "tab\there"], "evidence_digests": []})
>>> row.findings
('1 failed', 'tab\there')
>>> decode(CriterionResult, {"criterion": "unit-tests", "outcome": "failed",
...     "findings": ["nul\x00"], "evidence_digests": []})
Traceback (most recent call last):
taskcore.errors.TaskError: findings may not contain NUL at $.findings[0]
>>> decode(CriterionResult, {"criterion": "unit-tests", "outcome": "skipped",
...     "findings": [], "evidence_digests": []})
Traceback (most recent call last):
taskcore.errors.TaskError: 'skipped' is not one of: passed, failed, uncertain, not_claimed at $.outcome
"""

from __future__ import annotations

import attrs

from taskcore.codec import wire_field
from taskcore.contract.attempt import WorkflowTaskAttempt
from taskcore.contract.common import (
    HEX64,
    AgentIdentity,
    AssertionOutcome,
    CriterionMode,
    CriterionOutcome,
    ExecutorBinding,
    TrustClass,
    digest_field,
    id_field,
)
from taskcore.contract.task import WorkflowTask
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import CRITERIA_MAX, EVIDENCE_DIGESTS_MAX, FINDING_MAX_CHARS, FINDINGS_MAX

__all__ = [
    "CriterionResult",
    "ExecutorProvenance",
    "TaskResultAssertion",
    "validate_against_attempt",
    "validate_against_task",
]


@attrs.frozen(kw_only=True)
class CriterionResult:
    """One criterion row: outcome, findings (text, no NUL) and evidence digests, in order."""

    criterion: str = id_field()
    outcome: CriterionOutcome = wire_field()
    findings: tuple[str, ...] = wire_field(max_len=FINDINGS_MAX, item_max_len=FINDING_MAX_CHARS)
    evidence_digests: tuple[str, ...] = wire_field(max_len=EVIDENCE_DIGESTS_MAX, item_pattern=HEX64)

    def __attrs_post_init__(self) -> None:
        for index, finding in enumerate(self.findings):
            if "\x00" in finding:
                raise TaskError(
                    ErrorCode.INVALID_VALUE,
                    "findings may not contain NUL",
                    path=f"$.findings[{index}]",
                )


@attrs.frozen(kw_only=True)
class ExecutorProvenance:
    """The signature of a registered observation over its observation digest.

    The verification key is never taken from here: the journal looks it up in the current
    enrollment named by the assertion's ``executor`` binding.
    """

    observation_digest: str = digest_field()
    signature: str = wire_field(max_len=128, pattern=r"[0-9a-f]{128}")


@attrs.frozen(kw_only=True)
class TaskResultAssertion:
    """A result for one exact attempt at one exact fence, with its own request identity."""

    version: int = wire_field(version=True)
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str = id_field()
    attempt_digest: str = digest_field()
    request_id: str = id_field()
    execution_operation_id: str = id_field()
    agent: AgentIdentity = wire_field()
    executor: ExecutorBinding | None = wire_field()
    fence: int = wire_field(lo=1)
    trust_class: TrustClass = wire_field()
    outcome: AssertionOutcome = wire_field()
    criteria: tuple[CriterionResult, ...] = wire_field(min_len=1, max_len=CRITERIA_MAX)
    executor_provenance: ExecutorProvenance | None = wire_field()

    def __attrs_post_init__(self) -> None:
        if not self.trust_class.wire_selectable:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                f"{self.trust_class.value} is controller-owned and cannot be asserted",
                path="$.trust_class",
            )
        observed = self.trust_class is TrustClass.REGISTERED_EXECUTOR_OBSERVATION
        if observed and self.executor is None:
            raise TaskError(
                ErrorCode.MISSING_FIELD,
                "a registered observation names its executor",
                path="$.executor",
            )
        if not observed and self.executor is not None:
            raise TaskError(
                ErrorCode.INVALID_VALUE, "an agent assertion names no executor", path="$.executor"
            )
        if not observed and self.executor_provenance is not None:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "an agent assertion is not signed",
                path="$.executor_provenance",
            )
        seen: set[str] = set()
        for index, row in enumerate(self.criteria):
            if row.criterion in seen:
                raise TaskError(
                    ErrorCode.INVALID_CRITERIA,
                    f"criterion {row.criterion!r} has two rows",
                    path=f"$.criteria[{index}].criterion",
                )
            seen.add(row.criterion)

    @property
    def counts(self) -> dict[str, int]:
        """Rows per outcome, derived (never accepted from the wire)."""
        out = {o.value: 0 for o in CriterionOutcome}
        for row in self.criteria:
            out[row.outcome.value] += 1
        return out


def validate_against_task(assertion: TaskResultAssertion, task: WorkflowTask) -> None:
    """Apply the task-aware rules of the seed; raise ``INVALID_CRITERIA`` or a binding error.

    * the assertion names this task and its digest;
    * exactly one row per task criterion: no duplicate, unknown or omitted criterion;
    * controller-only rows are ``not_claimed`` (a registered executor cannot claim them);
    * a ``passed`` outcome needs at least one required observation-eligible criterion, and
      every such criterion must have passed.
    """
    if assertion.task_id != task.task_id:
        raise TaskError(
            ErrorCode.BINDING_MISMATCH, "assertion is for another task", path="$.task_id"
        )
    if assertion.task_digest != task.digest:
        raise TaskError(
            ErrorCode.BINDING_MISMATCH, "task_digest does not match the task", path="$.task_digest"
        )
    by_name = {c.criterion: c for c in task.criteria}
    rows = {r.criterion: (i, r) for i, r in enumerate(assertion.criteria)}
    for index, row in enumerate(assertion.criteria):
        spec = by_name.get(row.criterion)
        if spec is None:
            raise TaskError(
                ErrorCode.INVALID_CRITERIA,
                f"criterion {row.criterion!r} is not a criterion of this task",
                path=f"$.criteria[{index}].criterion",
            )
        if spec.mode is CriterionMode.CONTROLLER_ONLY and row.outcome is not (
            CriterionOutcome.NOT_CLAIMED
        ):
            raise TaskError(
                ErrorCode.INVALID_CRITERIA,
                f"criterion {row.criterion!r} is controller-only: use not_claimed",
                path=f"$.criteria[{index}].outcome",
            )
    for name in by_name:
        if name not in rows:
            raise TaskError(
                ErrorCode.INVALID_CRITERIA,
                f"criterion {name!r} has no row; send one row per criterion",
                path="$.criteria",
            )
    if assertion.outcome is AssertionOutcome.PASSED:
        eligible = [
            c for c in task.criteria if c.required and c.mode is CriterionMode.OBSERVATION_ELIGIBLE
        ]
        if not eligible:
            raise TaskError(
                ErrorCode.INVALID_CRITERIA,
                "no required criterion of this task can be passed by a result",
                path="$.outcome",
            )
        for spec in eligible:
            index, row = rows[spec.criterion]
            if row.outcome is not CriterionOutcome.PASSED:
                raise TaskError(
                    ErrorCode.INVALID_CRITERIA,
                    f"outcome passed but required criterion {spec.criterion!r} is "
                    f"{row.outcome.value}",
                    path=f"$.criteria[{index}].outcome",
                )


def validate_against_attempt(assertion: TaskResultAssertion, attempt: WorkflowTaskAttempt) -> None:
    """Check the assertion's exact binding to a stored attempt (IDs, digest, fence, agent)."""
    checks = (
        (assertion.task_id == attempt.task_id, "task_id"),
        (assertion.task_digest == attempt.task_digest, "task_digest"),
        (assertion.attempt_id == attempt.attempt_id, "attempt_id"),
        (assertion.attempt_digest == attempt.digest, "attempt_digest"),
        (
            assertion.execution_operation_id == attempt.execution_operation_id,
            "execution_operation_id",
        ),
        (assertion.agent == attempt.agent, "agent"),
        (assertion.executor == attempt.executor, "executor"),
    )
    for ok, name in checks:
        if not ok:
            raise TaskError(
                ErrorCode.BINDING_MISMATCH, f"{name} does not match the attempt", path=f"$.{name}"
            )
    if assertion.fence != attempt.fence:
        raise TaskError(
            ErrorCode.STALE_FENCE,
            f"fence {assertion.fence} is not the attempt's fence {attempt.fence}",
            path="$.fence",
        )
