"""Small hand-written contract values the rule tests start from.

A mixed task (two observation-eligible criteria, one required and one optional, plus one
controller-only review criterion), the claim and attempt that go with it and a conforming
registered observation. Tests change one thing at a time with ``attrs.evolve``.
"""

from __future__ import annotations

import attrs
from taskcore.contract import (
    CAPABILITY,
    ActionClass,
    AgentIdentity,
    AssertionOutcome,
    CriterionMode,
    CriterionOutcome,
    CriterionResult,
    ExecutorBinding,
    GraphStatus,
    InstructionEntrypoint,
    NamedReference,
    TaskClaimRequest,
    TaskCriterion,
    TaskResultAssertion,
    TrustClass,
    WorkflowProgression,
    WorkflowTask,
    WorkflowTaskAttempt,
    WorkflowTaskSubject,
)
from taskcore.testing import OTHER_PUBLIC as OTHER_PUBLIC  # RFC 8032 test keys, re-exported
from taskcore.testing import OTHER_SEED as OTHER_SEED
from taskcore.testing import PUBLIC as PUBLIC
from taskcore.testing import SEED as SEED

AGENT = AgentIdentity(owner_id="acme", agent_id="agent-1")
EXECUTOR = ExecutorBinding(
    registration_id="reg-1", executor_id="laptop-1", registration_epoch=1, verification_key_id="k1"
)


def subject() -> WorkflowTaskSubject:
    return WorkflowTaskSubject(
        version=1,
        repository_id="acme.widgets",
        profile_id="default",
        target="refs/heads/main",
        revision="1" * 64,
        change_id="change-7",
        change_version=3,
        context_digest="2" * 64,
        policy_epoch=5,
        requirement_digest="3" * 64,
        plan_digest="4" * 64,
        skill_id="ci",
        skill_digest="5" * 64,
        step_id="tests",
    )


def criteria() -> tuple[TaskCriterion, ...]:
    return (
        TaskCriterion(
            criterion="unit-tests",
            description="the unit tests pass",
            mode=CriterionMode.OBSERVATION_ELIGIBLE,
            required=True,
        ),
        TaskCriterion(
            criterion="lint",
            description="the linter is clean",
            mode=CriterionMode.OBSERVATION_ELIGIBLE,
            required=False,
        ),
        TaskCriterion(
            criterion="review",
            description="an independent review approves",
            mode=CriterionMode.CONTROLLER_ONLY,
            required=True,
        ),
    )


def entrypoint(**changes: object) -> InstructionEntrypoint:
    base = InstructionEntrypoint(
        capability=CAPABILITY,
        schema_version=1,
        workflow_digest="4" * 64,
        policy_digest="6" * 64,
        summary="Run the unit tests and the linter on the exact revision.",
        criteria=criteria(),
        references=(NamedReference(name="guide", sha256="7" * 64, path="docs/testing.md"),),
        progression=WorkflowProgression.AGENT_RESULT,
    )
    return attrs.evolve(base, **changes)


def task(**changes: object) -> WorkflowTask:
    base = WorkflowTask(
        version=1,
        task_id="task-1",
        subject=subject(),
        graph_status=GraphStatus.REQUIRED,
        action_class=ActionClass.TEST,
        depends_on=("build",),
        entrypoint=entrypoint(),
    )
    return attrs.evolve(base, **changes)


def claim(**changes: object) -> TaskClaimRequest:
    t = task()
    base = TaskClaimRequest(
        version=1,
        request_id="claim-1",
        task_id=t.task_id,
        task_digest=t.digest,
        execution_operation_id="exec-1",
        requested_lease_ms=60_000,
        executor=EXECUTOR,
    )
    return attrs.evolve(base, **changes)


def attempt(**changes: object) -> WorkflowTaskAttempt:
    t = task()
    base = WorkflowTaskAttempt(
        version=1,
        task_id=t.task_id,
        task_digest=t.digest,
        attempt_id="attempt-1",
        claim_request_id="claim-1",
        execution_operation_id="exec-1",
        agent=AGENT,
        executor=EXECUTOR,
        fence=1,
        lease_ms=60_000,
        issued_at_ms=1_700_000_000_000,
    )
    return attrs.evolve(base, **changes)


def rows(**outcomes: CriterionOutcome) -> tuple[CriterionResult, ...]:
    """One row per sample criterion; defaults: passed, passed, not_claimed."""
    chosen = {
        "unit-tests": CriterionOutcome.PASSED,
        "lint": CriterionOutcome.PASSED,
        "review": CriterionOutcome.NOT_CLAIMED,
    }
    chosen.update({k.replace("_", "-"): v for k, v in outcomes.items()})
    return tuple(
        CriterionResult(criterion=name, outcome=outcome, findings=(), evidence_digests=())
        for name, outcome in chosen.items()
    )


def assertion(**changes: object) -> TaskResultAssertion:
    a = attempt()
    base = TaskResultAssertion(
        version=1,
        task_id=a.task_id,
        task_digest=a.task_digest,
        attempt_id=a.attempt_id,
        attempt_digest=a.digest,
        request_id="result-1",
        execution_operation_id=a.execution_operation_id,
        agent=AGENT,
        executor=EXECUTOR,
        fence=a.fence,
        trust_class=TrustClass.REGISTERED_EXECUTOR_OBSERVATION,
        outcome=AssertionOutcome.PASSED,
        criteria=rows(),
        executor_provenance=None,
    )
    return attrs.evolve(base, **changes)
