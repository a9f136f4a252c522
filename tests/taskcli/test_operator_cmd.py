from __future__ import annotations

import json
import subprocess

import click
import pytest
from click.testing import CliRunner
from taskcli import collector_cmd, operator_cmd

from tests.ci import skip_or_fail


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


def _venv(tmp_path):
    """A virtualenv's bin/python: a symlink into the interpreter this test runs on."""
    import os
    import sys

    bindir = tmp_path / "venv" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "python").symlink_to(os.path.realpath(sys.executable))
    home = os.path.dirname(os.path.realpath(sys.executable))
    (bindir.parent / "pyvenv.cfg").write_text(f"home = {home}\n")
    return str(bindir / "python")


def test_a_profile_whose_command_cannot_start_in_its_sandbox_is_refused_at_installation(
    tmp_path, repo
):
    from taskcore.collector.sandbox import bwrap_available

    if not bwrap_available():
        skip_or_fail("needs bubblewrap: without it nothing is hidden from the command")
    data, *_ = setup(tmp_path, repo)
    python = _venv(tmp_path)
    base = ["--arg", python, "--arg", "-c", "--arg", "pass", "--sandbox-minimum", "bwrap"]
    args = [a for a in PROFILE_ARGS if a not in ("/bin/sh", "-c", "true")]
    args = args[: args.index("--arg")]
    refused = invoke(*args, *base, "--profile-id", "cp-venv", "--data-dir", data)
    assert refused.exit_code == 3, refused.stderr
    assert "INVALID_VALUE" in refused.stderr
    assert f"could not start argv[0] '{python}' in its sandbox" in refused.stderr
    assert "the collector profile, not the code, is at fault" in refused.stderr
    assert "--expose-interpreter" in refused.stderr
    assert (
        ok("operator", "show", "--repository", "acme", "--data-dir", data)["collector_profiles"]
        == []
    )
    installed = ok(
        *args, *base, "--expose-interpreter", "--profile-id", "cp-venv", "--data-dir", data
    )
    body = json.loads(installed["profile"]["profile"])
    assert body["isolation"]["read_only_paths"][0] == str(tmp_path / "venv")
    # The remote collector's own check: runtime-probe makes the same one.
    probe = invoke("collector", "runtime-probe", *base)
    assert probe.exit_code == 3
    assert "could not start argv[0]" in probe.stderr
    probe = ok("collector", "runtime-probe", *base, "--expose-interpreter")
    assert len(probe["runtime_identity_sha256"]) == 64


def test_a_relative_argv0_is_refused_at_installation(tmp_path, repo):
    data, *_ = setup(tmp_path, repo)
    args = [a for a in PROFILE_ARGS if a not in ("/bin/sh", "-c", "true")]
    args = args[: args.index("--arg")]
    for relative in (".venv/bin/python", "./run.sh"):
        refused = invoke(*args, "--arg", relative, "--profile-id", "cp-rel", "--data-dir", data)
        assert refused.exit_code == 3, refused.stderr
        assert f"argv[0] '{relative}' is a relative path" in refused.stderr
    refused = invoke(
        *args,
        "--arg",
        "./run.sh",
        "--runtime-identity",
        "a" * 64,
        "--profile-id",
        "cp-rel",
        "--data-dir",
        data,
    )
    assert "is a relative path" in refused.stderr  # another machine's identity: refused too


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


# -- the commands are generated from the registry's operator acts ------------------------------

import attrs  # noqa: E402
from taskcli.admin_cmd import (  # noqa: E402
    OAUTH_COMMANDS,
    TOKEN_COMMANDS,
    oauth_group,
    token_group,
)
from taskcli.generate import flag_name  # noqa: E402
from taskcli.operator_cmd import OPERATOR_COMMANDS, operator_group  # noqa: E402
from taskcli.webhook_cmd import WEBHOOK_COMMANDS, webhook_group  # noqa: E402
from taskcore.service import Surface, default_registry  # noqa: E402
from taskcore.wirefield import wire_name  # noqa: E402

OPERATOR_ACTS = default_registry().select(surfaces=(Surface.OPERATOR,))


def _command(op):
    if op.name in OPERATOR_COMMANDS:
        return operator_group.commands[OPERATOR_COMMANDS[op.name]]
    if op.name in OAUTH_COMMANDS:
        return oauth_group.commands[OAUTH_COMMANDS[op.name]]
    if op.name in WEBHOOK_COMMANDS:
        return webhook_group.commands[WEBHOOK_COMMANDS[op.name]]
    return token_group.commands[TOKEN_COMMANDS[op.name]]


