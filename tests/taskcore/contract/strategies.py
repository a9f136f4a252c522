"""Hypothesis strategies for every v1 contract type.

Each strategy builds only valid instances, so property tests can start from any of them and
mutate one thing. A type whose decoder checks nothing beyond its published JSON Schema is
drawn from that schema (``taskcore.schema_strategies.wire_values``), with a field override
where the decoder checks a value further (a canonical path); the composites below remain for
the types with cross-field rules (digests that must agree, a trust class that decides which
fields are present, recovery dispositions), honoured by construction, not by filtering. ``ALL_TYPES`` maps every wire type to its strategy; the coverage test in
``test_common.py`` checks that no contract type is left out.
"""

from __future__ import annotations

import hashlib
import string
from typing import Any

from hypothesis import strategies as st
from taskcore.contract import (
    CAPABILITY,
    ActionClass,
    AgentIdentity,
    AssertionOutcome,
    CommandCollectorProfile,
    CommandRecipe,
    ConfirmedEffect,
    CriterionMode,
    CriterionOutcome,
    CriterionResult,
    Disposition,
    ExecutorBinding,
    ExecutorEnrollment,
    ExecutorProvenance,
    ExecutorRevocation,
    FenceSupersession,
    FiniteReviewCollectorProfile,
    GraphStatus,
    InstructionEntrypoint,
    InstructionEntrypointResponse,
    InstructionsRequest,
    IsolationPolicy,
    MutationAction,
    NamedReference,
    ObservedState,
    ReferenceFetchRequest,
    ReferenceFetchResponse,
    ReferenceStatus,
    SchemaMismatch,
    TaskClaimRequest,
    TaskCriterion,
    TaskMutationRequest,
    TaskRecoveryEnvelope,
    TaskResultAssertion,
    TaskStatusRequest,
    TrustClass,
    UnresolvedEffect,
    WorkflowProgression,
    WorkflowTask,
    WorkflowTaskAttempt,
    WorkflowTaskSubject,
)
from taskcore.limits import U64_MAX
from taskcore.schema_strategies import wire_values

ID_ALPHABET = string.ascii_letters + string.digits + "._-"
# Reference path components: printable ASCII without '/', '\\' and ':'.
PATH_ALPHABET = "".join(ch for ch in map(chr, range(0x21, 0x7F)) if ch not in "/\\:") + " "

u64 = st.integers(0, U64_MAX)
positive = st.integers(1, U64_MAX)
ids = st.text(ID_ALPHABET, min_size=1, max_size=24) | st.text(
    ID_ALPHABET, min_size=120, max_size=128
)
hex64 = st.binary(min_size=32, max_size=32).map(bytes.hex)
hex128 = st.binary(min_size=64, max_size=64).map(bytes.hex)
# Any Unicode scalar value: controls, DEL, U+2028/U+2029, astral emoji; never a lone surrogate.
text_chars = st.characters(exclude_categories=("Cs",))
free_text = st.text(text_chars, max_size=40)
finding_text = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=40
)
reasons = st.text(text_chars, min_size=1, max_size=40)


@st.composite
def reference_paths(draw: st.DrawFn) -> str:
    components = draw(
        st.lists(
            st.text(PATH_ALPHABET, min_size=1, max_size=12).filter(lambda c: c not in (".", "..")),
            min_size=1,
            max_size=5,
        )
    )
    return "/".join(components)


def unique_ids(min_size: int = 0, max_size: int = 5) -> st.SearchStrategy[list[str]]:
    return st.lists(ids, min_size=min_size, max_size=max_size, unique=True)


# -- common -----------------------------------------------------------------------------------

agents = wire_values(AgentIdentity)
executors = wire_values(ExecutorBinding)
schema_mismatches = wire_values(SchemaMismatch)

# -- task -------------------------------------------------------------------------------------


def task_criteria(name: str, *, controller_only: bool = False) -> st.SearchStrategy[TaskCriterion]:
    return st.builds(
        TaskCriterion,
        criterion=st.just(name),
        description=free_text,
        mode=st.just(CriterionMode.CONTROLLER_ONLY)
        if controller_only
        else st.sampled_from(CriterionMode),
        required=st.booleans(),
    )


@st.composite
def named_references(draw: st.DrawFn, name: str | None = None) -> NamedReference:
    return NamedReference(
        name=name if name is not None else draw(ids),
        sha256=draw(hex64),
        path=draw(reference_paths()),
    )


@st.composite
def entrypoints(
    draw: st.DrawFn, *, workflow_digest: str | None = None, controller_only: bool = False
) -> InstructionEntrypoint:
    names = draw(unique_ids(1, 6))
    ref_names = draw(unique_ids(0, 4))
    return InstructionEntrypoint(
        capability=CAPABILITY,
        schema_version=1,
        workflow_digest=workflow_digest or draw(hex64),
        policy_digest=draw(hex64),
        summary=draw(free_text),
        criteria=tuple(draw(task_criteria(n, controller_only=controller_only)) for n in names),
        references=tuple(draw(named_references(n)) for n in ref_names),
        progression=draw(st.sampled_from(WorkflowProgression)),
    )


