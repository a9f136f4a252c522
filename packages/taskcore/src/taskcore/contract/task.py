"""Subjects, tasks and instruction entrypoints (seed "Identity and requests").

A :class:`WorkflowTaskSubject` binds everything a task is about; a :class:`WorkflowTask` adds
the logical task ID, the graph status, the action class, the criteria and a compact
:class:`InstructionEntrypoint`. The task digest is the domain-separated SHA-256 of the task's
canonical bytes, so any changed bound input changes it.

>>> from taskcore.codec import decode
>>> ref = decode(NamedReference, {"name": "guide", "sha256": "7" * 64, "path": "docs/testing.md"})
>>> ref.path
'docs/testing.md'
>>> decode(NamedReference, {"name": "guide", "sha256": "7" * 64, "path": "docs/../../etc"})
Traceback (most recent call last):
taskcore.errors.TaskError: path component '..' is not allowed at $.path
>>> decode(TaskCriterion, {"criterion": "unit-tests", "description": "tests pass",
...                        "mode": "controller_only", "required": 1})
Traceback (most recent call last):
taskcore.errors.TaskError: expected a boolean, got integer; send a boolean at $.required
"""

from __future__ import annotations

from typing import Literal

import attrs

from taskcore.canonical import canonical_json
from taskcore.codec import wire_field
from taskcore.contract.common import (
    CAPABILITY,
    ID,
    ActionClass,
    CriterionMode,
    GraphStatus,
    SchemaMismatch,
    WorkflowProgression,
    digest_field,
    id_field,
    repository_field,
)
from taskcore.contract.paths import validate_reference_path
from taskcore.digest import SUBJECT_DOMAIN, TASK_DOMAIN, domain_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    CAPABILITY_MAX_CHARS,
    CRITERIA_MAX,
    DEPENDENCIES_MAX,
    ID_MAX_CHARS,
    NAMED_REFERENCES_MAX,
    PATH_MAX_CHARS,
    TARGET_MAX_CHARS,
    TEXT_MAX_CHARS,
)

__all__ = [
    "TARGET_PATTERN",
    "InstructionEntrypoint",
    "InstructionEntrypointResponse",
    "NamedReference",
    "TaskCriterion",
    "WorkflowTask",
    "WorkflowTaskSubject",
    "subject_digest",
    "task_digest",
]

TARGET_PATTERN = r"[A-Za-z0-9._/-]{1,256}"
"""A protected target, e.g. ``refs/heads/main`` or ``main``."""


@attrs.frozen(kw_only=True)
class TaskCriterion:
    """One obligation of a task: who may speak for it and whether it is required."""

    criterion: str = id_field()
    description: str = wire_field(max_len=TEXT_MAX_CHARS)
    mode: CriterionMode = wire_field()
    required: bool = wire_field()


@attrs.frozen(kw_only=True)
class NamedReference:
    """A named, hash-pinned document the agent may fetch: name, SHA-256 and relative path."""

    name: str = id_field()
    sha256: str = digest_field()
    path: str = wire_field(max_len=PATH_MAX_CHARS)

    def __attrs_post_init__(self) -> None:
        validate_reference_path(self.path, path="$.path")


def _check_criteria(criteria: tuple[TaskCriterion, ...], where: str) -> None:
    if not criteria:
        raise TaskError(
            ErrorCode.INVALID_CRITERIA, "every offered task has at least one criterion", path=where
        )
    seen: set[str] = set()
    for index, row in enumerate(criteria):
        if row.criterion in seen:
            raise TaskError(
                ErrorCode.INVALID_CRITERIA,
                f"criterion {row.criterion!r} appears twice",
                path=f"{where}[{index}].criterion",
            )
        seen.add(row.criterion)


@attrs.frozen(kw_only=True)
class InstructionEntrypoint:
    """What an agent reads before working: every criterion inline, references by name.

    Required criteria stay inline so progressive loading cannot hide an obligation; there is
    exactly one permitted progression.
    """

    capability: str = wire_field(max_len=CAPABILITY_MAX_CHARS)
    schema_version: int = wire_field(version=True)
    workflow_digest: str = digest_field()
    policy_digest: str = digest_field()
    summary: str = wire_field(max_len=TEXT_MAX_CHARS)
    criteria: tuple[TaskCriterion, ...] = wire_field(min_len=1, max_len=CRITERIA_MAX)
    references: tuple[NamedReference, ...] = wire_field(max_len=NAMED_REFERENCES_MAX)
    progression: WorkflowProgression = wire_field()

    def __attrs_post_init__(self) -> None:
        if self.capability != CAPABILITY:
            raise TaskError(
                ErrorCode.INVALID_VALUE, f"capability must be {CAPABILITY}", path="$.capability"
            )
        _check_criteria(self.criteria, "$.criteria")
        names = [r.name for r in self.references]
        if len(names) != len(set(names)):
            raise TaskError(
                ErrorCode.INVALID_VALUE, "reference names must be unique", path="$.references"
            )


