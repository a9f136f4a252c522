import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from taskcore import Service
from taskcore.auth import FIRST_ADMIN_TOKEN_FILENAME

# The installed console script, as a person or a supervisor runs it.
AGENT_TASK = [str(Path(sys.executable).with_name("agent-task"))]


class Served:
    """``agent-task serve`` as a child process; ``url`` once it says it is serving."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen(
            [*AGENT_TASK, "serve", "--port", "0", *args],
            stderr=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env if env is not None else dict(os.environ),
        )
        self.lines = []
        self.url = None
        for line in self.proc.stderr:
            self.lines.append(line)
            if "serving http://" in line:
                self.url = line.split("serving ", 1)[1].split(" ", 1)[0]
                break
        if self.url is None:
            self.proc.wait(30)
            raise AssertionError("".join(self.lines))
        # Keep reading stderr (one log line per request) so a full pipe never blocks the server.
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self._drain.join(timeout=10)
        self.proc.stdout.close()
        return self.proc.returncode


@pytest.fixture
def data(tmp_path):
    return tmp_path / "data"


def test_first_start_in_a_fresh_place_writes_the_admin_token_once(tmp_path):
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    clean = {k: v for k, v in os.environ.items() if k != "AGENT_TASK_DATA_DIR"}
    served = Served(env={**clean, **env})
    token_file = tmp_path / "xdg" / "agent-task" / FIRST_ADMIN_TOKEN_FILENAME
    try:
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        assert any(f"wrote the first admin token to {token_file}" in line for line in served.lines)
        token = token_file.read_text().strip()
        assert token not in "".join(served.lines)
        health = httpx.get(served.url + "/v1/hub/health").json()
        assert health["status"] == "ok"
        assert health["backend"] == (
            "postgresql" if os.environ.get("AGENT_TASK_DATABASE") else "sqlite"
        )
        r = httpx.post(
            served.url + "/v/agenttask.claimNext",
            content=b"{}",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        assert r.json() == {"claimed": False}
    finally:
        assert served.stop() == 0
    assert "stopped" in served.lines[-1]
    again = Served(env={**clean, **env})
    try:
        assert not any("wrote the first admin token" in line for line in again.lines)
        assert token_file.read_text().strip() == token
    finally:
        again.stop()


def test_sigterm_finishes_in_flight_requests_and_loses_nothing_acknowledged(data):
    served = Served("--data-dir", str(data))
    token = (data / FIRST_ADMIN_TOKEN_FILENAME).read_text().strip()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    acked: list[str] = []
    lock = threading.Lock()
    enough = threading.Event()

    def writer(n):
        with httpx.Client(headers=headers, timeout=30) as client:
            for i in range(10_000):
                body = json.dumps({"verb": "agent.run", "payload": {"writer": n, "i": i}})
                try:
                    r = client.post(served.url + "/v/agenttask.create", content=body)
                except httpx.HTTPError:
                    return  # the server stopped accepting
                if r.status_code != 200:
                    return
                with lock:
                    acked.append(r.json()["taskId"])
                    if len(acked) >= 40:
                        enough.set()

    writers = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for w in writers:
        w.start()
    assert enough.wait(120)
    assert served.stop() == 0
    for w in writers:
        w.join()
    service = Service.open(data)
    try:
        actor = service.authenticate(token)
        for task_id in acked:
            got = service.dispatch(actor, "agenttask.get", {"taskId": task_id}).json()
            assert got["taskId"] == task_id
    finally:
        service.close()


def test_a_port_in_use_exits_8(data):
    served = Served("--data-dir", str(data))
    try:
        port = served.url.rsplit(":", 1)[1]
        second = subprocess.run(
            [*AGENT_TASK, "serve", "--data-dir", str(data), "--port", port],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 8
        assert "cannot listen" in second.stderr
    finally:
        served.stop()


def test_each_request_is_one_json_log_line_with_the_request_id_it_echoes(data):
    served = Served("--data-dir", str(data), "--log-format", "json")
    try:
        response = httpx.get(served.url + "/v1/hub/health", headers={"X-Request-Id": "probe-1"})
        assert response.headers["x-request-id"] == "probe-1"
        token = (data / FIRST_ADMIN_TOKEN_FILENAME).read_text().strip()
        httpx.post(
            served.url + "/v/observe.whoami", json={}, headers={"Authorization": f"Bearer {token}"}
        )
    finally:
        assert served.stop() == 0
    records = [json.loads(line) for line in served.lines if line.startswith("{")]
    health = [r for r in records if r["path"] == "/v1/hub/health"]
    assert health[0]["request_id"] == "probe-1"
    assert health[0]["status"] == 200
    whoami = [r for r in records if r["path"] == "/v/observe.whoami"]
    assert whoami[0]["status"] == 200
    assert token not in "".join(served.lines)
    assert "atk_" not in "".join(served.lines)


def test_the_variables_the_asgi_app_reads_configure_serve_and_a_flag_wins(data):
    """serve and taskhttp.asgi share one table of settings (taskcore.hosting)."""
    env = {**os.environ, "AGENT_TASK_LOG_FORMAT": "json", "AGENT_TASK_MAX_BODY_BYTES": "1024"}
    refused = subprocess.run(
        [*AGENT_TASK, "serve", "--data-dir", str(data), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert refused.returncode == 3  # INVALID_VALUE, before anything is opened
    (line,) = refused.stderr.splitlines()
    assert "AGENT_TASK_MAX_BODY_BYTES" in line
    assert not data.exists()
    served = Served("--data-dir", str(data), "--max-body-bytes", str(16 * 2**20), env=env)
    try:
        httpx.get(served.url + "/v1/hub/health")
    finally:
        assert served.stop() == 0
    assert any(line.startswith('{"ts"') for line in served.lines)  # the variable's JSON log


def test_serve_delivers_queued_forge_statuses(tmp_path, data):
    """A status queued in the journal reaches the forge while ``agent-task serve`` runs."""
    from taskcore.store import open_storage
    from taskcore.store.forge_api import OutboxRecord

    from tests.taskcore.evidence.forge_server import GITHUB_SHAPE, FakeForge

    forge = FakeForge(GITHUB_SHAPE)
    token = tmp_path / "forge.token"
    token.write_text("ghp_from_a_file\n")
    storage = open_storage(data, create=True)
    with storage.write() as tx:
        tx.forge.enqueue(
            OutboxRecord(
                seq=0,
                repository_id="acme",
                profile_id="default",
                subject_seq=1,
                change_id="c1",
                commit="a" * 40,
                revision="b" * 64,
                context="agent-task/default",
                state="success",
                cause="receipt",
                description="agent-task: qualified",
                target_url=None,
                receipt_digest="c" * 64,
                kind="github",
                api_url=forge.url,
                project="octo/acme",
                token_file=str(token),
                token_header="bearer",
                status="queued",
                attempts=0,
                next_attempt_at_ms=0,
                last_error=None,
                created_at_ms=0,
                updated_at_ms=0,
            )
        )
    storage.close()
    served = Served("--data-dir", str(data))
    try:
        deadline = time.monotonic() + 20
        while not forge.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert forge.states() == ["success"]
        assert forge.violations == []
    finally:
        assert served.stop() == 0
        forge.close()
    assert "ghp_from_a_file" not in "".join(served.lines)
