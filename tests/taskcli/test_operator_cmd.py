from __future__ import annotations

import json
import subprocess

import click
import pytest
from click.testing import CliRunner
from taskcli import collector_cmd, operator_cmd


def load_commands():
    group = click.Group()
    operator_cmd.register(group)
    collector_cmd.register(group)
    return group


def git(repo, *args):
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("a\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "one")
    return path


def invoke(*args):
    result = CliRunner().invoke(load_commands(), [*args, "--json"], catch_exceptions=False)
    return result


def ok(*args):
    result = invoke(*args)
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


def setup(tmp_path, repo):
    data = str(tmp_path / "data")
    ok(
        "operator",
        "register-repository",
        "--workspace",
        "w1",
        "--repository",
        "acme",
        str(repo),
        "--data-dir",
        data,
    )
    req = ok(
        "operator",
        "install-requirement",
        "--repository",
        "acme",
        "--test-step",
        "tests",
        "--data-dir",
        data,
    )
    ok(
        "operator",
        "register-profile",
        "--repository",
        "acme",
        "--profile",
        "default",
        "--target",
        "main",
        "--requirement",
        req["requirement_digest"],
        "--data-dir",
        data,
    )
    key = ok("collector", "keygen", "--state-dir", str(tmp_path / "collector"))
    enrolled = ok(
        "operator",
        "enroll",
        "--repository",
        "acme",
        "--step",
        "tests",
        "--registration",
        "reg-1",
        "--executor",
        "ci-host",
        "--public-key",
        key["public_key"],
        "--data-dir",
        data,
    )
    return data, req, key, enrolled


def test_the_operator_sets_up_a_repository_profile_and_enrollment(tmp_path, repo):
    data, req, key, enrolled = setup(tmp_path, repo)
    assert req["created"] is True
    assert enrolled["enrollment"]["registration_epoch"] == 1
    assert enrolled["enrollment"]["verification_key_id"] == key["key_id"]
    shown = ok(
        "operator", "show", "--repository", "acme", "--registration", "reg-1", "--data-dir", data
    )
    assert shown["collector_profiles"] == []  # enrollment alone grants nothing
    [registration] = shown["registrations"]
    assert registration["registration_id"] == "reg-1"
    assert registration["epochs"][0]["revoked"] is False


def test_installing_a_collector_profile_pins_the_probed_runtime(tmp_path, repo):
    data, *_ = setup(tmp_path, repo)
    installed = ok(
        "operator",
        "install-collector-profile",
        "--profile-id",
        "cp-1",
        "--repository",
        "acme",
        "--profile",
        "default",
        "--step",
        "tests",
        "--registration",
        "reg-1",
        "--arg",
        "/bin/sh",
        "--arg",
        "-c",
        "--arg",
        "true",
        "--allow-env",
        "PATH",
        "--data-dir",
        data,
    )
    assert installed["profile"]["registration_epoch"] == 1
    assert installed["profile"]["profile_id"] == "cp-1"
    shown = ok("operator", "show", "--repository", "acme", "--data-dir", data)
    assert shown["collector_profiles"][0]["superseded_at_ms"] is None


PROFILE_ARGS = (
    "operator",
    "install-collector-profile",
    "--repository",
    "acme",
    "--profile",
    "default",
    "--step",
    "tests",
    "--registration",
    "reg-1",
    "--arg",
    "/bin/sh",
    "--arg",
    "-c",
    "--arg",
    "true",
)


def test_isolation_options_pin_a_policy_the_machine_can_meet(tmp_path, repo):
    from taskcore.collector.sandbox import detect_sandbox
    from taskcore.store import open_storage

    data, *_ = setup(tmp_path, repo)
    minimum = detect_sandbox().value
    ok(
        *PROFILE_ARGS,
        "--profile-id",
        "cp-iso",
        "--sandbox-minimum",
        minimum,
        "--network",
        "host",
        "--output-cap",
        "1048576",
        "--data-dir",
        data,
    )
    storage = open_storage(tmp_path / "data")
    try:
        with storage.read() as tx:
            body = json.loads(tx.collector.get_profile("cp-iso").body)
    finally:
        storage.close()
    assert body["isolation"]["minimum_sandbox"] == minimum
    assert body["isolation"]["network"] == "host"
    assert body["isolation"]["output_cap_bytes"] == 1048576
    assert body["isolation"]["read_only_paths"] == []


def test_a_policy_the_machine_cannot_meet_is_refused_at_installation(tmp_path, repo, monkeypatch):
    from taskcore.collector import sandbox

    data, *_ = setup(tmp_path, repo)
    monkeypatch.setattr(sandbox, "bwrap_available", lambda: False)
    result = invoke(
        *PROFILE_ARGS, "--profile-id", "cp-x", "--sandbox-minimum", "bwrap", "--data-dir", data
    )
    assert result.exit_code == 8
    assert "ISOLATION_UNAVAILABLE" in result.stderr
    bad = invoke(
        *PROFILE_ARGS, "--profile-id", "cp-y", "--read-only-path", "relative", "--data-dir", data
    )
    assert bad.exit_code == 3
    assert "INVALID_PATH" in bad.stderr
    shown = ok("operator", "show", "--repository", "acme", "--data-dir", data)
    assert shown["collector_profiles"] == []


def test_reenrollment_is_a_new_epoch_and_revocation_is_recorded(tmp_path, repo):
    data, _, key, _ = setup(tmp_path, repo)
    again = ok(
        "operator",
        "enroll",
        "--repository",
        "acme",
        "--step",
        "tests",
        "--registration",
        "reg-1",
        "--executor",
        "ci-host",
        "--public-key",
        key["public_key"],
        "--data-dir",
        data,
    )
    assert again["enrollment"]["registration_epoch"] == 2
    revoked = ok(
        "operator", "revoke", "--registration", "reg-1", "--reason", "rotated", "--data-dir", data
    )
    assert revoked["revocation"]["registration_epoch"] == 2
    shown = ok(
        "operator", "show", "--repository", "acme", "--registration", "reg-1", "--data-dir", data
    )
    assert [e["revoked"] for e in shown["registrations"][0]["epochs"]] == [False, True]


def test_a_config_file_registers_task_only_profiles(tmp_path, repo):
    data = tmp_path / "data"
    ok(
        "operator",
        "register-repository",
        "--workspace",
        "w1",
        "--repository",
        "acme",
        str(repo),
        "--data-dir",
        str(data),
    )
    req = ok(
        "operator",
        "install-requirement",
        "--repository",
        "acme",
        "--test-step",
        "tests",
        "--data-dir",
        str(data),
    )
    config = tmp_path / "agent-task.json"
    config.write_text(
        json.dumps(
            {
                "version": 1,
                "workspace": "w1",
                "agent_task_profiles": [
                    {
                        "repository_id": "acme",
                        "profile_id": "default",
                        "native_repository": str(repo),
                        "data_dir": str(data),
                        "target": "main",
                        "requirement_digest": req["requirement_digest"],
                    }
                ],
            }
        )
    )
    applied = ok("operator", "apply", str(config), "--data-dir", str(data))
    assert applied["workspace"] == "w1"
    assert [
        (p["repository_id"], p["profile_id"], p["generation"]) for p in applied["profiles"]
    ] == [("acme", "default", 1)]


def test_a_config_with_an_unknown_field_is_refused(tmp_path):
    config = tmp_path / "agent-task.json"
    config.write_text(
        json.dumps(
            {"version": 1, "workspace": "w1", "agent_task_profiles": [], "source_profiles": []}
        )
    )
    result = invoke("operator", "apply", str(config), "--data-dir", str(tmp_path / "d"))
    assert result.exit_code == 3
    assert json.loads(result.stderr)["code"] == "UNKNOWN_FIELD"


def test_a_config_for_another_data_dir_is_refused(tmp_path, repo):
    config = tmp_path / "agent-task.json"
    config.write_text(
        json.dumps(
            {
                "version": 1,
                "workspace": "w1",
                "agent_task_profiles": [
                    {
                        "repository_id": "acme",
                        "profile_id": "default",
                        "native_repository": str(repo),
                        "data_dir": "/elsewhere",
                        "target": "main",
                        "requirement_digest": "a" * 64,
                    }
                ],
            }
        )
    )
    result = invoke("operator", "apply", str(config), "--data-dir", str(tmp_path / "d"))
    assert json.loads(result.stderr)["code"] == "INVALID_VALUE"


def test_a_relative_repository_path_is_refused(tmp_path):
    result = invoke(
        "operator",
        "register-repository",
        "--workspace",
        "w1",
        "--repository",
        "acme",
        "relative/path",
        "--data-dir",
        str(tmp_path / "d"),
    )
    assert json.loads(result.stderr)["code"] == "INVALID_PATH"


def test_a_collector_profile_file_that_is_not_json_is_malformed_json_not_a_traceback(
    tmp_path, repo
):
    data, *_ = setup(tmp_path, repo)
    bad = tmp_path / "profile.json"
    bad.write_text("{not json")
    result = invoke("operator", "install-collector-profile", "--file", str(bad), "--data-dir", data)
    assert result.exit_code == 3
    assert json.loads(result.stderr)["code"] == "MALFORMED_JSON"


def test_enrolling_a_key_that_is_not_hex_is_refused_before_the_data_dir_exists(tmp_path):
    data = tmp_path / "never"
    result = invoke(
        "operator",
        "enroll",
        "--repository",
        "acme",
        "--step",
        "tests",
        "--registration",
        "r",
        "--executor",
        "e",
        "--public-key",
        "z" * 64,
        "--data-dir",
        str(data),
    )
    assert result.exit_code == 3
    assert json.loads(result.stderr)["code"] == "INVALID_VALUE"
    assert not data.exists()
