import attrs
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from taskcore.contract import (
    AgentIdentity,
    AssertionOutcome,
    CriterionMode,
    CriterionOutcome,
    CriterionResult,
    ExecutorProvenance,
    TaskResultAssertion,
    TrustClass,
    validate_against_attempt,
    validate_against_task,
)
from taskcore.errors import ErrorCode, TaskError

from . import samples
from .strategies import assertions, criterion_results, provenances, tasks
from .wire import CODEC, check_round_trip, check_strictness, expect_error

C = CriterionOutcome


def agent_assertion(**changes: object) -> TaskResultAssertion:
    return samples.assertion(trust_class=TrustClass.AGENT_ASSERTION, executor=None, **changes)


# -- round trips and strict decoding ---------------------------------------------------------
@given(st.one_of(st.text("abc", min_size=1, max_size=3).flatmap(criterion_results), provenances))
def test_rows_and_provenance_round_trip_and_decode_strictly(obj):
    check_round_trip(obj)
    assert check_strictness(obj) > 0


@settings(max_examples=25)  # an assertion tree is large; its strategy is slow
@given(assertions())
def test_assertions_round_trip_and_decode_strictly(assertion):
    check_round_trip(assertion)
    assert check_strictness(assertion) > 0


def test_fields_are_in_the_seed_declared_struct_order():
    assert [f.name for f in attrs.fields(TaskResultAssertion)] == [
        "version",
        "task_id",
        "task_digest",
        "attempt_id",
        "attempt_digest",
        "request_id",
        "execution_operation_id",
        "agent",
        "executor",
        "fence",
        "trust_class",
        "outcome",
        "criteria",
        "executor_provenance",
    ]
    assert [f.name for f in attrs.fields(CriterionResult)] == [
        "criterion",
        "outcome",
        "findings",
        "evidence_digests",
    ]


# -- counts are derived, never accepted ------------------------------------------------------


@pytest.mark.parametrize("key", ["counts", "completeness", "passed_count", "complete"])
def test_counts_and_completeness_are_never_accepted(key):
    tree = CODEC.unstructure(samples.assertion())
    tree[key] = {"passed": 3}
    expect_error(TaskResultAssertion, tree, ErrorCode.UNKNOWN_FIELD, f"$.{key}")


def test_counts_are_derived_from_the_rows():
    assertion = samples.assertion(
        outcome=AssertionOutcome.FAILED, criteria=samples.rows(unit_tests=C.FAILED)
    )
    assert assertion.counts == {"passed": 1, "failed": 1, "uncertain": 0, "not_claimed": 1}


# -- shape rules ------------------------------------------------------------------------------


def test_a_duplicate_row_is_refused_on_decode_with_its_index():
    tree = CODEC.unstructure(samples.assertion())
    tree["criteria"].append(tree["criteria"][1])
    expect_error(TaskResultAssertion, tree, ErrorCode.INVALID_CRITERIA, "$.criteria[3].criterion")


def test_controller_evidence_cannot_be_asserted_on_the_wire():
    tree = CODEC.unstructure(samples.assertion())
    tree["trust_class"] = "independent_controller_evidence"
    expect_error(TaskResultAssertion, tree, ErrorCode.INVALID_VALUE, "$.trust_class")


def test_the_collector_dependency_class_is_not_a_wire_value():
    tree = CODEC.unstructure(samples.assertion())
    tree["trust_class"] = "authority_validated_collector_dependency"
    expect_error(TaskResultAssertion, tree, ErrorCode.INVALID_VALUE, "$.trust_class")


def test_a_registered_observation_names_its_executor():
    with pytest.raises(TaskError) as info:
        samples.assertion(executor=None)
    assert (info.value.code, info.value.path) == (ErrorCode.MISSING_FIELD, "$.executor")


def test_an_agent_assertion_names_no_executor_and_is_not_signed():
    with pytest.raises(TaskError) as info:
        samples.assertion(trust_class=TrustClass.AGENT_ASSERTION)
    assert info.value.path == "$.executor"
    with pytest.raises(TaskError) as info:
        agent_assertion(
            executor_provenance=ExecutorProvenance(observation_digest="a" * 64, signature="b" * 128)
        )
    assert info.value.path == "$.executor_provenance"


def test_nul_in_a_finding_is_refused_but_other_controls_are_kept():
    tree = CODEC.unstructure(samples.assertion())
    tree["criteria"][0]["findings"] = ["ok\x01\x1f\x7f", "bad\x00"]
    expect_error(TaskResultAssertion, tree, ErrorCode.INVALID_VALUE, "$.criteria[0].findings[1]")
    tree["criteria"][0]["findings"] = ["ok\x01\x1f\x7f"]
    assert CODEC.structure(tree, TaskResultAssertion).criteria[0].findings == ("ok\x01\x1f\x7f",)


