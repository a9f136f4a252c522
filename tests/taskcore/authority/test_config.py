"""The strict agent_task_profiles config: decoding and applying it to a data dir."""

from __future__ import annotations

import json

import pytest
from taskcore.authority import install_requirement, register_repository
from taskcore.authority.config import AgentTaskProfile, OperatorConfig, apply_config, decode_config
from taskcore.authority.operator import collector_test_requirement
from taskcore.clock import FakeClock
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage

from tests.taskcore.workflow.support import init_repo


@pytest.fixture
def data(tmp_path):
    return tmp_path / "data"


@pytest.fixture
def storage(data):
    s = open_storage(data, create=True)
    yield s
    s.close()


@pytest.fixture
def repo(tmp_path):
    return init_repo(tmp_path / "repo")


@pytest.fixture
def digest(storage, repo):
    clock = FakeClock()
    register_repository(storage, clock, workspace="w1", repository_id="acme", work_tree=repo)
    requirement = collector_test_requirement("tests", "ok")
    return install_requirement(
        storage, clock, repository_id="acme", requirement=requirement
    ).requirement_digest


def config(repo, data, digest, **entry):
    fields = {
        "repository_id": "acme",
        "profile_id": "default",
        "native_repository": str(repo),
        "data_dir": str(data),
        "target": "main",
        "requirement_digest": digest,
    }
    fields.update(entry)
    return OperatorConfig(
        version=1, workspace="w1", agent_task_profiles=(AgentTaskProfile(**fields),)
    )


def test_a_config_file_registers_task_only_profiles(storage, repo, data, digest):
    applied = apply_config(storage, FakeClock(), config(repo, data, digest), data_dir=data)
    assert [(p.repository_id, p.profile_id, p.generation) for p in applied] == [
        ("acme", "default", 1)
    ]
    with storage.read() as tx:
        assert tx.authority.get_profile("acme", "default").requirement_digest == digest


def test_applying_again_changes_nothing(storage, repo, data, digest):
    clock = FakeClock()
    first = apply_config(storage, clock, config(repo, data, digest), data_dir=data)
    assert apply_config(storage, clock, config(repo, data, digest), data_dir=data) == first


def test_an_unknown_repository_is_registered_from_the_config(storage, data, digest, tmp_path):
    other = init_repo(tmp_path / "other")
    entry = config(other, data, digest, repository_id="gizmo")
    with pytest.raises(TaskError) as err:  # the pinned requirement is installed for acme only
        apply_config(storage, FakeClock(), entry, data_dir=data)
    assert err.value.code is ErrorCode.NOT_FOUND
    with storage.read() as tx:
        assert tx.authority.get_repository("gizmo").work_tree == str(other.resolve())
        assert tx.authority.get_repository("gizmo").workspace == "w1"


def test_a_config_with_an_unknown_field_is_refused():
    raw = {"version": 1, "workspace": "w1", "agent_task_profiles": [], "source_profiles": []}
    with pytest.raises(TaskError) as err:
        decode_config(json.dumps(raw).encode())
    assert err.value.code is ErrorCode.UNKNOWN_FIELD


def test_a_config_without_profiles_is_refused():
    raw = {"version": 1, "workspace": "w1", "agent_task_profiles": []}
    with pytest.raises(TaskError) as err:
        decode_config(json.dumps(raw).encode())
    assert err.value.code is ErrorCode.OUT_OF_BOUNDS


def test_a_config_for_another_data_dir_is_refused(storage, repo, data, digest):
    with pytest.raises(TaskError) as err:
        apply_config(
            storage, FakeClock(), config(repo, data, digest, data_dir="/elsewhere"), data_dir=data
        )
    assert err.value.code is ErrorCode.INVALID_VALUE
    assert "--data-dir /elsewhere" in err.value.message


@pytest.mark.parametrize("field", ["data_dir", "native_repository"])
def test_relative_paths_are_refused(storage, repo, data, digest, field):
    with pytest.raises(TaskError) as err:
        apply_config(
            storage, FakeClock(), config(repo, data, digest, **{field: "relative"}), data_dir=data
        )
    assert err.value.code is ErrorCode.INVALID_PATH


def test_publishing_forge_status_is_refused(storage, repo, data, digest):
    with pytest.raises(TaskError) as err:
        apply_config(
            storage,
            FakeClock(),
            config(repo, data, digest, publish_forge_status=True),
            data_dir=data,
        )
    assert err.value.code is ErrorCode.INVALID_VALUE
    with storage.read() as tx:
        assert tx.authority.get_profile("acme", "default") is None


def test_a_repository_registered_at_another_path_is_a_conflict(
    storage, repo, data, digest, tmp_path
):
    elsewhere = init_repo(tmp_path / "elsewhere")
    with pytest.raises(TaskError) as err:
        apply_config(
            storage,
            FakeClock(),
            config(repo, data, digest, native_repository=str(elsewhere)),
            data_dir=data,
        )
    assert err.value.code is ErrorCode.CONFLICT