def test_every_operator_act_of_the_registry_has_a_command():
    assert {op.name for op in OPERATOR_ACTS} == (
        set(OPERATOR_COMMANDS) | set(TOKEN_COMMANDS) | set(OAUTH_COMMANDS) | set(WEBHOOK_COMMANDS)
    )
    assert not set(OPERATOR_COMMANDS) & set(TOKEN_COMMANDS)
    assert not (set(OPERATOR_COMMANDS) | set(TOKEN_COMMANDS)) & set(OAUTH_COMMANDS)
    assert not (set(OPERATOR_COMMANDS) | set(TOKEN_COMMANDS) | set(OAUTH_COMMANDS)) & set(
        WEBHOOK_COMMANDS
    )
    assert len(operator_group.commands) == len(OPERATOR_COMMANDS)
    assert len(token_group.commands) == len(TOKEN_COMMANDS)
    assert len(oauth_group.commands) == len(OAUTH_COMMANDS)
    assert len(webhook_group.commands) == len(WEBHOOK_COMMANDS)
    assert OPERATOR_COMMANDS["operator.apply_config"] == "apply"
    assert TOKEN_COMMANDS["operator.token_revoke"] == "revoke"
    for op in OPERATOR_ACTS:
        if op.name not in _HAND_WRITTEN:
            assert _command(op).short_help == op.summary


# Commands written by hand: the fields another option supplies (`webhook add` reads the secret
# from --secret-file, never from the command line), and the ones named otherwise.
_HAND_WRITTEN: dict[str, dict[str, str | None]] = {
    "operator.webhook_add": {"secret": None, "endpoint_url": "url"},
    "operator.webhook_test": {},
}


@pytest.mark.parametrize("op", OPERATOR_ACTS, ids=lambda op: op.name)
def test_an_act_command_has_one_parameter_per_field(op):
    params = {p.name: p for p in _command(op).params}
    attrs.resolve_types(op.input_type)
    renamed = _HAND_WRITTEN.get(op.name, {})
    for field in attrs.fields(op.input_type):
        if field.name in renamed:
            if renamed[field.name] is None:
                assert field.name not in params  # never taken on the command line
                continue
            assert renamed[field.name] in params
            continue
        param = params[field.name]
        if isinstance(param, click.Option) and field.name != "profile":
            assert flag_name(wire_name(field)) in param.opts
        if field.name not in ("requirement", "profile"):  # another option may supply these
            assert param.required == (field.default is attrs.NOTHING), field.name
        if field.type is int or field.type == int | None:
            assert isinstance(param.type, click.IntRange)
    assert {"data_dir", "as_json"} <= set(params)


def test_the_json_output_is_the_acts_wire_answer(tmp_path, repo):
    data, *_ = setup(tmp_path, repo)
    shown = ok(
        "operator", "show", "--repository", "acme", "--registration", "reg-1", "--data-dir", data
    )
    group = click.Group()
    from taskcli import call_cmd

    call_cmd.register(group)
    request = json.dumps({"repository_id": "acme", "registrations": ["reg-1"]})
    called = CliRunner().invoke(
        group, ["call", "operator.show", "--request", request, "--data-dir", data, "--json"]
    )
    assert called.exit_code == 0, called.stderr
    assert json.loads(called.stdout) == shown
    # The generated spellings work beside the old ones.
    same = ok(
        "operator",
        "show",
        "--repository-id",
        "acme",
        "--registrations",
        "reg-1",
        "--data-dir",
        data,
    )
    assert same == shown


def test_readable_output_names_the_next_step(tmp_path, repo):
    data, _, key, _ = setup(tmp_path, repo)
    args = ["--repository", "acme", "--step", "tests", "--registration", "reg-2"]
    args += ["--executor", "ci-host", "--public-key", key["public_key"], "--data-dir", data]
    enrolled = CliRunner().invoke(load_commands(), ["operator", "enroll", *args])
    assert enrolled.exit_code == 0, enrolled.stderr
    lines = enrolled.stdout.splitlines()
    assert "  registration_epoch: 1" in lines
    assert any(line.startswith("enrollment grants no receipt") for line in lines)
    [pin] = [line for line in lines if line.startswith("on a remote collector: ")]
    assert pin.split()[4:7] == ["agent-task", "collector", "pin-authority"]
    authority = CliRunner().invoke(load_commands(), ["operator", "authority", "--data-dir", data])
    assert pin in authority.stdout.splitlines()


def test_install_requirement_takes_a_file_or_a_test_step_not_both(tmp_path, repo):
    data, req, *_ = setup(tmp_path, repo)
    from taskcore.authority.operator import collector_test_requirement
    from taskcore.canonical import canonical_json

    path = tmp_path / "requirement.json"
    path.write_bytes(canonical_json(collector_test_requirement("tests", "from a file")))
    installed = ok(
        "operator", "install-requirement", "--repository", "acme", str(path), "--data-dir", data
    )
    assert installed["created"] is True
    assert installed["requirement_digest"] != req["requirement_digest"]
    both = invoke(
        "operator",
        "install-requirement",
        "--repository",
        "acme",
        str(path),
        "--test-step",
        "t",
        "--data-dir",
        data,
    )
    neither = invoke("operator", "install-requirement", "--repository", "acme", "--data-dir", data)
    for refused in (both, neither):
        assert refused.exit_code == 3
        assert json.loads(refused.stderr)["code"] == "BAD_INPUT"
