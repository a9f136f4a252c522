"""Installed requirements: action-class rules, dependency order, digests, strict decoding."""

import json

import attrs
import pytest
from taskcore.authority import compile_requirement, decode_requirement
from taskcore.canonical import canonical_json
from taskcore.contract import ActionClass, WorkflowProgression
from taskcore.errors import ErrorCode, TaskError

from tests.taskcore.workflow.support import CONTROLLER, ELIGIBLE, criterion, requirement

pytestmark = pytest.mark.backend_only(
    "sqlite", reason="requirement parsing and plans only: no journal"
)


def _with_step(index: int, **changes):
    req = requirement()
    steps = list(req.steps)
    steps[index] = attrs.evolve(steps[index], **changes)
    return attrs.evolve(req, steps=tuple(steps))


def _code(req) -> ErrorCode:
    with pytest.raises(TaskError) as info:
        compile_requirement(req)
    return info.value.code


def test_plan_orders_steps_by_dependency_stably():
    req = requirement()
    reordered = attrs.evolve(req, steps=tuple(reversed(req.steps)))
    assert compile_requirement(reordered).order == ("implement", "tests", "review")


def test_a_dependency_cycle_is_refused():
    assert _code(_with_step(0, depends_on=("review",))) is ErrorCode.INVALID_VALUE


def test_an_unknown_dependency_is_refused():
    assert _code(_with_step(0, depends_on=("deploy",))) is ErrorCode.INVALID_VALUE


def test_review_steps_must_be_controller_only():
    assert _code(_with_step(2, criteria=(criterion("ok", ELIGIBLE),))) is ErrorCode.INVALID_CRITERIA
    assert (
        _code(_with_step(2, progression=WorkflowProgression.AGENT_RESULT))
        is ErrorCode.INVALID_VALUE
    )


def test_agent_result_steps_need_an_observation_eligible_criterion():
    only_controller = _with_step(0, criteria=(criterion("c", CONTROLLER),))
    assert _code(only_controller) is ErrorCode.INVALID_CRITERIA


def test_duplicate_steps_and_criteria_are_refused():
    req = requirement()
    assert _code(attrs.evolve(req, steps=(req.steps[0], req.steps[0]))) is ErrorCode.INVALID_VALUE
    twice = (criterion("a", ELIGIBLE), criterion("a", ELIGIBLE))
    assert _code(_with_step(0, criteria=twice)) is ErrorCode.INVALID_CRITERIA


def test_any_change_is_a_new_requirement_and_plan_digest():
    base = compile_requirement(requirement())
    changed = compile_requirement(_with_step(1, summary="Run every test."))
    assert base.requirement_digest != changed.requirement_digest
    assert base.digest != changed.digest
    assert compile_requirement(requirement()).digest == base.digest


def test_decoding_a_requirement_is_strict():
    tree = json.loads(canonical_json(requirement()))
    assert decode_requirement(json.dumps(tree)) == requirement()
    tree["steps"][0]["shell"] = "rm -rf /"
    with pytest.raises(TaskError) as info:
        decode_requirement(json.dumps(tree))
    assert info.value.code is ErrorCode.UNKNOWN_FIELD


def test_action_class_is_recorded_per_step():
    plan = compile_requirement(requirement())
    assert plan.step("review").step.action_class is ActionClass.REVIEW
