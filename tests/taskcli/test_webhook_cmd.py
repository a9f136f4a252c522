"""``agent-task admin webhook ...``: the operator's commands, a real receiver checking them."""

from __future__ import annotations

import json

from taskcore.auth import TokenAdmin

from tests.taskcli.frontdoor import agent_task
from tests.taskcore.events.receiver import Receiver


def _journal(path):
    with TokenAdmin(path, create=True):
        pass
    return str(path)


def _json(*args: str):
    result = agent_task(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_add_writes_a_private_secret_file_then_test_list_and_remove(tmp_path):
    data = _journal(tmp_path / "data")
    secret_file = tmp_path / "hook.secret"
    # The receiver learns the secret from the file the command writes: start it after.
    added = agent_task(
        "admin", "webhook", "add", "--workspace", "w1", "--url", "http://127.0.0.1:1/x",
        "--events", "agenttask.*", "--events", "observe.whoami", "--secret-file",
        str(secret_file), "--allow-private-targets", "--data-dir", data,
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    assert "wrote a new secret" in added.stdout
    secret = secret_file.read_text().strip()
    assert secret.startswith("whsec_")
    assert secret not in added.output
    assert secret_file.stat().st_mode & 0o777 == 0o600
    receiver = Receiver(secret)
    try:
        # The same file again: its secret is reused, the file left as it is.
        second = _json(
            "admin", "webhook", "add", "--workspace", "w1", "--url", receiver.url,
            "--events", "*", "--secret-file", str(secret_file), "--allow-private-targets",
            "--data-dir", data,
        )  # fmt: skip
        assert second["secretFileCreated"] is False
        assert secret_file.read_text().strip() == secret
        endpoint = second["endpoint"]["endpointId"]
        tested = _json("admin", "webhook", "test", endpoint, "--data-dir", data)
        assert (tested["delivery"]["status"], tested["httpStatus"]) == ("delivered", 200)
        (got,) = receiver.unique().values()
        assert got["payload"]["type"] == "webhook.test"
        listed = agent_task("admin", "webhook", "list", "--data-dir", data)
        assert endpoint in listed.stdout
        assert secret not in listed.stdout
        assert (
            _json("admin", "webhook", "list", "--data-dir", data)["endpoints"][1]["delivered"] == 1
        )
        deliveries = agent_task("admin", "webhook", "deliveries", "--data-dir", data)
        assert "webhook.test" in deliveries.stdout
        removed = agent_task("admin", "webhook", "remove", endpoint, "--data-dir", data)
        assert removed.stdout.strip() == f"removed {endpoint}"
        assert len(_json("admin", "webhook", "list", "--data-dir", data)["endpoints"]) == 1
    finally:
        receiver.close()


def test_a_private_url_is_refused_without_the_flag_and_nothing_is_stored(tmp_path):
    data = _journal(tmp_path / "data")
    refused = agent_task(
        "admin", "webhook", "add", "--workspace", "w1", "--url", "http://127.0.0.1:1/x",
        "--events", "*", "--secret-file", str(tmp_path / "s"), "--data-dir", data,
    )  # fmt: skip
    assert refused.exit_code == 3
    assert "INVALID_VALUE" in refused.stderr
    assert "--allow-private-targets" in refused.stderr
    assert _json("admin", "webhook", "list", "--data-dir", data)["endpoints"] == []