targets = st.text(string.ascii_letters + string.digits + "._/-", min_size=1, max_size=40)

subjects = wire_values(WorkflowTaskSubject)


@st.composite
def tasks(draw: st.DrawFn) -> WorkflowTask:
    subject = draw(subjects)
    action = draw(st.sampled_from(ActionClass))
    deps = draw(unique_ids(0, 4).map(lambda xs: [x for x in xs if x != subject.step_id]))
    return WorkflowTask(
        version=1,
        task_id=draw(ids),
        subject=subject,
        graph_status=draw(st.sampled_from(GraphStatus)),
        action_class=action,
        depends_on=tuple(deps),
        entrypoint=draw(
            entrypoints(
                workflow_digest=subject.plan_digest,
                controller_only=action is ActionClass.REVIEW,
            )
        ),
    )


@st.composite
def entrypoint_responses(draw: st.DrawFn) -> InstructionEntrypointResponse:
    mismatch = draw(st.booleans())
    return InstructionEntrypointResponse(
        status="schema_mismatch" if mismatch else "entrypoint",
        task_id=draw(ids),
        task_digest=draw(hex64),
        entrypoint=None if mismatch else draw(entrypoints()),
        mismatch=draw(schema_mismatches) if mismatch else None,
    )


# -- requests ---------------------------------------------------------------------------------

claims = wire_values(TaskClaimRequest)


@st.composite
def mutations(draw: st.DrawFn, action: MutationAction | None = None) -> TaskMutationRequest:
    action = action or draw(st.sampled_from(MutationAction))
    return TaskMutationRequest(
        version=1,
        request_id=draw(ids),
        action=action,
        task_id=draw(ids),
        task_digest=draw(hex64),
        attempt_id=draw(ids),
        attempt_digest=draw(hex64),
        execution_operation_id=draw(ids),
        executor=draw(st.none() | executors),
        fence=draw(positive),
        reason=None if action is MutationAction.HEARTBEAT else draw(reasons),
    )


status_requests = wire_values(TaskStatusRequest)
instructions_requests = wire_values(InstructionsRequest)
reference_requests = wire_values(ReferenceFetchRequest)


@st.composite
def reference_responses(draw: st.DrawFn) -> ReferenceFetchResponse:
    status = draw(st.sampled_from(ReferenceStatus))
    if status is ReferenceStatus.AVAILABLE:
        content = draw(st.text(text_chars, max_size=200))
        body = content.encode("utf-8")
        return ReferenceFetchResponse(
            status=status,
            name=draw(ids),
            sha256=hashlib.sha256(body).hexdigest(),
            content=content,
            byte_length=len(body),
            code=None,
        )
    return ReferenceFetchResponse(
        status=status,
        name=draw(ids),
        sha256=draw(hex64),
        content=None,
        byte_length=None,
        code=draw(ids),
    )


# -- attempt, assertion -----------------------------------------------------------------------

attempts = wire_values(WorkflowTaskAttempt)


def criterion_results(name: str) -> st.SearchStrategy[CriterionResult]:
    return st.builds(
        CriterionResult,
        criterion=st.just(name),
        outcome=st.sampled_from(CriterionOutcome),
        findings=st.lists(finding_text, max_size=4).map(tuple),
        evidence_digests=st.lists(hex64, max_size=3).map(tuple),
    )


provenances = wire_values(ExecutorProvenance)


@st.composite
def assertions(draw: st.DrawFn, trust_class: TrustClass | None = None) -> TaskResultAssertion:
    trust = trust_class or draw(
        st.sampled_from([TrustClass.AGENT_ASSERTION, TrustClass.REGISTERED_EXECUTOR_OBSERVATION])
    )
    observed = trust is TrustClass.REGISTERED_EXECUTOR_OBSERVATION
    names = draw(unique_ids(1, 6))
    return TaskResultAssertion(
        version=1,
        task_id=draw(ids),
        task_digest=draw(hex64),
        attempt_id=draw(ids),
        attempt_digest=draw(hex64),
        request_id=draw(ids),
        execution_operation_id=draw(ids),
        agent=draw(agents),
        executor=draw(executors) if observed else None,
        fence=draw(positive),
        trust_class=trust,
        outcome=draw(st.sampled_from(AssertionOutcome)),
        criteria=tuple(draw(criterion_results(n)) for n in names),
        executor_provenance=draw(st.none() | provenances) if observed else None,
    )


# -- enrollment, collector --------------------------------------------------------------------

