"""``session_gate`` over the service does not hand one host's sessions to every workspace (item 7).

The attack: agent tokens of two workspaces received the same host session's rung and receipt
lines; the service answered from the host's own transcripts. Now a network caller is refused
unless the operator names the workspace the host's sessions belong to (a single-user host):
``agent-task serve --session-gate-workspace W``. Locally (``agent-task mcp --stdio``) the tool
answers as before.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.adversarial.served import Served

FIXTURES = Path(__file__).resolve().parent.parent / "taskcore" / "donegate" / "fixtures"


@pytest.fixture
def host(tmp_path):
    """This host's coding-agent sessions (copies of the checked-in transcripts)."""
    shutil.copytree(FIXTURES / "claude", tmp_path / "claude")
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    env = {
        "HOME": str(tmp_path / "home"),
        "AGENT_TASK_GATE_INDEX": str(tmp_path / "gate-index.sqlite"),
        "AGENT_TASK_CLAUDE_PROJECTS_DIR": str(tmp_path / "claude" / "projects"),
        "AGENT_TASK_CODEX_SESSIONS_DIR": str(tmp_path / "codex" / "sessions"),
    }
    transcript = next((tmp_path / "codex" / "sessions").rglob("*0004*.jsonl"))
    return env, str(transcript)


def _ask(served, token, transcript):
    rpc = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "session_gate", "arguments": {"transcript_path": transcript}},
    }
    r = served.client.post(
        "/mcp",
        content=json.dumps(rpc).encode(),
        headers=served.headers(token, Accept="application/json, text/event-stream"),
    )
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    return result["isError"], json.loads(result["content"][0]["text"])


def test_by_default_no_workspace_sees_the_hosts_sessions(tmp_path, host):
    env, transcript = host
    served = Served(tmp_path / "data", env=env)
    try:
        for workspace in ("w1", "w2"):
            is_error, body = _ask(served, served.token(workspace), transcript)
            assert is_error
            assert body["code"] == "FORBIDDEN"
            assert "rung" not in body
    finally:
        assert served.stop() == 0


def test_the_operator_names_the_one_workspace_the_hosts_sessions_belong_to(tmp_path, host):
    env, transcript = host
    served = Served(tmp_path / "data", "--session-gate-workspace", "w1", env=env)
    try:
        is_error, body = _ask(served, served.token("w1"), transcript)
        assert not is_error, body
        assert body["rung"] == 5
        is_error, body = _ask(served, served.token("w2"), transcript)
        assert is_error
        assert body["code"] == "FORBIDDEN"
        assert "receipt_lines" not in body
    finally:
        assert served.stop() == 0
