"""The public URL setting: what OAuth names its issuer and resources from."""

from __future__ import annotations

import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.hosting import HostSettings, public_url_of


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("https://tasks.example.com", "https://tasks.example.com"),
        ("https://Tasks.Example.com:8443/", "https://tasks.example.com:8443"),
        ("http://127.0.0.1:8787", "http://127.0.0.1:8787"),
        ("http://localhost:8787/", "http://localhost:8787"),
        ("", None),
    ],
)
def test_a_public_url_is_an_origin(given, kept):
    assert public_url_of(given) == kept


@pytest.mark.parametrize(
    "given",
    [
        "http://tasks.example.com",  # OAuth needs TLS off loopback
        "https://tasks.example.com/agent-task",  # the metadata lives at the root
        "https://tasks.example.com/?x=1",
        "https://user:pw@tasks.example.com",
        "ftp://tasks.example.com",
        "tasks.example.com",
    ],
)
def test_anything_else_is_refused_naming_the_setting(given):
    with pytest.raises(TaskError) as refused:
        public_url_of(given)
    assert refused.value.code is ErrorCode.INVALID_VALUE
    assert "AGENT_TASK_PUBLIC_URL" in refused.value.message


def test_the_variables_configure_it_and_a_flag_wins(tmp_path):
    env = {
        "AGENT_TASK_PUBLIC_URL": "https://a.example.com/",
        "AGENT_TASK_OAUTH_ALLOW_PRIVATE_CLIENT_URLS": "1",
    }
    loaded = HostSettings.load(data_dir=tmp_path, environ=env)
    assert loaded.public_url == "https://a.example.com"
    assert loaded.oauth_allow_private_client_urls is True
    flagged = HostSettings.load(data_dir=tmp_path, environ=env, public_url="https://b.example.com")
    assert flagged.public_url == "https://b.example.com"
    assert HostSettings.load(data_dir=tmp_path, environ={}).public_url is None
