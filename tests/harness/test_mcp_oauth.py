"""The real Claude Code authorizes with OAuth against ``agent-task serve``, then calls a tool.

What a user does, headless: register a client at our ``/register`` (Claude Code's own client
ID is a metadata document URL on claude.ai, which this server cannot fetch here: no network
beyond 127.0.0.1), ``claude mcp add --transport http --client-id ... --client-secret
--callback-port ...``, then ``claude mcp login --no-browser`` in a terminal (it needs one): it
prints the authorization URL, the person consents (here: ``oauth.request.approve`` with a
member's token, what the board's Approve button calls) and pastes the redirect URL back.
Claude Code exchanges the code (PKCE, HTTP Basic client authentication) and stores the
tokens; ``claude -p`` then lists our tools to the scripted model and ``claimNext`` claims a
task as the grant. Nothing may reach past 127.0.0.1 (the deny proxy).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import socket
import struct
import subprocess
import termios
import time
from pathlib import Path

import httpx

from tests.harness.harnesses import claude_env, run_claude
from tests.harness.scripted_model import ScriptedModel, call, say
from tests.harness.test_mcp import SERVER, _claim_result, _project, _queued
from tests.oauth.support import callback_params, consent_url_of, request_id_of
from tests.taskmcp.support import QueueService

_ESCAPES = re.compile(rb"\x1b\]8;;[^\x07]*\x07|\x1b\[[0-9;?]*[A-Za-z]")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _read_until(fd: int, pattern: re.Pattern[str], timeout: float = 60) -> str:
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        text = _ESCAPES.sub(b"", seen).decode("utf-8", "replace")
        if pattern.search(text):
            return text
    raise AssertionError(f"no {pattern.pattern!r} in: {_ESCAPES.sub(b'', seen)[-2000:]!r}")


def test_claude_code_logs_in_with_oauth_and_claims_as_the_grant(
    claude_bin: Path, model: ScriptedModel, proxy, home: Path, tmp_path: Path
):
    queue = QueueService(tmp_path / "data").start()
    try:
        task_id = _queued(queue)
        port = _free_port()
        registered = httpx.post(
            queue.url + "/register",
            json={
                "client_name": "Claude Code",
                "redirect_uris": [f"http://localhost:{port}/callback"],
                "token_endpoint_auth_method": "client_secret_post",
            },
            timeout=30,
        ).json()
        env = claude_env(home, model.url, proxy.url, {"ENABLE_TOOL_SEARCH": "false"})
        project = _project(tmp_path)
        added = subprocess.run(
            [
                str(claude_bin),
                "mcp",
                "add",
                "--transport",
                "http",
                "--scope",
                "user",
                "--client-id",
                registered["client_id"],
                "--client-secret",
                "--callback-port",
                str(port),
                SERVER,
                queue.url + "/mcp",
            ],
            cwd=project,
            env={**env, "MCP_CLIENT_SECRET": registered["client_secret"]},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert added.returncode == 0, added.stderr

        # 'claude mcp login' insists on a terminal: give it one.
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 1000, 0, 0))
        login = subprocess.Popen(
            [str(claude_bin), "mcp", "login", SERVER, "--no-browser"],
            cwd=project,
            env={**env, "COLUMNS": "1000"},
            stdin=follower,
            stdout=follower,
            stderr=follower,
            close_fds=True,
        )
        os.close(follower)
        try:
            shown = _read_until(leader, re.compile(r"paste the redirect URL", re.IGNORECASE))
            authorize = re.search(r"(http://127\.0\.0\.1:\d+/authorize\?\S+)", shown)
            assert authorize is not None, shown
            request_id = request_id_of(consent_url_of(authorize.group(1)))
            decided = queue.call(
                "member",
                "oauth.request.approve",
                {"requestId": request_id, "tier": "agent", "autonomy": 1},
            )
            back = decided["redirectTo"]
            assert callback_params(back)["iss"] == queue.url
            os.write(leader, back.encode() + b"\r")
            _read_until(leader, re.compile(r"Authenticated with"))
            assert login.wait(timeout=30) == 0
        finally:
            login.kill()
            os.close(leader)

        model.extend([call(f"mcp__{SERVER}__agenttask_claimNext"), say("Claimed the task.")])
        result = run_claude(claude_bin, "claim the next task", cwd=project, env=env)
        assert result.returncode == 0, result.stderr
        assert model.played == 2
        first = model.loop_requests[0]
        assert f"mcp__{SERVER}__agenttask_claimNext" in first.tool_names
        [block] = [
            b
            for b in model.loop_requests[1].body["messages"][-1]["content"]
            if b.get("type") == "tool_result"
        ]
        content = block["content"]
        text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
        answer = _claim_result(text)
        assert answer["claimed"] is True
        assert answer["task"]["taskId"] == task_id
        assert answer["lease"]["owner"] == decided["grantId"]  # the grant holds the lease
    finally:
        queue.stop()
