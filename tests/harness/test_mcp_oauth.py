"""The real Claude Code and Codex authorize with OAuth against ``agent-task serve``, then call
a tool.

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

from tests.harness.harnesses import claude_env, codex_config, codex_env, run_claude, run_codex
from tests.harness.scripted_model import ScriptedModel, ToolCall, Turn, call, say
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


def test_codex_logs_in_with_oauth_and_claims_as_the_grant(
    codex_bin: Path, model: ScriptedModel, proxy, home: Path, tmp_path: Path
):
    """``codex mcp login --no-browser``: Codex prints the URL and reads the callback URL.

    Codex names itself by a metadata document on chatgpt.com by default (unreachable here);
    ``--oauth-client-registration dcr`` is its switch for dynamic registration, which it then
    does itself at our ``/register``. ``codex mcp add`` would start the login at once, so the
    server is configured the way ``config.toml`` documents it (``url`` and no token).
    """
    queue = QueueService(tmp_path / "data").start()
    try:
        task_id = _queued(queue)
        project = _project(tmp_path)
        codex_home = home / ".codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(
            codex_config(
                model.url,
                trusted=[project],
                extra=f'\n[mcp_servers.{SERVER}]\nurl = "{queue.url}/mcp"\n',
            )
        )
        env = codex_env(home, codex_home, proxy.url)
        login = subprocess.Popen(
            [
                str(codex_bin),
                "mcp",
                "login",
                SERVER,
                "--no-browser",
                "--oauth-client-registration",
                "dcr",
            ],
            cwd=project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            assert login.stdout is not None
            assert login.stdin is not None
            shown = _read_until(login.stdout.fileno(), re.compile(r"Callback URL"))
            authorize = re.search(r"(http://127\.0\.0\.1:\d+/authorize\?\S+)", shown)
            assert authorize is not None, shown
            request_id = request_id_of(consent_url_of(authorize.group(1)))
            decided = queue.call(
                "member",
                "oauth.request.approve",
                {"requestId": request_id, "tier": "agent", "autonomy": 1},
            )
            login.stdin.write(decided["redirectTo"].encode() + b"\n")
            login.stdin.flush()
            _read_until(login.stdout.fileno(), re.compile(r"Successfully logged in"))
            assert login.wait(timeout=30) == 0
        finally:
            login.kill()

        model.extend(
            [
                Turn(calls=(ToolCall("agenttask_claimNext", {}, namespace=f"mcp__{SERVER}"),)),
                say("Claimed the task."),
            ]
        )
        result = run_codex(codex_bin, "claim the next task", cwd=project, env=env)
        assert result.returncode == 0, result.stderr
        assert model.played == 2
        assert "agenttask_claimNext" in model.loop_requests[0].namespace(f"mcp__{SERVER}")
        [output] = [
            item
            for item in model.loop_requests[1].body["input"]
            if item.get("type") == "function_call_output"
        ]
        answer = _claim_result(output["output"])
        assert answer["claimed"] is True
        assert answer["task"]["taskId"] == task_id
        assert answer["lease"]["owner"] == decided["grantId"]
    finally:
        queue.stop()
