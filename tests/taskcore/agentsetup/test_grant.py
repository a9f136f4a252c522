"""The hooks' grant file (``taskcore.agentsetup.grant``): what it accepts, how it is written.

The refresh against a real token endpoint, the lock among concurrent hooks and the login that
writes the file are tested over a live service in ``tests/taskcli/test_agent_login.py``.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from taskcore.agentsetup.grant import (
    GRANT_VERSION,
    REFRESH_MARGIN_MS,
    GrantError,
    default_grant_path,
    fresh,
    load,
    save,
    updated,
)

GRANT = {
    "version": GRANT_VERSION,
    "url": "http://127.0.0.1:8787",
    "issuer": "http://127.0.0.1:8787",
    "tokenEndpoint": "http://127.0.0.1:8787/token",
    "resource": "http://127.0.0.1:8787/mcp",
    "clientId": "c1",
    "scope": "agent-task:read agent-task:write",
    "accessToken": "ato_a",
    "refreshToken": "atr_r",
    "expiresAtMs": 10_000_000,
}


def test_save_writes_0600_in_a_private_directory_and_load_reads_it_back(tmp_path):
    path = tmp_path / "cfg" / "agent-task" / "grant.json"
    save(str(path), GRANT)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert load(str(path)) == GRANT
    assert [p.name for p in path.parent.iterdir()] == ["grant.json"]  # no temporary left


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        json.dumps({**GRANT, "version": 2}),
        json.dumps({**GRANT, "refreshToken": ""}),
        json.dumps({**GRANT, "expiresAtMs": "soon"}),
        json.dumps({k: v for k, v in GRANT.items() if k != "clientId"}),
        " " * 70_000,
    ],
)
def test_load_refuses_what_is_not_a_grant_and_names_the_login(tmp_path, text):
    path = tmp_path / "grant.json"
    path.write_text(text)
    with pytest.raises(GrantError, match="is not a grant file: run 'agent-task agent login"):
        load(str(path))


def test_a_missing_grant_names_the_login(tmp_path):
    with pytest.raises(GrantError, match=r"no grant at .*: run 'agent-task agent login"):
        load(str(tmp_path / "none.json"))


def test_fresh_keeps_a_margin_before_expiry():
    assert fresh(GRANT, GRANT["expiresAtMs"] - REFRESH_MARGIN_MS - 1)
    assert not fresh(GRANT, GRANT["expiresAtMs"] - REFRESH_MARGIN_MS)


def test_updated_takes_the_new_tokens_and_keeps_a_refresh_token_not_rotated():
    out = updated(GRANT, {"access_token": "ato_b", "expires_in": 3600, "refresh_token": "atr_s"}, 5)
    assert (out["accessToken"], out["refreshToken"], out["expiresAtMs"]) == (
        "ato_b",
        "atr_s",
        5 + 3_600_000,
    )
    kept = updated(GRANT, {"access_token": "ato_c", "expires_in": 60}, 0)
    assert kept["refreshToken"] == "atr_r"
    for bad in (
        {"expires_in": 60},
        {"access_token": "x"},
        {"access_token": "x", "expires_in": "1"},
    ):
        with pytest.raises(GrantError, match="malformed"):
            updated(GRANT, bad, 0)


def test_default_path_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("AGENT_TASK_GRANT_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_grant_path() == os.path.join(tmp_path, "agent-task", "grant.json")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert default_grant_path() == str(
        Path(tmp_path / "h" / ".config" / "agent-task" / "grant.json")
    )
    monkeypatch.setenv("AGENT_TASK_GRANT_FILE", "~/g.json")
    assert default_grant_path() == str(tmp_path / "h" / "g.json")
