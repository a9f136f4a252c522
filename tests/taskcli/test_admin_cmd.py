import json
import re

import httpx
import pytest

from tests.taskcli.frontdoor import agent_task

TOKEN = re.compile(r"atk_[0-9a-f]{16}_[0-9a-f]{64}")


def _journal(path):
    """A data dir with a journal, as 'agent-task serve' leaves it."""
    from taskcore.auth import TokenAdmin

    with TokenAdmin(path, create=True):
        pass
    return path


def test_create_prints_the_bare_token_and_stores_only_its_hash(tmp_path):
    _journal(tmp_path)
    result = agent_task(
        "admin",
        "token",
        "create",
        "--workspace",
        "w1",
        "--tier",
        "agent",
        "--data-dir",
        str(tmp_path),
    )
    assert result.exit_code == 0
    assert TOKEN.fullmatch(result.stdout.strip())
    assert result.stdout.count("\n") == 1
    secret = result.stdout.strip().rsplit("_", 1)[1]
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert secret.encode() not in blob


def test_list_shows_bindings_and_revoke_marks_a_token(tmp_path):
    data = str(_journal(tmp_path))
    agent_task(
        "admin",
        "token",
        "create",
        "--workspace",
        "w1",
        "--tier",
        "member",
        "--autonomy",
        "2",
        "--name",
        "ci",
        "--data-dir",
        data,
    )
    rows = json.loads(agent_task("admin", "token", "list", "--json", "--data-dir", data).stdout)[
        "tokens"
    ]
    assert [(r["workspace"], r["tier"], r["autonomy"], r["name"]) for r in rows] == [
        ("w1", "member", 2, "ci")
    ]
    table = agent_task("admin", "token", "list", "--data-dir", data).stdout
    assert rows[0]["token_id"] in table
    revoked = agent_task("admin", "token", "revoke", rows[0]["token_id"], "--data-dir", data)
    assert revoked.exit_code == 0
    assert f"revoked {rows[0]['token_id']}" in revoked.stdout
    again = json.loads(agent_task("admin", "token", "list", "--json", "--data-dir", data).stdout)
    assert again["tokens"][0]["revoked_at_ms"] is not None


@pytest.mark.backend_only(
    "sqlite",
    reason="a data dir without a journal is refused only on SQLite; on PostgreSQL the journal is the database",
)
def test_create_without_the_service_journal_is_refused_and_names_the_data_dir(tmp_path):
    missing = tmp_path / "not-the-service-data"
    result = agent_task(
        "admin",
        "token",
        "create",
        "--workspace",
        "w",
        "--tier",
        "agent",
        "--data-dir",
        str(missing),
    )
    assert result.exit_code == 5
    assert str(missing) in result.stderr
    assert result.stdout == ""
    assert not missing.exists()


def test_the_global_data_dir_reaches_the_command(tmp_path):
    data = _journal(tmp_path / "data")
    created = agent_task(
        "--data-dir", str(data), "admin", "token", "create", "--workspace", "w", "--tier", "agent"
    )
    assert created.exit_code == 0, created.stderr
    rows = json.loads(
        agent_task("--data-dir", str(data), "admin", "token", "list", "--json").stdout
    )
    assert [r["workspace"] for r in rows["tokens"]] == ["w"]


@pytest.mark.backend_only(
    "sqlite", reason="a missing data dir means a missing journal only on SQLite"
)
def test_list_of_a_missing_data_dir_is_not_found_and_creates_nothing(tmp_path):
    result = agent_task("admin", "token", "list", "--data-dir", str(tmp_path / "none"))
    assert result.exit_code == 5
    assert "[NOT_FOUND]" in result.stderr
    assert not (tmp_path / "none").exists()


def test_revoking_an_unknown_token_is_not_found(tmp_path):
    _journal(tmp_path)
    agent_task(
        "admin",
        "token",
        "create",
        "--workspace",
        "w",
        "--tier",
        "agent",
        "--data-dir",
        str(tmp_path),
    )
    assert (
        agent_task("admin", "token", "revoke", "0" * 16, "--data-dir", str(tmp_path)).exit_code == 5
    )


def test_bad_bindings_are_refused(tmp_path):
    data = str(_journal(tmp_path))
    assert (
        agent_task(
            "admin", "token", "create", "--workspace", "w", "--tier", "root", "--data-dir", data
        ).exit_code
        == 2
    )
    bad = agent_task(
        "admin", "token", "create", "--workspace", "a b", "--tier", "agent", "--data-dir", data
    )
    assert bad.exit_code == 3
    assert "[INVALID_VALUE]" in bad.stderr


def test_a_token_revoked_on_the_host_is_refused_by_the_running_service(tmp_path):
    from tests.taskcli.frontdoor import RealLive

    live = RealLive(tmp_path)
    try:
        token = live.token_files["agent"].read_text().strip()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        url = live.url + "/v/agenttask.claimNext"
        assert httpx.post(url, content=b"{}", headers=headers).status_code == 200
        agent_task("admin", "token", "revoke", live.token_ids["agent"], "--data-dir", str(tmp_path))
        refused = httpx.post(url, content=b"{}", headers=headers)
        assert refused.status_code == 401
        assert refused.json()["code"] == "TOKEN_REVOKED"
    finally:
        live.stop()


def test_json_prints_the_wire_answers_and_the_old_positional_token_id_stays(tmp_path):
    data = str(_journal(tmp_path))
    created = agent_task(
        "admin",
        "token",
        "create",
        "--workspace",
        "w1",
        "--tier",
        "admin",
        "--json",
        "--data-dir",
        data,
    )
    issued = json.loads(created.stdout)
    assert set(issued) == {"workspace", "token", "token_id", "tier", "autonomy"}
    assert (issued["workspace"], issued["tier"], issued["autonomy"]) == ("w1", "admin", 1)
    assert TOKEN.fullmatch(issued["token"])
    agent_task(
        "admin", "token", "create", "--workspace", "w2", "--tier", "agent", "--data-dir", data
    )
    only = json.loads(
        agent_task(
            "admin", "token", "list", "--workspace", "w1", "--json", "--data-dir", data
        ).stdout
    )
    assert [r["token_id"] for r in only["tokens"]] == [issued["token_id"]]
    revoked = agent_task(
        "admin", "token", "revoke", issued["token_id"], "--json", "--data-dir", data
    )
    assert json.loads(revoked.stdout) == {
        "workspace": "w1",
        "token_id": issued["token_id"],
        "was_live": True,
    }
    again = agent_task("admin", "token", "revoke", issued["token_id"], "--data-dir", data)
    assert again.stdout.strip() == f"revoked {issued['token_id']} (it was already revoked)"


def test_autonomy_is_bounded_by_the_field_before_anything_runs(tmp_path):
    data = str(_journal(tmp_path))
    result = agent_task(
        "admin",
        "token",
        "create",
        "--workspace",
        "w",
        "--tier",
        "agent",
        "--autonomy",
        "4",
        "--data-dir",
        data,
    )
    assert result.exit_code == 2
    assert "0<=x<=3" in result.stderr