enrollments = wire_values(ExecutorEnrollment)
revocations = wire_values(ExecutorRevocation)
env_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)
# The decoder checks these paths beyond their schema (canonical relative, or absolute without
# "." and ".." components): drawn here, the rest of each profile from its schema.
working_directories = st.just(".") | reference_paths()
# An argument may not contain NUL (no schema spelling either).
argvs = st.lists(
    st.text(
        st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
        min_size=1,
        max_size=20,
    ),
    min_size=1,
    max_size=5,
)
recipes = wire_values(
    CommandRecipe, fields={"working_directory": working_directories, "argv": argvs}
)
absolute_paths = st.from_regex(
    r"/[a-z0-9_.-]{1,12}(/[a-z0-9_-]{1,12}){0,3}", fullmatch=True
).filter(lambda p: not ({".", ".."} & set(p.split("/"))))
isolation_policies = wire_values(
    IsolationPolicy, fields={"read_only_paths": st.lists(absolute_paths, max_size=4, unique=True)}
)
_profile_paths = {
    "working_directory": working_directories,
    "argv": argvs,
    "read_only_paths": st.lists(absolute_paths, max_size=4, unique=True),
    "required_paths": st.lists(reference_paths(), max_size=4),
}
command_profiles = wire_values(CommandCollectorProfile, fields=_profile_paths)
review_profiles = wire_values(FiniteReviewCollectorProfile, fields=_profile_paths)

# -- recovery ---------------------------------------------------------------------------------


@st.composite
def supersessions(draw: st.DrawFn, old_fence: int | None = None) -> FenceSupersession:
    old = old_fence if old_fence is not None else draw(st.integers(1, U64_MAX - 1))
    return FenceSupersession(old_fence=old, new_fence=draw(st.integers(old + 1, U64_MAX)))


@st.composite
def recovery_envelopes(draw: st.DrawFn) -> TaskRecoveryEnvelope:
    disposition = draw(st.sampled_from(Disposition))
    state = draw(st.sampled_from(ObservedState))
    fence = draw(st.integers(1, U64_MAX - 1))
    allowed_confirmed = [
        e
        for e in ConfirmedEffect
        if not (e is ConfirmedEffect.ASSERTION_RETAINED and state is not ObservedState.FINISHED)
        and not (e is ConfirmedEffect.FENCE_SUPERSEDED and state is not ObservedState.REPLACED)
    ]
    confirmed: list[ConfirmedEffect] = []
    unresolved: list[UnresolvedEffect] = []
    if disposition is Disposition.CONFIRMED:
        confirmed = draw(st.lists(st.sampled_from(allowed_confirmed), min_size=1, unique=True))
    elif disposition is Disposition.UNCERTAIN_EFFECT:
        confirmed = draw(st.lists(st.sampled_from(allowed_confirmed), unique=True))
        unresolved = draw(st.lists(st.sampled_from(UnresolvedEffect), min_size=1, unique=True))
    return TaskRecoveryEnvelope.build(
        request_id=draw(ids),
        execution_operation_id=draw(ids),
        task_id=draw(ids),
        task_digest=draw(hex64),
        attempt_id=draw(ids),
        attempt_digest=draw(hex64),
        fence=fence,
        disposition=disposition,
        observed_state=state,
        confirmed_effects=tuple(confirmed),
        unresolved_effects=tuple(unresolved),
        fence_supersession=draw(supersessions(fence)) if state is ObservedState.REPLACED else None,
    )


ALL_TYPES: dict[type[Any], st.SearchStrategy[Any]] = {
    AgentIdentity: agents,
    ExecutorBinding: executors,
    SchemaMismatch: schema_mismatches,
    TaskCriterion: ids.flatmap(task_criteria),
    NamedReference: named_references(),
    InstructionEntrypoint: entrypoints(),
    WorkflowTaskSubject: subjects,
    WorkflowTask: tasks(),
    InstructionEntrypointResponse: entrypoint_responses(),
    TaskClaimRequest: claims,
    TaskMutationRequest: mutations(),
    TaskStatusRequest: status_requests,
    InstructionsRequest: instructions_requests,
    ReferenceFetchRequest: reference_requests,
    ReferenceFetchResponse: reference_responses(),
    WorkflowTaskAttempt: attempts,
    CriterionResult: ids.flatmap(criterion_results),
    ExecutorProvenance: provenances,
    TaskResultAssertion: assertions(),
    ExecutorEnrollment: enrollments,
    ExecutorRevocation: revocations,
    CommandRecipe: recipes,
    CommandCollectorProfile: command_profiles,
    IsolationPolicy: isolation_policies,
    FiniteReviewCollectorProfile: review_profiles,
    FenceSupersession: supersessions(),
    TaskRecoveryEnvelope: recovery_envelopes(),
}
