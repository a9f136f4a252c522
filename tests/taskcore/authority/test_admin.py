"""Operator acts: trusted-local, validated, audited, never generating keys."""

import os
from pathlib import Path

import pytest
from taskcore.authority import (
    DEFAULT_POLICY,
    RepositoryPolicy,
    enroll_executor,
    install_requirement,
    register_profile,
    register_repository,
    revoke_executor,
    set_policy,
)
from taskcore.clock import FakeClock
from taskcore.errors import ErrorCode, TaskError
from taskcore.signing import public_key_hex
from taskcore.store import open_storage

from tests.taskcore.workflow.support import REPO, SEED, init_repo, requirement


@pytest.fixture
def storage(tmp_path: Path):
    s = open_storage(tmp_path / "data", create=True)
    yield s
    s.close()


def _register(storage, path, repository_id="r1"):
    return register_repository(
        storage, FakeClock(), workspace="acme", repository_id=repository_id, work_tree=path
    )


def test_repository_must_be_an_absolute_git_work_tree(storage, tmp_path):
    with pytest.raises(TaskError) as info:
        _register(storage, "relative/path")
    assert info.value.code is ErrorCode.INVALID_PATH
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(TaskError):
        _register(storage, plain)
    repo = init_repo(tmp_path / "repo")
    os.symlink(repo, tmp_path / "alias")
    with pytest.raises(TaskError, match="symlink"):
        _register(storage, tmp_path / "alias")
    assert _register(storage, repo).work_tree == str(repo.resolve())


def test_a_repository_id_is_registered_once(storage, tmp_path):
    repo = init_repo(tmp_path / "repo")
    _register(storage, repo)
    with pytest.raises(TaskError) as info:
        _register(storage, repo)
    assert info.value.code is ErrorCode.ALREADY_EXISTS


def test_the_acts_write_no_audit_event_of_their_own(storage, tmp_path):
    # The operator surface (taskcore.operator_ops) audits each call once, in the act's own
    # transaction; the domain functions must not add a second event.
    clock = FakeClock()
    repo = init_repo(tmp_path / "repo")
    _register(storage, repo, REPO)
    install_requirement(storage, clock, repository_id=REPO, requirement=requirement())
    enroll_executor(
        storage,
        clock,
        registration_id="reg",
        executor_id="ex",
        repository_id=REPO,
        step_id="implement",
        verification_key_id="k",
        public_key=public_key_hex(SEED),
    )
    revoke_executor(storage, clock, registration_id="reg", reason="test")
    with storage.read() as tx:
        assert tx.audit.count() == 0


def test_identical_policy_records_no_new_epoch(storage, tmp_path):
    repo = init_repo(tmp_path / "repo")
    _register(storage, repo)
    clock = FakeClock()
    assert set_policy(storage, clock, repository_id="r1", policy=DEFAULT_POLICY) == 1
    stricter = RepositoryPolicy(version=1, lease_max_ms=60_000, agent_assertions=False)
    assert set_policy(storage, clock, repository_id="r1", policy=stricter) == 2
    assert set_policy(storage, clock, repository_id="r1", policy=stricter) == 2


def test_profile_needs_an_installed_requirement(storage, tmp_path):
    _register(storage, init_repo(tmp_path / "repo"))
    with pytest.raises(TaskError) as info:
        register_profile(
            storage,
            FakeClock(),
            repository_id="r1",
            profile_id="p",
            target="main",
            requirement_digest="0" * 64,
        )
    assert info.value.code is ErrorCode.NOT_FOUND


def test_reenrollment_keeps_the_registration_scope(storage, tmp_path):
    _register(storage, init_repo(tmp_path / "repo"))
    args = dict(
        registration_id="reg",
        executor_id="ex",
        repository_id="r1",
        verification_key_id="k",
        public_key=public_key_hex(SEED),
    )
    enroll_executor(storage, FakeClock(), step_id="implement", **args)
    with pytest.raises(TaskError) as info:
        enroll_executor(storage, FakeClock(), step_id="tests", **args)
    assert info.value.code is ErrorCode.CONFLICT


def test_enrollment_takes_a_public_key_and_never_makes_one(storage, tmp_path):
    _register(storage, init_repo(tmp_path / "repo"))
    with pytest.raises(TaskError):
        enroll_executor(
            storage,
            FakeClock(),
            registration_id="reg",
            executor_id="ex",
            repository_id="r1",
            step_id="implement",
            verification_key_id="k",
            public_key="not-a-key",
        )
    with storage.read() as tx:
        assert tx.authority.enrollments("reg") == ()
