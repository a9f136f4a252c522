"""The authority: what workflow tasks are bound to, over git.

* :mod:`~taskcore.authority.gitrev` - the immutable revision of a commit and read-only git
  helpers (the function the CLI and the Stop hooks reuse);
* :mod:`~taskcore.authority.requirement` - installed WorkflowRequirements, compiled plans,
  repository policy;
* :mod:`~taskcore.authority.subjects` - checkpoints: compile from a commit, record a subject,
  judge whether a subject is current;
* :mod:`~taskcore.authority.enrollment` - the current executor registration lookup;
* :mod:`~taskcore.authority.admin` - the operator's acts (behind the ``operator.*``
  operations of :mod:`taskcore.operator_ops`);
* :mod:`~taskcore.authority.operator` - what the operator commands decide locally: the
  one-step TEST requirement and the runtime a command profile resolves to here;
* :mod:`~taskcore.authority.config` - the strict ``agent_task_profiles`` config and applying it.

``docs/git-mapping.md`` maps each seed concept to git.
"""

from __future__ import annotations

from taskcore.lazy import LazyExports

TYPE_CHECKING = False  # not typing's: importing the package must stay cheap
if TYPE_CHECKING:
    from taskcore.authority.admin import (
        InstalledRequirement,
        enroll_executor,
        install_requirement,
        register_profile,
        register_repository,
        revoke_executor,
        set_policy,
    )
    from taskcore.authority.enrollment import current_registration, registration_is_current
    from taskcore.authority.gitrev import (
        WorkTreeState,
        git_revision,
        head_revision,
        read_blob_at,
        resolve_commit,
        work_tree_state,
    )
    from taskcore.authority.requirement import (
        DEFAULT_POLICY,
        CompiledPlan,
        CompiledStep,
        ReferenceSpec,
        RepositoryPolicy,
        RequirementStep,
        WorkflowRequirement,
        compile_requirement,
        decode_requirement,
        policy_digest,
        requirement_digest,
    )
    from taskcore.authority.subjects import (
        AuthorityView,
        CompiledCheckpoint,
        check_current,
        compile_checkpoint,
        load_plan,
        load_route,
        record_subject,
        subject_references,
    )

_SOURCES: dict[str, tuple[str, ...]] = {
    "taskcore.authority.admin": (
        "InstalledRequirement",
        "enroll_executor",
        "install_requirement",
        "register_profile",
        "register_repository",
        "revoke_executor",
        "set_policy",
    ),
    "taskcore.authority.enrollment": (
        "current_registration",
        "registration_is_current",
    ),
    "taskcore.authority.gitrev": (
        "WorkTreeState",
        "git_revision",
        "head_revision",
        "read_blob_at",
        "resolve_commit",
        "work_tree_state",
    ),
    "taskcore.authority.requirement": (
        "DEFAULT_POLICY",
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
    ),
    "taskcore.authority.subjects": (
        "AuthorityView",
        "CompiledCheckpoint",
        "check_current",
        "compile_checkpoint",
        "load_plan",
        "load_route",
        "record_subject",
        "subject_references",
    ),
}
_EXPORTS = LazyExports(__name__, _SOURCES, globals())


def __getattr__(name: str) -> object:
    """Load an exported name from its module on first use (:pep:`562`)."""
    return _EXPORTS.load(name)


def __dir__() -> list[str]:
    return _EXPORTS.names()


__all__ = [
    "DEFAULT_POLICY",
    "AuthorityView",
    "CompiledCheckpoint",
    "CompiledPlan",
    "CompiledStep",
    "InstalledRequirement",
    "ReferenceSpec",
    "RepositoryPolicy",
    "RequirementStep",
    "WorkTreeState",
    "WorkflowRequirement",
    "check_current",
    "compile_checkpoint",
    "compile_requirement",
    "current_registration",
    "decode_requirement",
    "enroll_executor",
    "git_revision",
    "head_revision",
    "install_requirement",
    "load_plan",
    "load_route",
    "policy_digest",
    "read_blob_at",
    "record_subject",
    "register_profile",
    "register_repository",
    "registration_is_current",
    "requirement_digest",
    "resolve_commit",
    "revoke_executor",
    "set_policy",
    "subject_references",
    "work_tree_state",
]
