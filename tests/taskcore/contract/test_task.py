import attrs
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from taskcore.canonical import canonical_json
from taskcore.codec import Codec
from taskcore.contract import (
    ActionClass,
    CriterionMode,
    InstructionEntrypoint,
    InstructionEntrypointResponse,
    NamedReference,
    TaskCriterion,
    WorkflowProgression,
    WorkflowTask,
    WorkflowTaskSubject,
    schema_mismatch,
    subject_digest,
    task_digest,
)
from taskcore.digest import SUBJECT_DOMAIN, TASK_DOMAIN, domain_digest
from taskcore.errors import ErrorCode, TaskError

from . import samples
from .strategies import (
    entrypoint_responses,
    entrypoints,
    named_references,
    subjects,
    task_criteria,
    tasks,
)
from .wire import CODEC, changed, check_round_trip, check_strictness, expect_error


# -- round trips and strict decoding ---------------------------------------------------------
@given(
    st.one_of(
        st.text("abc", min_size=1, max_size=3).flatmap(task_criteria),
        named_references(),
        subjects,
    )
)
def test_small_task_types_round_trip_and_decode_strictly(obj):
    check_round_trip(obj)
    assert check_strictness(obj) > 0


@settings(max_examples=15)  # a task tree is large; its strategy is slow
@given(st.one_of(entrypoints(), tasks(), entrypoint_responses()))
def test_tasks_and_entrypoints_round_trip_and_decode_strictly(obj):
    check_round_trip(obj)
    assert check_strictness(obj) > 0


def test_sample_task_decodes_from_its_own_json():
    task = samples.task()
    assert Codec().decode(WorkflowTask, Codec().dumps(task)) == task


# -- every offered task has at least one criterion --------------------------------------------


def test_a_task_without_criteria_is_refused_on_the_wire():
    tree = CODEC.unstructure(samples.task())
    tree["entrypoint"]["criteria"] = []
    expect_error(WorkflowTask, tree, ErrorCode.OUT_OF_BOUNDS, "$.entrypoint.criteria")


def test_a_task_without_criteria_cannot_be_constructed_either():
    # The same refusal as on the wire: the field's rule, checked by its validator.
    with pytest.raises(TaskError) as info:
        samples.entrypoint(criteria=())
    assert (info.value.code, info.value.path) == (ErrorCode.OUT_OF_BOUNDS, "$.criteria")


def test_an_optional_step_still_needs_a_criterion():
    from taskcore.contract import GraphStatus

    optional = samples.task(graph_status=GraphStatus.OPTIONAL)
    tree = CODEC.unstructure(optional)
    tree["entrypoint"]["criteria"] = []
    expect_error(WorkflowTask, tree, ErrorCode.OUT_OF_BOUNDS, "$.entrypoint.criteria")


def test_a_criterion_listed_twice_is_refused_with_its_index():
    tree = CODEC.unstructure(samples.task())
    tree["entrypoint"]["criteria"].append(tree["entrypoint"]["criteria"][0])
    expect_error(
        WorkflowTask, tree, ErrorCode.INVALID_CRITERIA, "$.entrypoint.criteria[3].criterion"
    )


# -- entrypoint rules -------------------------------------------------------------------------


def test_entrypoint_capability_must_be_the_v1_capability():
    tree = CODEC.unstructure(samples.entrypoint())
    tree["capability"] = "agentscm.agent-workflow-tasks/v2"
    expect_error(InstructionEntrypoint, tree, ErrorCode.INVALID_VALUE, "$.capability")


def test_entrypoint_schema_version_other_than_one_is_unsupported():
    tree = CODEC.unstructure(samples.task())
    tree["entrypoint"]["schema_version"] = 2
    expect_error(WorkflowTask, tree, ErrorCode.UNSUPPORTED_VERSION, "$.entrypoint.schema_version")


def test_required_criteria_are_inline_in_the_entrypoint():
    task = samples.task()
    required = [c.criterion for c in task.criteria if c.required]
    assert required == ["unit-tests", "review"]
    assert task.criteria is task.entrypoint.criteria


def test_reference_names_are_unique():
    ref = NamedReference(name="guide", sha256="7" * 64, path="a.md")
    with pytest.raises(TaskError) as info:
        samples.entrypoint(references=(ref, attrs.evolve(ref, path="b.md")))
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_VALUE, "$.references")


