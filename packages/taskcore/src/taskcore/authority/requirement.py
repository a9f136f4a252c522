"""Installed WorkflowRequirements and their compiled, immutable plans.

An operator installs a :class:`WorkflowRequirement`: steps, each with criteria (required or
optional, controller-only or observation-eligible), dependencies on other steps, an action
class, one permitted progression and named references (a name and a path in the repository;
their SHA-256 is derived from the exact revision when a subject is compiled). Installing
compiles it into a :class:`CompiledPlan`: the steps in a stable dependency order plus each
step's immutable *skill* digest. Both digests are domain-separated SHA-256 over canonical
bytes, so a changed requirement is a new digest and a new plan.

Fixed action-class rules (checked at installation, so no task can break them later):

* a ``review`` step is controller-only: every criterion is ``controller_only`` and its
  progression is ``collector`` or ``controller``, never ``agent_result``;
* an ``agent_result`` step has at least one ``observation_eligible`` criterion, since a
  result can never speak for a controller-only one;
* every step has at least one criterion; step IDs are unique; dependencies name other steps
  of the same requirement and form no cycle.

>>> from taskcore.contract import TaskCriterion, CriterionMode
>>> step = RequirementStep(step_id="tests", summary="Run the tests.",
...     action_class=ActionClass.TEST, graph_status=GraphStatus.REQUIRED,
...     progression=WorkflowProgression.AGENT_RESULT, depends_on=(),
...     criteria=(TaskCriterion(criterion="pass", description="all pass",
...         mode=CriterionMode.OBSERVATION_ELIGIBLE, required=True),), references=())
>>> plan = compile_requirement(WorkflowRequirement(version=1, requirement_id="ci",
...     summary="CI", steps=(step,)))
>>> plan.order, len(plan.digest)
(('tests',), 64)
"""

from __future__ import annotations

from typing import Final

import attrs

from taskcore.canonical import canonical_json
from taskcore.codec import Codec, default_codec, wire_field
from taskcore.contract import (
    ActionClass,
    CriterionMode,
    GraphStatus,
    TaskCriterion,
    WorkflowProgression,
    validate_reference_path,
)
from taskcore.contract.common import digest_field, id_field
from taskcore.digest import PLAN_DOMAIN, domain_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    CRITERIA_MAX,
    DEPENDENCIES_MAX,
    ID_MAX_CHARS,
    LEASE_MAX_MS,
    LEASE_MIN_MS,
    NAMED_REFERENCES_MAX,
    PATH_MAX_CHARS,
    REQUIREMENT_MAX_BYTES,
    STEPS_MAX,
    TEXT_MAX_CHARS,
)

__all__ = [
    "POLICY_DOMAIN",
    "REQUIREMENT_DOMAIN",
    "SKILL_DOMAIN",
    "CompiledPlan",
    "CompiledStep",
    "ReferenceSpec",
    "RepositoryPolicy",
    "RequirementStep",
    "WorkflowRequirement",
    "compile_requirement",
    "decode_requirement",
    "policy_digest",
    "requirement_digest",
]

REQUIREMENT_DOMAIN: Final = "agentscm.agent-workflow-requirement.v1"
"""Digest domain of an installed requirement's canonical bytes."""
SKILL_DOMAIN: Final = "agentscm.agent-workflow-skill.v1"
"""Digest domain of one compiled step (the subject's immutable ``skill_digest``)."""
POLICY_DOMAIN: Final = "agentscm.agent-workflow-policy.v1"
"""Digest domain of a repository policy (the entrypoint's ``policy_digest``)."""

_ID = r"[A-Za-z0-9._-]{1,128}"


@attrs.frozen(kw_only=True)
class ReferenceSpec:
    """A named reference as installed: a name and a canonical relative path.

    The SHA-256 is not written by the operator: compiling a subject reads the path at the
    subject's exact revision and pins the digest of those bytes.
    """

    name: str = id_field()
    path: str = wire_field(max_len=PATH_MAX_CHARS)

    def __attrs_post_init__(self) -> None:
        validate_reference_path(self.path, path="$.path")


