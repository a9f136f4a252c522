"""Hosting the service: one table of settings (flags and variables), one host for serve and ASGI."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from taskcore import ErrorCode, TaskError
from taskcore.actors import Tier
from taskcore.auth import FIRST_ADMIN_TOKEN_FILENAME, TokenAdmin
from taskcore.hosting import SETTINGS, Host, HostSettings, admin_token_command
from taskcore.limits import HTTP_BODY_BYTES_IN_FLIGHT_MAX, RATE_TOKEN_CALLS_PER_SECOND


def test_every_setting_has_its_own_variable_and_flag_and_a_default_within_its_bound():
    assert len({s.env for s in SETTINGS}) == len({s.flag for s in SETTINGS}) == len(SETTINGS)
    assert all(s.env.startswith("AGENT_TASK_") and s.flag.startswith("--") for s in SETTINGS)
    defaults = HostSettings.load(data_dir=Path("/d"), environ={})
    assert defaults.max_body_bytes == HTTP_BODY_BYTES_IN_FLIGHT_MAX
    assert defaults.token_rate == RATE_TOKEN_CALLS_PER_SECOND
    assert defaults.session_gate_workspaces == frozenset()
    assert defaults.board_secure_cookies is False


def test_a_variable_sets_what_no_flag_gave_and_a_flag_wins_over_it():
    environ = {
        "AGENT_TASK_TOKEN_RATE": "12.5",
        "AGENT_TASK_MAX_CONNECTIONS": " 40 ",
        "AGENT_TASK_LOG_FORMAT": "json",
        "AGENT_TASK_BOARD_SECURE_COOKIES": "yes",
        "AGENT_TASK_SESSION_GATE": "w1, w2,,",
    }
    loaded = HostSettings.load(data_dir=Path("/d"), environ=environ, max_connections=7)
    assert loaded.token_rate == 12.5
    assert loaded.max_connections == 7
    assert loaded.log_format == "json"
    assert loaded.board_secure_cookies is True
    assert loaded.session_gate_workspaces == frozenset({"w1", "w2"})
    assert loaded.rate_limits().token_calls_per_second == 12.5
    # not given: None and an empty repeatable flag
    again = HostSettings.load(
        data_dir=Path("/d"), environ=environ, token_rate=None, session_gate_workspaces=()
    )
    assert again.token_rate == 12.5
    assert again.session_gate_workspaces == frozenset({"w1", "w2"})


def test_the_data_dir_defaults_to_the_variable_every_command_reads(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENT_TASK_DATA_DIR", str(tmp_path / "here"))
    assert HostSettings.load(environ={}).data_dir == tmp_path / "here"


@pytest.mark.parametrize(
    ("variable", "text", "says"),
    [
        ("AGENT_TASK_TOKEN_RATE", "fast", "AGENT_TASK_TOKEN_RATE='fast' is not a number >= 0"),
        ("AGENT_TASK_TOKEN_BURST", "1.5", "is not a whole number >= 1"),
        ("AGENT_TASK_BOARD_SECURE_COOKIES", "maybe", "is not 1 or 0"),
        ("AGENT_TASK_MAX_BODY_BYTES", "1024", "is not a whole number >= 16777216"),
        ("AGENT_TASK_LOG_FORMAT", "xml", "is not one of text, json"),
        ("AGENT_TASK_HEADER_TIMEOUT", "0", "is not a number >= 0.1"),
    ],
)
def test_a_bad_variable_is_invalid_value_naming_it(variable, text, says):
    with pytest.raises(TaskError) as caught:
        HostSettings.load(data_dir=Path("/d"), environ={variable: text})
    assert caught.value.code is ErrorCode.INVALID_VALUE
    assert says in caught.value.message
    assert caught.value.details["variable"] == variable


def test_an_unknown_setting_is_a_programming_error():
    with pytest.raises(TypeError, match="unknown settings: colour"):
        HostSettings.load(data_dir=Path("/d"), environ={}, colour="red")


# The tests that open a journal take ``backend``: SQLite and PostgreSQL (tests/conftest.py).


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate()}


def test_the_asgi_host_never_writes_an_admin_token_and_says_none_exists(tmp_path, backend):
    settings = HostSettings.load(data_dir=tmp_path / "data", environ={})
    with Host(settings) as host:
        assert host.service.health()["status"] == "ok"
        assert host.has_admin_token is False
        assert host.admin_token_file is None
        assert "retention" in _threads()
    assert not (tmp_path / "data" / FIRST_ADMIN_TOKEN_FILENAME).exists()
    assert "retention" not in _threads()
    with pytest.raises(TaskError):
        _ = host.service  # stopped


def test_serve_s_host_writes_the_first_admin_token_once(tmp_path, backend):
    settings = HostSettings.load(data_dir=tmp_path / "data", environ={})
    with Host(settings, first_admin_token=True) as host:
        assert host.admin_token_file == tmp_path / "data" / FIRST_ADMIN_TOKEN_FILENAME
        assert host.has_admin_token is True
    with Host(settings, first_admin_token=True) as again:
        assert again.admin_token_file is None
        assert again.has_admin_token is True


def test_a_revoked_admin_token_or_an_agent_token_is_not_an_admin_token(tmp_path, backend):
    data = tmp_path / "data"
    with TokenAdmin(data, create=True) as admin:
        admin.create(workspace="w1", tier=Tier.AGENT)
        issued = admin.create(workspace="default", tier=Tier.ADMIN)
        admin.revoke(issued.record.token_id)
    with Host(HostSettings.load(data_dir=data, environ={})) as host:
        assert host.has_admin_token is False
    with TokenAdmin(data) as admin:
        admin.create(workspace="default", tier=Tier.ADMIN)
    with Host(HostSettings.load(data_dir=data, environ={})) as host:
        assert host.has_admin_token is True


def test_the_admin_token_command_is_what_the_cli_takes():
    command = admin_token_command(Path("/srv/data"))
    assert command.startswith("agent-task admin token create --data-dir /srv/data ")
    assert "--tier admin" in command