def test_a_reference_path_breaking_the_rules_is_invalid_path_at_its_json_path():
    tree = CODEC.unstructure(samples.task())
    tree["entrypoint"]["references"][0]["path"] = "../secrets"
    expect_error(WorkflowTask, tree, ErrorCode.INVALID_PATH, "$.entrypoint.references[0].path")


def test_a_named_reference_carries_only_name_digest_and_path():
    assert [f.name for f in attrs.fields(NamedReference)] == ["name", "sha256", "path"]


def test_the_entrypoint_has_exactly_one_progression():
    tree = CODEC.unstructure(samples.entrypoint())
    tree["progression"] = ["agent_result", "collector"]
    expect_error(InstructionEntrypoint, tree, ErrorCode.WRONG_TYPE, "$.progression")


# -- task rules -------------------------------------------------------------------------------


def test_entrypoint_workflow_digest_is_bound_to_the_plan():
    with pytest.raises(TaskError) as info:
        samples.task(entrypoint=samples.entrypoint(workflow_digest="9" * 64))
    assert info.value.code is ErrorCode.BINDING_MISMATCH
    assert info.value.path == "$.entrypoint.workflow_digest"


def test_review_steps_are_controller_only():
    with pytest.raises(TaskError) as info:
        samples.task(action_class=ActionClass.REVIEW)
    assert info.value.code is ErrorCode.INVALID_CRITERIA
    assert info.value.path == "$.entrypoint.criteria[0].mode"


def test_a_review_step_with_only_controller_criteria_is_accepted():
    only_controller = tuple(
        attrs.evolve(c, mode=CriterionMode.CONTROLLER_ONLY) for c in samples.criteria()
    )
    task = samples.task(
        action_class=ActionClass.REVIEW,
        entrypoint=samples.entrypoint(
            criteria=only_controller, progression=WorkflowProgression.CONTROLLER
        ),
    )
    check_round_trip(task)


def test_a_step_cannot_depend_on_itself_or_twice_on_another():
    with pytest.raises(TaskError):
        samples.task(depends_on=("tests",))
    with pytest.raises(TaskError):
        samples.task(depends_on=("build", "build"))


# -- InstructionEntrypointResponse ------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "with_entrypoint", "with_mismatch"),
    [
        ("entrypoint", False, False),
        ("entrypoint", True, True),
        ("entrypoint", False, True),
        ("schema_mismatch", False, False),
        ("schema_mismatch", True, False),
        ("schema_mismatch", True, True),
    ],
)
def test_entrypoint_response_carries_exactly_what_its_status_says(
    status, with_entrypoint, with_mismatch
):
    with pytest.raises(TaskError) as info:
        InstructionEntrypointResponse(
            status=status,
            task_id="t",
            task_digest="a" * 64,
            entrypoint=samples.entrypoint() if with_entrypoint else None,
            mismatch=schema_mismatch((2,)) if with_mismatch else None,
        )
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_VALUE, "$.status")


def test_a_schema_mismatch_is_not_an_empty_task():
    answer = InstructionEntrypointResponse(
        status="schema_mismatch",
        task_id="t",
        task_digest="a" * 64,
        entrypoint=None,
        mismatch=schema_mismatch((2,)),
    )
    tree = CODEC.unstructure(answer)
    assert tree["mismatch"]["server_schema_versions"] == [1]
    tree["status"] = "entrypoint"
    expect_error(InstructionEntrypointResponse, tree, ErrorCode.INVALID_VALUE, "$.status")


# -- digests ----------------------------------------------------------------------------------


def test_task_digest_is_the_task_domain_over_canonical_bytes():
    task = samples.task()
    assert task.digest == task_digest(task)
    assert task.digest == domain_digest(TASK_DOMAIN, canonical_json(task))
    assert TASK_DOMAIN == "agentscm.agent-workflow-task.v1"


def test_subject_digest_is_the_subject_domain_over_canonical_bytes():
    subject = samples.subject()
    assert subject_digest(subject) == domain_digest(SUBJECT_DOMAIN, canonical_json(subject))


def test_task_digest_is_independent_of_how_the_task_was_decoded():
    task = samples.task()
    again = Codec().decode(WorkflowTask, Codec().dumps(task))
    assert again.digest == task.digest


SUBJECT_FIELDS = [f.name for f in attrs.fields(WorkflowTaskSubject) if f.name != "version"]