@attrs.frozen(kw_only=True)
class RequirementStep:
    """One step of a requirement, as the operator writes it."""

    step_id: str = id_field()
    summary: str = wire_field(max_len=TEXT_MAX_CHARS)
    action_class: ActionClass = wire_field()
    graph_status: GraphStatus = wire_field()
    progression: WorkflowProgression = wire_field()
    depends_on: tuple[str, ...] = wire_field(
        max_len=DEPENDENCIES_MAX, item_max_len=ID_MAX_CHARS, item_pattern=_ID
    )
    criteria: tuple[TaskCriterion, ...] = wire_field(min_len=1, max_len=CRITERIA_MAX)
    references: tuple[ReferenceSpec, ...] = wire_field(max_len=NAMED_REFERENCES_MAX)


@attrs.frozen(kw_only=True)
class WorkflowRequirement:
    """An operator-installed workflow: an ID, a summary and its steps."""

    version: int = wire_field(version=True)
    requirement_id: str = id_field()
    summary: str = wire_field(max_len=TEXT_MAX_CHARS)
    steps: tuple[RequirementStep, ...] = wire_field(min_len=1, max_len=STEPS_MAX)


@attrs.frozen(kw_only=True)
class RepositoryPolicy:
    """The operator policy of one repository; each change of it is a new policy epoch.

    ``lease_max_ms`` caps every lease issued for the repository's tasks (the service-wide
    maximum still applies). ``agent_assertions`` says whether plain agent assertions are
    accepted as retained material at all (they never qualify either way).
    """

    version: int = wire_field(version=True)
    lease_max_ms: int = wire_field(lo=LEASE_MIN_MS, hi=LEASE_MAX_MS)
    agent_assertions: bool = wire_field()


DEFAULT_POLICY: Final = RepositoryPolicy(
    version=1, lease_max_ms=LEASE_MAX_MS, agent_assertions=True
)
"""The policy of epoch 1, recorded when a repository is registered."""

__all__ += ["DEFAULT_POLICY"]


@attrs.frozen(kw_only=True)
class CompiledStep:
    """One step as compiled: its position in the plan and its immutable skill digest."""

    index: int
    step: RequirementStep
    skill_digest: str = digest_field()


@attrs.frozen(kw_only=True)
class CompiledPlan:
    """The immutable plan of one requirement: steps in dependency order and two digests."""

    requirement_id: str
    requirement_digest: str
    order: tuple[str, ...]
    steps: tuple[CompiledStep, ...]
    digest: str

    def step(self, step_id: str) -> CompiledStep:
        """Return the compiled step ``step_id`` or raise ``NOT_FOUND``."""
        for compiled in self.steps:
            if compiled.step.step_id == step_id:
                return compiled
        raise TaskError(ErrorCode.NOT_FOUND, f"the plan has no step {step_id!r}")


def requirement_digest(requirement: WorkflowRequirement) -> str:
    """Return ``agentscm.agent-workflow-requirement.v1`` over the requirement's canonical bytes."""
    return domain_digest(REQUIREMENT_DOMAIN, canonical_json(requirement))


def policy_digest(policy: RepositoryPolicy) -> str:
    """Return ``agentscm.agent-workflow-policy.v1`` over the policy's canonical bytes."""
    return domain_digest(POLICY_DOMAIN, canonical_json(policy))


def decode_requirement(raw: bytes | str, codec: Codec | None = None) -> WorkflowRequirement:
    """Decode an operator's requirement document strictly (bounded by ``REQUIREMENT_MAX_BYTES``)."""
    return (codec or default_codec()).decode(
        WorkflowRequirement, raw, max_bytes=REQUIREMENT_MAX_BYTES
    )


