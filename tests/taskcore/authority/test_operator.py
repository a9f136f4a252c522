"""AuthorityAdmin: the operator's acts against a data dir, and the one-step TEST requirement."""

from __future__ import annotations

import pytest
from taskcore.authority.operator import collector_test_requirement
from taskcore.clock import FakeClock
from taskcore.collector.descriptor import collector_profile_digest
from taskcore.collector.records import runtime_identity_digest
from taskcore.collector.runtime import probe_runtime
from taskcore.collector.state import key_id_for
from taskcore.contract import (
    ActionClass,
    CommandRecipe,
    CriterionMode,
    GraphStatus,
    WorkflowProgression,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.operator_ops import AuthorityAdmin
from taskcore.signing import public_key_hex

from tests.taskcore.workflow.support import SEED, init_repo

KEY = public_key_hex(SEED)
RECIPE = CommandRecipe(
    argv=("/bin/sh", "-c", "true"),
    working_directory=".",
    environment_allowlist=("PATH",),
    timeout_ms=10_000,
    output_limit_bytes=4096,
)


@pytest.fixture
def admin(tmp_path):
    with AuthorityAdmin(tmp_path / "data", create=True, clock=FakeClock()) as a:
        repo = init_repo(tmp_path / "repo")
        a.register_repository(workspace="w1", repository_id="acme", work_tree=repo)
        installed = a.install_requirement(
            repository_id="acme", requirement=collector_test_requirement("tests", "ok")
        )
        a.register_profile(
            repository_id="acme",
            profile_id="default",
            target="main",
            requirement_digest=installed.requirement_digest,
        )
        yield a


def enroll(admin, registration="reg-1"):
    return admin.enroll(
        registration_id=registration,
        executor_id="host",
        repository_id="acme",
        step_id="tests",
        public_key=KEY,
    )


def command_profile(admin, **changes):
    args = dict(
        profile_id="cp-1",
        repository_id="acme",
        workflow_profile_id="default",
        step_id="tests",
        registration_id="reg-1",
        recipe=RECIPE,
    )
    args.update(changes)
    return admin.command_collector_profile(**args)


def test_the_test_requirement_is_one_required_collector_test_step():
    requirement = collector_test_requirement("unit", "Unit tests pass.")
    [step] = requirement.steps
    assert requirement.requirement_id == "unit-pass"
    assert (step.step_id, step.summary) == ("unit", "Unit tests pass.")
    assert step.action_class is ActionClass.TEST
    assert step.graph_status is GraphStatus.REQUIRED
    assert step.progression is WorkflowProgression.COLLECTOR
    assert [(c.criterion, c.mode, c.required) for c in step.criteria] == [
        ("tests_pass", CriterionMode.CONTROLLER_ONLY, True)
    ]


@pytest.mark.parametrize("public_key", ["abc", "z" * 64])
def test_the_journal_is_opened_only_when_an_act_needs_it(tmp_path, public_key):
    data = tmp_path / "data"
    with AuthorityAdmin(data, create=True) as admin, pytest.raises(TaskError) as err:
        admin.enroll(
            registration_id="r",
            executor_id="e",
            repository_id="acme",
            step_id="tests",
            public_key=public_key,
        )
    assert err.value.code is ErrorCode.INVALID_VALUE
    assert err.value.message == "the public key is 64 lowercase hex"
    assert not data.exists()


def test_without_create_a_missing_journal_is_not_found_and_nothing_is_created(tmp_path):
    data = tmp_path / "data"
    with AuthorityAdmin(data) as admin, pytest.raises(TaskError) as err:
        admin.overview("acme")
    assert err.value.code is ErrorCode.NOT_FOUND
    assert not data.exists()


def test_each_enrollment_is_a_new_epoch_with_the_key_s_id(admin):
    first, second = enroll(admin), enroll(admin)
    assert (first.registration_epoch, second.registration_epoch) == (1, 2)
    assert first.verification_key_id == key_id_for(KEY)
    assert admin.current_epoch("reg-1") == 2


def test_the_current_epoch_of_an_unknown_registration_is_not_found(admin):
    with pytest.raises(TaskError) as err:
        admin.current_epoch("nobody")
    assert err.value.code is ErrorCode.NOT_FOUND
    assert "enroll first" in err.value.message


def test_a_command_profile_pins_the_probed_runtime_and_the_newest_epoch(admin):
    enroll(admin)
    enroll(admin)
    profile = command_profile(admin)
    assert profile.registration_epoch == 2
    assert profile.runtime_identity_sha256 == runtime_identity_digest(probe_runtime(RECIPE))
    record = admin.install_collector_profile(profile)
    assert record.digest == collector_profile_digest(profile)
    assert (record.registration_id, record.registration_epoch) == ("reg-1", 2)


def test_a_command_profile_keeps_a_given_epoch_and_runtime_identity(admin):
    enroll(admin)
    enroll(admin)
    profile = command_profile(admin, registration_epoch=1, runtime_identity="c" * 64)
    assert (profile.registration_epoch, profile.runtime_identity_sha256) == (1, "c" * 64)


def test_a_command_profile_for_a_registration_never_enrolled_is_not_found(admin):
    with pytest.raises(TaskError) as err:
        command_profile(admin)
    assert err.value.code is ErrorCode.NOT_FOUND


def test_the_overview_shows_profiles_epochs_and_revocations(admin):
    enroll(admin)
    enroll(admin)
    admin.install_collector_profile(command_profile(admin))
    revoked = admin.revoke(registration_id="reg-1", reason="rotated")
    assert revoked.registration_epoch == 2
    view = admin.overview("acme", ("reg-1", "reg-2"))
    assert view.repository.repository_id == "acme"
    assert [p.profile_id for p in view.collector_profiles] == ["cp-1"]
    [(name, epochs), (other, none)] = [(r.registration_id, r.epochs) for r in view.registrations]
    assert (name, other, none) == ("reg-1", "reg-2", ())
    assert [(e.epoch, e.step_id, e.revoked) for e in epochs] == [
        (1, "tests", False),
        (2, "tests", True),
    ]


def test_the_overview_of_an_unknown_repository_is_not_found(admin):
    with pytest.raises(TaskError) as err:
        admin.overview("nope")
    assert err.value.code is ErrorCode.NOT_FOUND
