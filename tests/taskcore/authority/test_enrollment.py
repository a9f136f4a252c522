"""The current-registration lookup: scope, exact binding, epochs, revocation."""

import attrs
import pytest
from taskcore.authority import current_registration, revoke_executor
from taskcore.contract import ExecutorBinding
from taskcore.errors import ErrorCode, TaskError

from tests.taskcore.workflow.support import OTHER_SEED, REPO


def _lookup(world, binding, step="implement", repository=REPO):
    with world.storage.read() as tx:
        return current_registration(tx, repository_id=repository, step_id=step, binding=binding)


def _code(world, binding, **kw) -> ErrorCode:
    with pytest.raises(TaskError) as info:
        _lookup(world, binding, **kw)
    return info.value.code


def test_current_epoch_in_scope_is_accepted(world):
    binding = world.enroll()
    assert _lookup(world, binding).registration_epoch == 1


def test_unknown_registration_and_wrong_scope_are_not_enrolled(world):
    binding = world.enroll()
    ghost = attrs.evolve(binding, registration_id="ghost")
    assert _code(world, ghost) is ErrorCode.EXECUTOR_NOT_ENROLLED
    assert _code(world, binding, step="tests") is ErrorCode.EXECUTOR_NOT_ENROLLED
    assert _code(world, binding, repository="other") is ErrorCode.EXECUTOR_NOT_ENROLLED
    wrong_key = attrs.evolve(binding, verification_key_id="key-9")
    assert _code(world, wrong_key) is ErrorCode.EXECUTOR_NOT_ENROLLED


def test_reenrollment_makes_the_old_epoch_non_current(world):
    first = world.enroll()
    second = world.enroll(seed=OTHER_SEED)
    assert second.registration_epoch == 2
    assert _code(world, first) is ErrorCode.EXECUTOR_NOT_ENROLLED
    assert _lookup(world, second).registration_epoch == 2


def test_revoked_epoch_is_refused_and_reenrollment_does_not_rehabilitate_it(world):
    first = world.enroll()
    revoke_executor(world.storage, world.clock, registration_id="reg-1", reason="leaked")
    assert _code(world, first) is ErrorCode.EXECUTOR_REVOKED
    second = world.enroll(seed=OTHER_SEED)
    assert _code(world, first) is ErrorCode.EXECUTOR_REVOKED
    assert _lookup(world, second).registration_epoch == 2


def test_a_caller_cannot_invent_an_epoch(world):
    binding = world.enroll()
    future = ExecutorBinding(
        registration_id=binding.registration_id,
        executor_id=binding.executor_id,
        registration_epoch=7,
        verification_key_id=binding.verification_key_id,
    )
    assert _code(world, future) is ErrorCode.EXECUTOR_NOT_ENROLLED
