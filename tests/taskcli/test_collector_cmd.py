from __future__ import annotations

import json
import os
import stat

import click
from click.testing import CliRunner
from taskcli import collector_cmd


def load_commands():
    group = click.Group()
    collector_cmd.register(group)
    return group


def invoke(*args):
    return CliRunner().invoke(load_commands(), list(args), catch_exceptions=False)


def test_keygen_prints_only_the_public_key_and_keeps_the_seed_private(tmp_path):
    state = tmp_path / "collector"
    result = invoke("collector", "keygen", "--state-dir", str(state))
    assert result.exit_code == 0
    public = result.stdout.strip()
    assert len(public) == 64
    saved = json.loads((state / "key.json").read_text())
    assert saved["public_key"] == public
    assert saved["seed"] not in result.output
    assert stat.S_IMODE(os.stat(state / "key.json").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700


def test_keygen_never_replaces_a_key(tmp_path):
    state = str(tmp_path / "collector")
    invoke("collector", "keygen", "--state-dir", state)
    again = invoke("collector", "keygen", "--state-dir", state)
    assert again.exit_code == 6
    assert "ALREADY_EXISTS" in again.stderr


def test_runtime_probe_prints_a_stable_identity():
    args = ("collector", "runtime-probe", "--arg", "/bin/sh", "--json")
    first = json.loads(invoke(*args).stdout)
    second = json.loads(invoke(*args).stdout)
    assert first == second
    assert len(first["runtime_identity_sha256"]) == 64


def test_runtime_probe_names_the_sandbox_and_the_isolation_options():
    from taskcore.collector.sandbox import detect_sandbox

    args = ("collector", "runtime-probe", "--arg", "/bin/sh", "--json")
    plain = json.loads(invoke(*args).stdout)
    assert plain["identity"]["sandbox"] == detect_sandbox().value
    capped = json.loads(invoke(*args, "--network", "host", "--output-cap", "4096").stdout)
    assert capped["identity"]["isolation"]["output_cap_bytes"] == 4096
    assert capped["runtime_identity_sha256"] != plain["runtime_identity_sha256"]


def test_status_lists_nothing_for_a_fresh_state(tmp_path):
    state = str(tmp_path / "collector")
    invoke("collector", "keygen", "--state-dir", state)
    result = invoke("collector", "status", "--state-dir", state, "--json")
    assert json.loads(result.stdout)["attempts"] == []