def test_an_evidence_digest_is_64_lowercase_hex():
    tree = CODEC.unstructure(samples.assertion())
    tree["criteria"][0]["evidence_digests"] = ["A" * 64]
    expect_error(
        TaskResultAssertion,
        tree,
        ErrorCode.INVALID_VALUE,
        "$.criteria[0].evidence_digests[0]",
    )


def test_an_unknown_row_outcome_is_invalid_at_its_path():
    tree = CODEC.unstructure(samples.assertion())
    tree["criteria"][2]["outcome"] = "skipped"
    expect_error(TaskResultAssertion, tree, ErrorCode.INVALID_VALUE, "$.criteria[2].outcome")


# -- task-aware criterion rules ---------------------------------------------------------------


def test_one_row_per_task_criterion_validates():
    validate_against_task(samples.assertion(), samples.task())
    validate_against_task(agent_assertion(), samples.task())


def test_an_unknown_criterion_is_refused():
    rows = (
        *samples.rows(),
        CriterionResult(criterion="docs", outcome=C.PASSED, findings=(), evidence_digests=()),
    )
    with pytest.raises(TaskError) as info:
        validate_against_task(samples.assertion(criteria=rows), samples.task())
    assert (info.value.code, info.value.path) == (
        ErrorCode.INVALID_CRITERIA,
        "$.criteria[3].criterion",
    )


@pytest.mark.parametrize("omitted", ["unit-tests", "lint", "review"])
def test_an_omitted_criterion_is_refused(omitted):
    rows = tuple(r for r in samples.rows() if r.criterion != omitted)
    with pytest.raises(TaskError) as info:
        validate_against_task(
            samples.assertion(outcome=AssertionOutcome.FAILED, criteria=rows), samples.task()
        )
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_CRITERIA, "$.criteria")
    assert omitted in info.value.message


@pytest.mark.parametrize("outcome", [C.PASSED, C.FAILED, C.UNCERTAIN])
@pytest.mark.parametrize(
    "trust", [TrustClass.REGISTERED_EXECUTOR_OBSERVATION, TrustClass.AGENT_ASSERTION]
)
def test_nobody_may_claim_a_controller_only_row(outcome, trust):
    rows = samples.rows(review=outcome)
    if trust is TrustClass.AGENT_ASSERTION:
        assertion = agent_assertion(criteria=rows)
    else:
        assertion = samples.assertion(criteria=rows)
    with pytest.raises(TaskError) as info:
        validate_against_task(assertion, samples.task())
    assert (info.value.code, info.value.path) == (
        ErrorCode.INVALID_CRITERIA,
        "$.criteria[2].outcome",
    )


def test_a_mixed_task_uses_not_claimed_for_its_controller_row():
    validate_against_task(samples.assertion(criteria=samples.rows()), samples.task())


def test_a_pass_with_no_eligible_required_criterion_is_refused():
    # Only the controller-only review is required: nothing a result may pass is required.
    only_optional = tuple(
        attrs.evolve(c, required=False) if c.mode is CriterionMode.OBSERVATION_ELIGIBLE else c
        for c in samples.criteria()
    )
    task = samples.task(entrypoint=samples.entrypoint(criteria=only_optional))
    assertion = samples.assertion(task_digest=task.digest)
    with pytest.raises(TaskError) as info:
        validate_against_task(assertion, task)
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_CRITERIA, "$.outcome")
    # The same rows with a failed outcome are a truthful, nonqualifying result.
    validate_against_task(attrs.evolve(assertion, outcome=AssertionOutcome.FAILED), task)


@pytest.mark.parametrize("row_outcome", [C.FAILED, C.UNCERTAIN, C.NOT_CLAIMED])
def test_a_pass_needs_every_eligible_required_row_passed(row_outcome):
    assertion = samples.assertion(criteria=samples.rows(unit_tests=row_outcome))
    with pytest.raises(TaskError) as info:
        validate_against_task(assertion, samples.task())
    assert (info.value.code, info.value.path) == (
        ErrorCode.INVALID_CRITERIA,
        "$.criteria[0].outcome",
    )


def test_an_optional_row_may_fail_under_a_pass():
    validate_against_task(samples.assertion(criteria=samples.rows(lint=C.FAILED)), samples.task())


