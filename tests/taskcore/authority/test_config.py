"""The strict agent_task_profiles config: decoding and applying it to a data dir."""

from __future__ import annotations

import json

import pytest
from taskcore.authority import install_requirement, register_repository
from taskcore.authority.config import AgentTaskProfile, OperatorConfig, apply_config, decode_config
from taskcore.authority.operator import collector_test_requirement
from taskcore.clock import FakeClock
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.forge import ForgeStatusConfig
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


def config(repo, data, digest, forge=(), **entry):
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
        version=1,
        workspace="w1",
        agent_task_profiles=(AgentTaskProfile(**fields),),
        forge_status=tuple(forge),
    )


def github(**changes):
    fields = {
        "repository_id": "acme",
        "kind": "github",
        "api_url": "https://api.github.com",
        "project": "octo/acme",
        "token_file": "/etc/agent-task/github.token",
        "target_url": "https://agent-task.example/board/receipts/{receipt_digest}",
    }
    fields.update(changes)
    return ForgeStatusConfig(**fields)


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


def test_publishing_forge_status_without_a_forge_entry_is_refused(storage, repo, data, digest):
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


def settings(storage):
    with storage.read() as tx:
        return tx.forge.get_settings("acme", "default")


def test_publishing_with_a_forge_entry_stores_the_settings_and_not_publishing_removes_them(
    storage, repo, data, digest
):
    clock = FakeClock()
    apply_config(
        storage,
        clock,
        config(repo, data, digest, forge=[github()], publish_forge_status=True),
        data_dir=data,
    )
    stored = settings(storage)
    assert (stored.kind, stored.api_url, stored.project) == (
        "github",
        "https://api.github.com",
        "octo/acme",
    )
    assert stored.token_header == "bearer"
    assert stored.token_file == "/etc/agent-task/github.token"
    apply_config(storage, clock, config(repo, data, digest), data_dir=data)
    assert settings(storage) is None


def test_gitlab_defaults_to_the_private_token_header(storage, repo, data, digest):
    entry = github(kind="gitlab", api_url="https://gitlab.example/api/v4", project="grp/acme")
    apply_config(
        storage,
        FakeClock(),
        config(repo, data, digest, forge=[entry], publish_forge_status=True),
        data_dir=data,
    )
    assert settings(storage).token_header == "private-token"


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"api_url": "http://api.example.com"}, ErrorCode.INVALID_VALUE),
        ({"api_url": "https://api.example.com/?x=1"}, ErrorCode.INVALID_VALUE),
        ({"project": "no-owner"}, ErrorCode.INVALID_VALUE),
        ({"token_file": "github.token"}, ErrorCode.INVALID_PATH),
        ({"target_url": "https://b.example/{token}"}, ErrorCode.INVALID_VALUE),
        ({"target_url": "file:///etc/passwd"}, ErrorCode.INVALID_VALUE),
        ({"repository_id": "gizmo"}, ErrorCode.INVALID_VALUE),
    ],
)
def test_a_bad_forge_entry_is_refused_before_anything_is_applied(
    storage, repo, data, digest, changes, code
):
    with pytest.raises(TaskError) as err:
        apply_config(
            storage,
            FakeClock(),
            config(repo, data, digest, forge=[github(**changes)], publish_forge_status=True),
            data_dir=data,
        )
    assert err.value.code is code
    with storage.read() as tx:
        assert tx.authority.get_profile("acme", "default") is None


def test_a_forge_entry_no_profile_publishes_to_is_refused(storage, repo, data, digest):
    with pytest.raises(TaskError) as err:
        apply_config(
            storage, FakeClock(), config(repo, data, digest, forge=[github()]), data_dir=data
        )
    assert err.value.code is ErrorCode.INVALID_VALUE
    assert "serves no profile" in err.value.message


def test_forge_status_decodes_strictly_from_the_file():
    raw = {
        "version": 1,
        "workspace": "w1",
        "agent_task_profiles": [
            {
                "repository_id": "acme",
                "profile_id": "default",
                "native_repository": "/srv/acme",
                "data_dir": "/var/lib/agent-task",
                "target": "main",
                "requirement_digest": "a" * 64,
                "publish_forge_status": True,
            }
        ],
        "forge_status": [
            {
                "repository_id": "acme",
                "kind": "gitlab",
                "api_url": "https://gitlab.example/api/v4",
                "project": "42",
                "token_file": "/etc/agent-task/gitlab.token",
            }
        ],
    }
    decoded = decode_config(json.dumps(raw).encode())
    assert decoded.forge_status[0].project == "42"
    raw["forge_status"][0]["token"] = "glpat-secret"
    with pytest.raises(TaskError) as err:
        decode_config(json.dumps(raw).encode())
    assert err.value.code is ErrorCode.UNKNOWN_FIELD