def _check_step(index: int, step: RequirementStep, ids: set[str]) -> None:
    where = f"$.steps[{index}]"
    names = [c.criterion for c in step.criteria]
    if len(set(names)) != len(names):
        raise TaskError(
            ErrorCode.INVALID_CRITERIA, "criteria of a step are unique", path=f"{where}.criteria"
        )
    refs = [r.name for r in step.references]
    if len(set(refs)) != len(refs):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "reference names of a step are unique",
            path=f"{where}.references",
        )
    if len(set(step.depends_on)) != len(step.depends_on):
        raise TaskError(
            ErrorCode.INVALID_VALUE, "dependencies are listed once each", path=f"{where}.depends_on"
        )
    for dep_index, dep in enumerate(step.depends_on):
        if dep == step.step_id:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "a step cannot depend on itself",
                path=f"{where}.depends_on[{dep_index}]",
            )
        if dep not in ids:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                f"dependency {dep!r} is not a step of this requirement",
                path=f"{where}.depends_on[{dep_index}]",
            )
    eligible = [c for c in step.criteria if c.mode is CriterionMode.OBSERVATION_ELIGIBLE]
    if step.action_class is ActionClass.REVIEW:
        if eligible:
            raise TaskError(
                ErrorCode.INVALID_CRITERIA,
                "review steps are controller-only: every criterion is controller_only",
                path=f"{where}.criteria",
            )
        if step.progression is WorkflowProgression.AGENT_RESULT:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "a review step progresses by collector or controller, never by agent result",
                path=f"{where}.progression",
            )
    if step.progression is WorkflowProgression.AGENT_RESULT and not eligible:
        raise TaskError(
            ErrorCode.INVALID_CRITERIA,
            "an agent_result step needs an observation_eligible criterion",
            path=f"{where}.criteria",
        )


def _order(requirement: WorkflowRequirement) -> tuple[str, ...]:
    """Kahn's algorithm, ties broken by declaration order: a stable dependency order."""
    remaining = {s.step_id: set(s.depends_on) for s in requirement.steps}
    order: list[str] = []
    while remaining:
        ready = [
            s.step_id
            for s in requirement.steps
            if s.step_id in remaining and not remaining[s.step_id]
        ]
        if not ready:
            raise TaskError(
                ErrorCode.INVALID_VALUE, "step dependencies form a cycle", path="$.steps"
            )
        first = ready[0]
        order.append(first)
        del remaining[first]
        for deps in remaining.values():
            deps.discard(first)
    return tuple(order)


def compile_requirement(requirement: WorkflowRequirement) -> CompiledPlan:
    """Check the action-class rules and compile ``requirement`` into its immutable plan.

    The plan digest is ``agentscm.agent-workflow-plan.v1`` over the canonical bytes of
    ``{"requirement_digest", "order", "skills"}`` where ``skills`` lists each step's skill
    digest in plan order; the skill digest is ``agentscm.agent-workflow-skill.v1`` over the
    step's canonical bytes.
    """
    ids: set[str] = set()
    for index, step in enumerate(requirement.steps):
        if step.step_id in ids:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                f"step {step.step_id!r} appears twice",
                path=f"$.steps[{index}].step_id",
            )
        ids.add(step.step_id)
    for index, step in enumerate(requirement.steps):
        _check_step(index, step, ids)
    order = _order(requirement)
    by_id = {s.step_id: s for s in requirement.steps}
    compiled = tuple(
        CompiledStep(
            index=i,
            step=by_id[step_id],
            skill_digest=domain_digest(SKILL_DOMAIN, canonical_json(by_id[step_id])),
        )
        for i, step_id in enumerate(order)
    )
    req_digest = requirement_digest(requirement)
    plan_bytes = canonical_json(
        {
            "requirement_digest": req_digest,
            "order": order,
            "skills": tuple(c.skill_digest for c in compiled),
        }
    )
    return CompiledPlan(
        requirement_id=requirement.requirement_id,
        requirement_digest=req_digest,
        order=order,
        steps=compiled,
        digest=domain_digest(PLAN_DOMAIN, plan_bytes),
    )
