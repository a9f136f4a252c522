"""What the operator's commands decide on this machine, beside the acts themselves.

The acts (register, install, enroll, revoke, ...) are ``operator.*`` operations
(:mod:`taskcore.operator_ops`, called through :class:`taskcore.operator_ops.AuthorityAdmin`).
Here: :func:`collector_test_requirement`, the one-step TEST requirement ``install-requirement
--test-step`` installs, and :func:`runtime_here`, what a command profile's ``argv[0]``
resolves to on this machine and whether it is the pinned runtime.

>>> collector_test_requirement("tests", "ok").steps[0].progression.value
'collector'
"""

from __future__ import annotations

import attrs

from taskcore.authority.requirement import RequirementStep, WorkflowRequirement
from taskcore.collector.records import runtime_identity_digest
from taskcore.collector.runtime import probe_runtime
from taskcore.contract import (
    ActionClass,
    CommandRecipe,
    CriterionMode,
    GraphStatus,
    IsolationPolicy,
    TaskCriterion,
    WorkflowProgression,
)

__all__ = ["RuntimeHere", "collector_test_requirement", "runtime_here"]


def collector_test_requirement(step_id: str, summary: str) -> WorkflowRequirement:
    """Return a requirement of one required TEST step that only a collector can satisfy.

    >>> requirement = collector_test_requirement("tests", "The tests pass.")
    >>> requirement.requirement_id, [s.progression.value for s in requirement.steps]
    ('tests-pass', ['collector'])
    """
    return WorkflowRequirement(
        version=1,
        requirement_id=f"{step_id}-pass",
        summary=summary,
        steps=(
            RequirementStep(
                step_id=step_id,
                summary=summary,
                action_class=ActionClass.TEST,
                graph_status=GraphStatus.REQUIRED,
                progression=WorkflowProgression.COLLECTOR,
                depends_on=(),
                criteria=(
                    TaskCriterion(
                        criterion="tests_pass",
                        description="The pinned test command exits 0 on the exact revision.",
                        mode=CriterionMode.CONTROLLER_ONLY,
                        required=True,
                    ),
                ),
                references=(),
            ),
        ),
    )


@attrs.frozen(kw_only=True)
class RuntimeHere:
    """What a command profile's ``argv[0]`` resolves to on this machine, and if it is pinned.

    ``executable`` is the resolved path (what runs and what is hashed); ``matches`` whether
    this machine's runtime identity is the one the profile pins (same-host collection needs
    it; a profile pinned for another machine does not match here, which is expected there).
    """

    argv0: str
    executable: str
    sandbox: str
    runtime_identity_sha256: str
    matches: bool


def runtime_here(
    recipe: CommandRecipe,
    pinned: str | None = None,
    *,
    isolation: IsolationPolicy | None = None,
) -> RuntimeHere:
    """Probe ``recipe`` on this machine (as a collection would) and compare with ``pinned``.

    ``isolation`` is the profile's isolation policy: the sandbox it plans is part of the
    runtime identity, so a profile with one must be probed with it.
    """
    identity = probe_runtime(recipe, isolation=isolation)
    digest = runtime_identity_digest(identity)
    return RuntimeHere(
        argv0=recipe.argv[0],
        executable=identity.executable,
        sandbox=identity.sandbox.value,
        runtime_identity_sha256=digest,
        matches=pinned is None or pinned == digest,
    )
