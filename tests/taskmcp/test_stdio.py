"""``agent-task mcp --stdio`` answers a broken line with its JSON-RPC error (the SDK drops it).

The installed command runs as a client starts it: lines in on stdin, answers out on stdout.
Every answer must come back, in order, and the session must go on serving after each one.
"""

from __future__ import annotations

import json
import subprocess

from tests.taskmcp.support import AGENT_TASK

INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def _exchange(tmp_path, lines: list[str], answers: int) -> list[dict]:
    """Send ``lines``; read ``answers`` answers before closing stdin (EOF ends the server)."""
    process = subprocess.Popen(
        [AGENT_TASK, "mcp", "--stdio", "--data-dir", str(tmp_path / "data")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdin.write("".join(line + "\n" for line in lines))
        process.stdin.flush()
        out = [json.loads(process.stdout.readline()) for _ in range(answers)]
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
    return out


def test_broken_lines_get_their_json_rpc_errors_and_the_session_goes_on(tmp_path):
    answers = _exchange(
        tmp_path,
        [
            json.dumps(INIT),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            "{",
            "[]",
            '{"jsonrpc": "1.0", "id": 2, "method": "ping"}',
            '{"jsonrpc": "2.0", "id": 3, "method": 5}',
            json.dumps({"jsonrpc": "2.0", "id": "after", "method": "ping"}),
        ],
        answers=6,
    )
    assert [a["id"] for a in answers] == ["init", None, None, 2, 3, "after"]
    assert [a.get("error", {}).get("code") for a in answers] == [
        None,
        -32700,
        -32600,
        -32600,
        -32600,
        None,
    ]
    assert answers[1]["error"]["data"]["code"] == "MALFORMED_JSON"
    assert "no batches" in answers[2]["error"]["message"]
    assert answers[3]["error"]["data"] == {
        "error": 'send a JSON-RPC 2.0 message: "jsonrpc" must be "2.0"',
        "code": "BAD_INPUT",
    }
    assert answers[5]["result"] == {}


def test_a_broken_first_line_is_answered_on_the_2026_era_too(tmp_path):
    discover = {
        "jsonrpc": "2.0",
        "id": "d",
        "method": "server/discover",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    answers = _exchange(tmp_path, ["{not json", json.dumps(discover)], answers=2)
    assert answers[0]["error"]["code"] == -32700
    assert answers[1]["id"] == "d"
    assert "2026-07-28" in answers[1]["result"]["supportedVersions"]
