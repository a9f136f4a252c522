"""The event stream survives a SIGKILLed server: resume with ``Last-Event-ID`` elsewhere.

A client reads ``GET /v1/events`` from one server while writers create, claim and finish
tasks through the others; the server it reads from is SIGKILLed mid-stream; the client
reconnects (to another replica on PostgreSQL; on SQLite, which has one server per journal,
to the same journal served again) with the last id it saw, and goes on. At the end it has
every event of the workspace once, in id order, none lost: exactly the audit table's.

On PostgreSQL the writers' claims and checkpoints run under the shared writer lock, so event
ids commit out of order there: the stream's horizon is what keeps the resumed reader exact.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from taskcore.actors import Tier
from taskcore.auth import issue_token
from taskcore.clock import SystemClock
from taskcore.store import open_storage

from tests.adversarial.served import Served

WORKSPACE = "w"


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend


def _token(served: Served, backend: str, tier: Tier) -> str:
    if backend == "sqlite":
        return served.token(WORKSPACE, tier.wire, autonomy=2)
    storage = open_storage("/nonexistent-data-dir")
    try:
        return issue_token(
            storage, SystemClock(), workspace=WORKSPACE, tier=tier, autonomy=2, name=tier.wire
        ).token
    finally:
        storage.close()


def _post(client: httpx.Client, verb: str, body: dict, token: str) -> httpx.Response:
    return client.post(
        f"/v/{verb}",
        content=json.dumps(body),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )


class Reader:
    """An SSE client that follows a list of servers, resuming with Last-Event-ID."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.ids: list[int] = []
        self.reconnects = 0
        self.urls: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            url = self.urls[-1]
            headers = {"Authorization": f"Bearer {self.token}"}
            params = {}
            if self.ids:
                headers["Last-Event-ID"] = str(self.ids[-1])
            else:
                params["lastEventId"] = "0"
            try:
                with httpx.stream(
                    "GET", f"{url}/v1/events", headers=headers, params=params, timeout=30
                ) as response:
                    assert response.status_code == 200, response.read()
                    for line in response.iter_lines():
                        if line.startswith("id: "):
                            self.ids.append(int(line[4:]))
                        if self.stop.is_set():
                            return
            except (httpx.TransportError, AssertionError):
                self.reconnects += 1
                time.sleep(0.1)


def _workspace_ids(backend: str, data_dir: Path) -> list[int]:
    storage = open_storage(data_dir)
    try:
        with storage.read() as tx:
            return [
                e.seq for e in tx.audit.after(0, up_to=10**18, limit=10**6, workspace=WORKSPACE)
            ]
    finally:
        storage.close()


@pytest.mark.slow
def test_a_reader_resumes_on_another_server_after_a_sigkill_and_misses_nothing(tmp_path, backend):
    replicated = backend == "postgresql"
    servers = [Served(tmp_path / "a")]
    if replicated:
        servers += [Served(tmp_path / "b"), Served(tmp_path / "c")]
    admin = _token(servers[0], backend, Tier.ADMIN)
    member = _token(servers[0], backend, Tier.MEMBER)
    reader = Reader(admin)
    reader.urls.append(servers[0].url)
    reader.thread.start()
    failures: list[str] = []
    done = threading.Event()

    def write(i: int) -> None:
        while not done.is_set():
            target = servers[1 + i % 2] if replicated else servers[-1]
            try:
                with httpx.Client(base_url=target.url, timeout=30) as client:
                    while not done.is_set():
                        r = _post(client, "agenttask.create", {"verb": "agent.run"}, member)
                        if r.status_code != 200:
                            failures.append(r.text)
                            return
                        claim = _post(client, "agenttask.claimNext", {}, member).json()
                        if claim.get("claimed"):
                            body = {
                                "taskId": claim["task"]["taskId"],
                                "fence": claim["lease"]["fence"],
                                "status": "DONE",
                            }
                            _post(client, "agenttask.checkpoint", body, member)
            except httpx.TransportError:
                time.sleep(0.1)  # (SQLite) the one server is being restarted

    writers = [threading.Thread(target=write, args=(i,), daemon=True) for i in range(4)]
    try:
        for w in writers:
            w.start()
        deadline = time.monotonic() + 60
        while len(reader.ids) < 150:
            assert time.monotonic() < deadline, "the reader saw too few events"
            time.sleep(0.05)
        servers[0].proc.send_signal(signal.SIGKILL)  # mid-stream, mid-writes
        servers[0].proc.wait(10)
        if replicated:
            reader.urls.append(servers[1].url)
        else:
            servers.append(Served(tmp_path / "a"))
            reader.urls.append(servers[-1].url)
        seen_at_kill = len(reader.ids)
        deadline = time.monotonic() + 60
        while len(reader.ids) < seen_at_kill + 150:
            assert time.monotonic() < deadline, "the reader did not resume"
            time.sleep(0.05)
        done.set()
        for w in writers:
            w.join(30)
        assert failures == []
        expected = _workspace_ids(backend, tmp_path / "a")
        deadline = time.monotonic() + 60
        while len(reader.ids) < len(expected) or reader.ids[-1] < expected[-1]:
            assert time.monotonic() < deadline, "the reader did not catch up"
            time.sleep(0.05)
    finally:
        done.set()
        reader.stop.set()
        for server in servers:
            server.stop()
    assert reader.reconnects >= 1
    ids = reader.ids
    assert len(ids) == len(set(ids)), "an event was sent twice"
    assert ids == sorted(ids), "events out of order"
    # Every event of the workspace up to the last one read, none lost, none added.
    assert ids == [seq for seq in expected if seq <= ids[-1]]
    assert ids[-1] >= expected[-1]