@pytest.mark.parametrize(("field", "value"), [("task_id", "task-2"), ("task_digest", "e" * 64)])
def test_an_assertion_for_another_task_is_a_binding_mismatch(field, value):
    with pytest.raises(TaskError) as info:
        validate_against_task(samples.assertion(**{field: value}), samples.task())
    assert (info.value.code, info.value.path) == (ErrorCode.BINDING_MISMATCH, f"$.{field}")


@st.composite
def task_and_rows(draw):
    task = draw(tasks())
    rows = []
    for spec in task.criteria:
        if spec.mode is CriterionMode.CONTROLLER_ONLY:
            outcome = C.NOT_CLAIMED
        else:
            outcome = draw(st.sampled_from(CriterionOutcome))
        rows.append(
            CriterionResult(
                criterion=spec.criterion, outcome=outcome, findings=(), evidence_digests=()
            )
        )
    rows = draw(st.permutations(rows))
    return task, tuple(rows)


def _assertion_for(task, rows, outcome):
    return samples.assertion(
        task_id=task.task_id, task_digest=task.digest, criteria=rows, outcome=outcome
    )


@given(task_and_rows(), st.sampled_from([AssertionOutcome.FAILED, AssertionOutcome.UNCERTAIN]))
def test_any_complete_row_set_with_a_nonpassing_outcome_validates(pair, outcome):
    task, rows = pair
    validate_against_task(_assertion_for(task, rows, outcome), task)


@given(task_and_rows())
def test_a_pass_validates_exactly_when_eligible_required_rows_exist_and_all_passed(pair):
    task, rows = pair
    by_name = {r.criterion: r for r in rows}
    eligible = [
        c for c in task.criteria if c.required and c.mode is CriterionMode.OBSERVATION_ELIGIBLE
    ]
    should_pass = bool(eligible) and all(by_name[c.criterion].outcome is C.PASSED for c in eligible)
    assertion = _assertion_for(task, rows, AssertionOutcome.PASSED)
    if should_pass:
        validate_against_task(assertion, task)
    else:
        with pytest.raises(TaskError) as info:
            validate_against_task(assertion, task)
        assert info.value.code is ErrorCode.INVALID_CRITERIA


@given(task_and_rows(), st.data())
def test_dropping_any_row_is_refused(pair, data):
    task, rows = pair
    drop = data.draw(st.integers(0, len(rows) - 1))
    assume(len(rows) > 1)
    shorter = rows[:drop] + rows[drop + 1 :]
    with pytest.raises(TaskError) as info:
        validate_against_task(_assertion_for(task, shorter, AssertionOutcome.FAILED), task)
    assert info.value.code is ErrorCode.INVALID_CRITERIA


# -- attempt binding --------------------------------------------------------------------------


def test_an_assertion_made_for_an_attempt_validates_against_it():
    validate_against_attempt(samples.assertion(), samples.attempt())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("task_id", "task-2"),
        ("task_digest", "e" * 64),
        ("attempt_id", "attempt-2"),
        ("attempt_digest", "e" * 64),
        ("execution_operation_id", "exec-2"),
        ("agent", AgentIdentity(owner_id="acme", agent_id="agent-2")),
    ],
)
def test_an_assertion_for_another_attempt_is_a_binding_mismatch(field, value):
    with pytest.raises(TaskError) as info:
        validate_against_attempt(samples.assertion(**{field: value}), samples.attempt())
    assert (info.value.code, info.value.path) == (ErrorCode.BINDING_MISMATCH, f"$.{field}")


def test_an_assertion_under_another_executor_is_a_binding_mismatch():
    other = attrs.evolve(samples.EXECUTOR, registration_epoch=2)
    with pytest.raises(TaskError) as info:
        validate_against_attempt(samples.assertion(executor=other), samples.attempt())
    assert (info.value.code, info.value.path) == (ErrorCode.BINDING_MISMATCH, "$.executor")


@pytest.mark.parametrize("fence", [2, 7])
def test_an_assertion_at_another_fence_is_stale(fence):
    with pytest.raises(TaskError) as info:
        validate_against_attempt(samples.assertion(fence=fence), samples.attempt())
    assert (info.value.code, info.value.path) == (ErrorCode.STALE_FENCE, "$.fence")


def test_an_old_fence_result_cannot_finish_the_replacement():
    replacement = samples.attempt(attempt_id="attempt-2", fence=2, execution_operation_id="exec-2")
    late = samples.assertion()  # bound to attempt-1 at fence 1
    with pytest.raises(TaskError) as info:
        validate_against_attempt(late, replacement)
    assert info.value.code is ErrorCode.BINDING_MISMATCH
