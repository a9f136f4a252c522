"""Task derivation: the tasks of a subject, from the installed plan and nothing else.

Every step of the compiled plan becomes one :class:`~taskcore.contract.WorkflowTask`. Its
:class:`~taskcore.contract.WorkflowTaskSubject` binds the recorded subject (repository,
profile, target, revision, Change and version, context digest, policy epoch, requirement and
plan) plus the step's immutable skill (``skill_id`` is the requirement ID, ``skill_digest``
the compiled step digest) and the step ID. The task ID is ``t-`` followed by the subject
digest, so the same inputs give the same task IDs and digests, and any changed bound input
(a new revision, context, policy epoch, requirement or Change version) gives new ones.

The instruction entrypoint carries every criterion inline, the named references compiled at
the subject's revision (with their SHA-256), the policy digest and the step's one progression.
"""

from __future__ import annotations

from collections.abc import Mapping

from taskcore.authority.requirement import CompiledPlan
from taskcore.contract import (
    CAPABILITY,
    SCHEMA_VERSION,
    InstructionEntrypoint,
    NamedReference,
    WorkflowTask,
    WorkflowTaskSubject,
    subject_digest,
)
from taskcore.store.authority_api import SubjectRecord

__all__ = ["derive_tasks", "task_id_for"]


def task_id_for(subject: WorkflowTaskSubject) -> str:
    """Return the logical task ID of a task subject: ``t-`` + its 64-hex subject digest."""
    return "t-" + subject_digest(subject)


def derive_tasks(
    plan: CompiledPlan,
    subject: SubjectRecord,
    references: Mapping[str, tuple[NamedReference, ...]],
) -> tuple[WorkflowTask, ...]:
    """Return the tasks of ``subject`` in plan order (pure: no I/O, no clock)."""
    tasks = []
    for compiled in plan.steps:
        step = compiled.step
        task_subject = WorkflowTaskSubject(
            version=1,
            repository_id=subject.repository_id,
            profile_id=subject.profile_id,
            target=subject.target,
            revision=subject.revision,
            change_id=subject.change_id,
            change_version=subject.change_version,
            context_digest=subject.context_digest,
            policy_epoch=subject.policy_epoch,
            requirement_digest=subject.requirement_digest,
            plan_digest=subject.plan_digest,
            skill_id=plan.requirement_id,
            skill_digest=compiled.skill_digest,
            step_id=step.step_id,
        )
        tasks.append(
            WorkflowTask(
                version=1,
                task_id=task_id_for(task_subject),
                subject=task_subject,
                graph_status=step.graph_status,
                action_class=step.action_class,
                depends_on=step.depends_on,
                entrypoint=InstructionEntrypoint(
                    capability=CAPABILITY,
                    schema_version=SCHEMA_VERSION,
                    workflow_digest=subject.plan_digest,
                    policy_digest=subject.policy_digest,
                    summary=step.summary,
                    criteria=step.criteria,
                    references=tuple(references.get(step.step_id, ())),
                    progression=step.progression,
                ),
            )
        )
    return tuple(tasks)