@attrs.frozen(kw_only=True)
class WorkflowTaskSubject:
    """Everything a task is bound to.

    Repository, execution profile, protected target, immutable revision (64 hex, see
    ``docs/git-mapping.md``), Change and its version and context digest, policy epoch,
    installed requirement, compiled plan, the immutable skill and the workflow step.
    """

    version: int = wire_field(version=True)
    repository_id: str = repository_field()
    profile_id: str = id_field()
    target: str = wire_field(max_len=TARGET_MAX_CHARS, pattern=TARGET_PATTERN)
    revision: str = digest_field()
    change_id: str = id_field()
    change_version: int = wire_field(lo=1)
    context_digest: str = digest_field()
    policy_epoch: int = wire_field()
    requirement_digest: str = digest_field()
    plan_digest: str = digest_field()
    skill_id: str = id_field()
    skill_digest: str = digest_field()
    step_id: str = id_field()


@attrs.frozen(kw_only=True)
class WorkflowTask:
    """One installed step of one subject, as offered to an agent."""

    version: int = wire_field(version=True)
    task_id: str = id_field()
    subject: WorkflowTaskSubject = wire_field()
    graph_status: GraphStatus = wire_field()
    action_class: ActionClass = wire_field()
    depends_on: tuple[str, ...] = wire_field(
        max_len=DEPENDENCIES_MAX, item_max_len=ID_MAX_CHARS, item_pattern=ID
    )
    entrypoint: InstructionEntrypoint = wire_field()

    def __attrs_post_init__(self) -> None:
        if self.subject.step_id in self.depends_on:
            raise TaskError(
                ErrorCode.INVALID_VALUE, "a step cannot depend on itself", path="$.depends_on"
            )
        if len(set(self.depends_on)) != len(self.depends_on):
            raise TaskError(
                ErrorCode.INVALID_VALUE, "dependencies must be unique", path="$.depends_on"
            )
        if self.entrypoint.workflow_digest != self.subject.plan_digest:
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                "entrypoint workflow_digest must equal the subject's plan_digest",
                path="$.entrypoint.workflow_digest",
            )
        if self.action_class is ActionClass.REVIEW:
            for index, row in enumerate(self.entrypoint.criteria):
                if row.mode is not CriterionMode.CONTROLLER_ONLY:
                    raise TaskError(
                        ErrorCode.INVALID_CRITERIA,
                        "review steps are controller-only",
                        path=f"$.entrypoint.criteria[{index}].mode",
                    )

    @property
    def criteria(self) -> tuple[TaskCriterion, ...]:
        """The task's criteria (they live inline in the entrypoint)."""
        return self.entrypoint.criteria

    @property
    def digest(self) -> str:
        """The task digest (see :func:`task_digest`)."""
        return task_digest(self)


@attrs.frozen(kw_only=True)
class InstructionEntrypointResponse:
    """The answer to ``instructions``: an entrypoint, or an explicit schema mismatch.

    A mismatch is not an empty task and never falls back to mutable client help.
    """

    status: Literal["entrypoint", "schema_mismatch"] = wire_field()
    task_id: str = id_field()
    task_digest: str = digest_field()
    entrypoint: InstructionEntrypoint | None = wire_field()
    mismatch: SchemaMismatch | None = wire_field()

    def __attrs_post_init__(self) -> None:
        if (self.status == "entrypoint") != (self.entrypoint is not None) or (
            self.status == "schema_mismatch"
        ) != (self.mismatch is not None):
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "status entrypoint carries only an entrypoint; schema_mismatch only a mismatch",
                path="$.status",
            )


def task_digest(task: WorkflowTask) -> str:
    """Return the task digest: ``agentscm.agent-workflow-task.v1`` over its canonical bytes.

    Every field (subject, graph status, action class, dependencies, entrypoint) is bound, so
    changing any bound input changes the digest.
    """
    return domain_digest(TASK_DOMAIN, canonical_json(task))


def subject_digest(subject: WorkflowTaskSubject) -> str:
    """Return the subject digest: ``agentscm.agent-workflow-subject.v1`` over canonical bytes."""
    return domain_digest(SUBJECT_DOMAIN, canonical_json(subject))
