"""The lookups the journal's mixins and the collector's server side share (workflow.lookups)."""

import attrs
import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.workflow import ActorGuard, Caller
from taskcore.workflow.lookups import (
    COMPLETION_CHECKS,
    check_dependencies,
    decode_body,
    dependency_complete,
    require_task,
    route_view,
    subject_of,
    task_in_route,
)

from tests.taskcore.workflow.support import actor


def _stored(world, cp, step):
    summary = next(t for t in cp.tasks if t.step_id == step)
    with world.storage.read() as tx:
        return tx.journal.get_task(summary.task_id)


def test_a_task_is_found_only_under_its_own_route(world):
    cp = world.checkpoint()
    task = _stored(world, cp, "implement")
    with world.storage.read() as tx:
        assert task_in_route(tx, world.caller(), task.task_id) == task
        other = attrs.evolve(world.caller(), profile_id="other")
        assert task_in_route(tx, other, task.task_id) is None
        assert task_in_route(tx, world.caller(), "no-such-task") is None


def test_require_task_names_the_field_that_is_wrong(world):
    cp = world.checkpoint()
    task = _stored(world, cp, "implement")
    assert require_task(task, task.task_digest) is task
    with pytest.raises(TaskError) as missing:
        require_task(None, task.task_digest)
    assert (missing.value.code, missing.value.path) == (ErrorCode.NOT_FOUND, "$.task_id")
    with pytest.raises(TaskError) as stale:
        require_task(task, "0" * 64)
    assert (stale.value.code, stale.value.path) == (ErrorCode.BINDING_MISMATCH, "$.task_digest")


def test_the_subject_of_a_task_is_the_checkpointed_one(world):
    cp = world.checkpoint()
    task = _stored(world, cp, "tests")
    with world.storage.read() as tx:
        subject = subject_of(tx, task)
        view = route_view(tx, world.caller())
    assert subject.subject_seq == task.subject_seq
    assert subject.commit == world.head
    assert view.plan().requirement_digest == world.requirement_digest


def test_an_unknown_route_is_refused(world):
    who = actor()
    stranger = Caller(actor=who, repository_id="nope", profile_id="default", guard=ActorGuard(who))
    with world.storage.read() as tx, pytest.raises(TaskError) as err:
        route_view(tx, stranger)
    assert err.value.code is ErrorCode.NOT_FOUND


def test_dependencies_are_checked_and_an_unknown_completion_never_completes(world):
    cp = world.checkpoint()
    tests_task = _stored(world, cp, "tests")
    implement = _stored(world, cp, "implement")
    wimplement, wtests = world.task(cp, "implement"), world.task(cp, "tests")
    with world.storage.read() as tx:
        assert check_dependencies(tx, implement, wimplement) is None
        with pytest.raises(TaskError) as err:
            check_dependencies(tx, tests_task, wtests)
        assert err.value.code is ErrorCode.DEPENDENCY_INCOMPLETE
        assert err.value.details == {"task_id": implement.task_id}
        assert not dependency_complete(tx, implement)
        invented = attrs.evolve(implement, completion="invented")
        assert "invented" not in COMPLETION_CHECKS
        assert not dependency_complete(tx, invented)


def test_decoded_bodies_are_cached_by_type_and_bytes(world):
    cp = world.checkpoint()
    task = _stored(world, cp, "implement")
    from taskcore.contract import WorkflowTask

    first = decode_body(WorkflowTask, task.body)
    assert decode_body(WorkflowTask, task.body) is first
    assert first == world.task(cp, "implement")