@pytest.mark.parametrize("name", SUBJECT_FIELDS)
def test_changing_any_subject_field_changes_the_task_and_subject_digests(name):
    before = samples.task()
    subject = attrs.evolve(before.subject, **{name: changed(getattr(before.subject, name))})
    entry = before.entrypoint
    if name == "plan_digest":  # the entrypoint's workflow digest follows the plan
        entry = attrs.evolve(entry, workflow_digest=subject.plan_digest)
    after = attrs.evolve(before, subject=subject, entrypoint=entry)
    assert subject_digest(subject) != subject_digest(before.subject)
    assert after.digest != before.digest


TASK_CHANGES = {
    "task_id": lambda t: attrs.evolve(t, task_id="task-2"),
    "graph_status": lambda t: attrs.evolve(t, graph_status=changed(t.graph_status)),
    "action_class": lambda t: attrs.evolve(t, action_class=ActionClass.IMPLEMENT),
    "depends_on (added)": lambda t: attrs.evolve(t, depends_on=("build", "lint")),
    "depends_on (removed)": lambda t: attrs.evolve(t, depends_on=()),
    "depends_on (renamed)": lambda t: attrs.evolve(t, depends_on=("compile",)),
}
ENTRYPOINT_CHANGES = {
    "policy_digest": lambda e: attrs.evolve(e, policy_digest="8" * 64),
    "summary": lambda e: attrs.evolve(e, summary=e.summary + " "),
    "progression": lambda e: attrs.evolve(e, progression=WorkflowProgression.COLLECTOR),
    "criteria (added)": lambda e: attrs.evolve(
        e,
        criteria=(
            *e.criteria,
            TaskCriterion(
                criterion="docs",
                description="d",
                mode=CriterionMode.OBSERVATION_ELIGIBLE,
                required=False,
            ),
        ),
    ),
    "criteria (removed)": lambda e: attrs.evolve(e, criteria=e.criteria[:2]),
    "criteria (reordered)": lambda e: attrs.evolve(e, criteria=e.criteria[::-1]),
    "references (added)": lambda e: attrs.evolve(
        e, references=(*e.references, NamedReference(name="more", sha256="9" * 64, path="m.md"))
    ),
    "references (removed)": lambda e: attrs.evolve(e, references=()),
}
for _field in ("criterion", "description", "mode", "required"):
    ENTRYPOINT_CHANGES[f"criteria[0].{_field}"] = lambda e, f=_field: attrs.evolve(
        e,
        criteria=(
            attrs.evolve(e.criteria[0], **{f: changed(getattr(e.criteria[0], f))}),
            *e.criteria[1:],
        ),
    )
for _field in ("name", "sha256", "path"):
    ENTRYPOINT_CHANGES[f"references[0].{_field}"] = lambda e, f=_field: attrs.evolve(
        e, references=(attrs.evolve(e.references[0], **{f: changed(getattr(e.references[0], f))}),)
    )


@pytest.mark.parametrize("change", sorted(TASK_CHANGES))
def test_changing_any_task_field_changes_the_task_digest(change):
    before = samples.task()
    assert TASK_CHANGES[change](before).digest != before.digest


@pytest.mark.parametrize("change", sorted(ENTRYPOINT_CHANGES))
def test_changing_any_entrypoint_field_changes_the_task_digest(change):
    before = samples.task()
    after = attrs.evolve(before, entrypoint=ENTRYPOINT_CHANGES[change](before.entrypoint))
    assert after.digest != before.digest


def test_every_task_and_entrypoint_field_has_a_digest_test():
    covered = {c.split(" ")[0].split("[")[0] for c in TASK_CHANGES} | {"subject", "entrypoint"}
    assert covered == {f.name for f in attrs.fields(WorkflowTask)} - {"version"}
    fixed = {"capability", "schema_version", "workflow_digest"}  # constants or bound to the plan
    covered = {c.split(" ")[0].split("[")[0] for c in ENTRYPOINT_CHANGES} | fixed
    assert covered == {f.name for f in attrs.fields(InstructionEntrypoint)}


@given(tasks(), st.data())
def test_any_single_subject_change_changes_the_task_digest(task, data):
    name = data.draw(st.sampled_from(SUBJECT_FIELDS))
    subject = attrs.evolve(task.subject, **{name: changed(getattr(task.subject, name))})
    entry = attrs.evolve(task.entrypoint, workflow_digest=subject.plan_digest)
    try:
        after = attrs.evolve(task, subject=subject, entrypoint=entry)
    except TaskError:
        assume(False)  # e.g. the new step id is one of the dependencies: not an offerable task
    assert after.digest != task.digest
