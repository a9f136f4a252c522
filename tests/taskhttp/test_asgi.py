"""``taskhttp.asgi``: the service under the ASGI servers deployers run.

uvicorn, hypercorn and gunicorn with uvicorn's worker each run ``taskhttp.asgi:app`` as a
child process, configured only by the environment (as ``agent-task serve`` reads it), on an
ephemeral port. The first admin token comes from the command the app logs, run as printed.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx
import pytest
from taskcore import ErrorCode, TaskError
from taskcore.auth import FIRST_ADMIN_TOKEN_FILENAME
from taskcore.hosting import HostSettings
from taskhttp.asgi import AsgiApp, create_asgi_app
from taskhttp.body import BodyDeadline

BIN = Path(sys.executable).parent
LISTENING = re.compile(r"(?:running on|Listening at:|Running on) (http://127\.0\.0\.1:\d+)", re.I)


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    """The servers' journal: SQLite, then a PostgreSQL database emptied for each test."""
    return backend


class Server:
    """An ASGI server as a child process; ``url`` once it says where it listens."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.url: str | None = None
        deadline = time.monotonic() + 60
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            found = LISTENING.search(line)
            if found:
                self.url = found.group(1)
                break
            if time.monotonic() > deadline:
                break
        if self.url is None:
            self.proc.kill()
            raise AssertionError("".join(self.lines))
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()
        self._wait_started()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def _wait_started(self) -> None:
        # gunicorn says where it listens before its worker ran the lifespan.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/v1/hub/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError("".join(self.lines))

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        self._drain.join(timeout=10)
        return code


def _env(data: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGENT_TASK_") or k == "AGENT_TASK_DATABASE"
    }
    return {**env, "AGENT_TASK_DATA_DIR": str(data), **extra}


SERVERS = {
    "uvicorn": [str(BIN / "uvicorn"), "taskhttp.asgi:app", "--port", "0"],
    "uvicorn-factory": [
        str(BIN / "uvicorn"),
        "taskhttp.asgi:create_asgi_app",
        "--factory",
        "--port",
        "0",
    ],
    "hypercorn": [
        str(BIN / "hypercorn"),
        "taskhttp.asgi:app",
        "--bind",
        "127.0.0.1:0",
        "--error-logfile",
        "-",
    ],
    "gunicorn": [
        str(BIN / "gunicorn"),
        "-k",
        "uvicorn_worker.UvicornWorker",
        "--bind",
        "127.0.0.1:0",
        "--no-control-socket",
        "taskhttp.asgi:app",
    ],
}


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_each_server_runs_the_service_and_the_logged_command_makes_the_first_admin(
    tmp_path, server
):
    data = tmp_path / "data"
    running = Server(SERVERS[server], _env(data))
    try:
        health = httpx.get(f"{running.url}/v1/hub/health", timeout=10)
        assert health.status_code == 200
        assert health.json()["status"] == "ok"
        assert not (data / FIRST_ADMIN_TOKEN_FILENAME).exists()  # never from the app
        (command,) = re.findall(r"with: (agent-task admin token create .*)$", running.output, re.M)
        argv = shlex.split(command)
        made = subprocess.run(
            [str(BIN / argv[0]), *argv[1:]],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=_env(data),
        )
        assert made.returncode == 0, made.stderr
        token = made.stdout.strip()
        answer = httpx.post(
            f"{running.url}/v/observe.whoami",
            content=b"{}",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["tier"] == "admin"
        assert "by the server, not this app" in running.output
    finally:
        code = running.stop()
    # A graceful stop: uvicorn re-raises the SIGTERM it handled once the lifespan is done.
    assert code in (0, -signal.SIGTERM), running.output
    assert "agent-task: stopped" in running.output  # the lifespan's shutdown closed the service
    assert "Traceback" not in running.output


def test_uvicorn_with_our_protocol_bounds_headers_and_warns_of_nothing(tmp_path):
    argv = [*SERVERS["uvicorn"], "--http", "taskhttp.asgi:Protocol"]
    running = Server(argv, _env(tmp_path / "data"))
    try:
        huge = httpx.get(
            f"{running.url}/v1/hub/health", headers={"X-Filler": "x" * 20_000}, timeout=10
        )
        assert huge.status_code == 413
        assert huge.json()["code"] == "PAYLOAD_TOO_LARGE"
        assert httpx.get(f"{running.url}/v1/hub/health", timeout=10).status_code == 200
    finally:
        running.stop()
    assert "by the server, not this app" not in running.output


def test_a_bad_variable_stops_the_start_with_one_line_naming_it(tmp_path):
    done = subprocess.run(
        SERVERS["uvicorn"],
        env=_env(tmp_path / "data", AGENT_TASK_TOKEN_RATE="fast"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert (
        "agent-task: AGENT_TASK_TOKEN_RATE='fast' is not a number >= 0 [INVALID_VALUE]"
        in done.stderr
    )
    assert "Traceback" not in done.stderr


# -- the application in process: the lifespan protocol and the body deadline ----------------


def test_importing_the_module_reads_and_opens_nothing(tmp_path):
    code = (
        "import os, taskhttp.asgi as m; "
        "assert m.app.host is None and m._protocol is None; "
        "print(sorted(os.listdir(os.environ['AGENT_TASK_DATA_DIR'])) if os.path.exists(os.environ['AGENT_TASK_DATA_DIR']) else 'none')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(tmp_path / "data", AGENT_TASK_TOKEN_RATE="fast"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "none"


async def _lifespan(app: AsgiApp, then=None):
    """Drive ``app``'s lifespan; ``then`` runs between startup and shutdown."""
    inbox: list[dict] = [{"type": "lifespan.startup"}]
    sent: list[dict] = []
    started = anyio.Event()
    go_on = anyio.Event()

    async def receive():
        if inbox:
            return inbox.pop(0)
        await go_on.wait()
        return {"type": "lifespan.shutdown"}

    async def send(message):
        sent.append(message)
        if message["type"].startswith("lifespan.startup"):
            started.set()

    async with anyio.create_task_group() as group:
        group.start_soon(app, {"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
        await started.wait()
        if then is not None and sent[-1]["type"] == "lifespan.startup.complete":
            await then()
        go_on.set()
    return sent


async def _get(app, path="/v1/hub/health"):
    messages: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        messages.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, receive, send)
    return messages[0]["status"], b"".join(m.get("body", b"") for m in messages[1:])


def test_the_lifespan_opens_the_journal_and_closes_it(tmp_path):
    app = create_asgi_app(HostSettings.load(data_dir=tmp_path / "data", environ={}))
    seen = {}

    async def during():
        seen["status"], _ = await _get(app)
        seen["host"] = app.host

    sent = anyio.run(_lifespan, app, during)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert seen["status"] == 200
    assert seen["host"] is not None
    assert app.host is None


def test_without_the_lifespan_a_request_is_told_how_to_run_it(tmp_path):
    status, body = anyio.run(
        _get, create_asgi_app(HostSettings.load(data_dir=tmp_path, environ={}))
    )
    assert status == 503
    assert b"STORAGE_UNAVAILABLE" in body
    assert b"lifespan" in body


def test_a_failed_start_is_reported_through_the_lifespan(tmp_path):
    (tmp_path / "data").write_text("not a directory")
    app = create_asgi_app(HostSettings.load(data_dir=tmp_path / "data", environ={}))
    sent = anyio.run(_lifespan, app)
    assert sent[0]["type"] == "lifespan.startup.failed"
    assert sent[0]["message"].startswith("agent-task: ")


def test_a_body_slower_than_its_deadline_is_refused_not_waited_for():
    received: list[object] = []

    async def app(scope, receive, send):
        try:
            while (await receive()).get("more_body"):
                pass
        except TaskError as err:
            received.append(err)

    async def slow():
        if not received:
            received.append("first")
            return {"type": "http.request", "body": b"x", "more_body": True}
        await anyio.sleep(30)
        return {"type": "http.request", "body": b"y", "more_body": False}

    async def main():
        with anyio.fail_after(5):
            await BodyDeadline(app, 0.2)({"type": "http"}, slow, None)

    anyio.run(main)
    assert received[0] == "first"
    err = received[1]
    assert isinstance(err, TaskError)
    assert err.code is ErrorCode.BAD_INPUT
    assert "did not arrive within 0.2 s" in err.message


def test_after_the_body_a_wait_for_disconnect_is_not_bounded():
    calls: list[str] = []

    async def receive():
        calls.append("r")
        if len(calls) == 1:
            return {"type": "http.request", "body": b"{}", "more_body": False}
        await anyio.sleep(0.3)
        return {"type": "http.disconnect"}

    async def app(scope, bounded, send):
        assert (await bounded())["type"] == "http.request"
        assert (await bounded())["type"] == "http.disconnect"  # past the 0.1 s deadline

    anyio.run(BodyDeadline(app, 0.1), {"type": "http"}, receive, None)
    assert calls == ["r", "r"]
