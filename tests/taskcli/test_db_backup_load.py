"""A backup taken under a 16-client load holds every mutation acknowledged before it began.

A real service (``Service`` behind ``BackgroundServer``, HTTP on a loopback port) takes writes
from 16 client threads: each creates tasks and finishes every third one (create, claim,
checkpoint ``DONE``), recording each answer it got. Once the clients have made a few hundred
acknowledged writes, the set acknowledged so far is noted and the backup starts in another
process, as an operator runs it, while the clients go on:

* SQLite: ``agent-task db backup --to FILE``; the copy passes ``agent-task db verify --file``;
  the service is stopped and ``agent-task db restore FILE`` puts it in place (the replaced
  journal kept beside it);
* PostgreSQL: ``agent-task db backup`` refuses and names the ``pg_dump`` line, which is run as
  printed; the dump is restored with ``pg_restore`` into a new database, which passes
  ``agent-task db verify --database``.

A service opened on the restored journal then shows every task acknowledged before the backup
began, each in at least the status acknowledged (a task acknowledged ``DONE`` is ``DONE``), and
no task that was never acknowledged or sent.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from taskcore.actors import Tier
from taskcore.auth import issue_token
from taskcore.clock import SystemClock
from taskcore.service import Service
from taskcore.store.storage import DATABASE_ENV
from taskhttp.app import create_app
from taskhttp.server import BackgroundServer

from tests.upgrade.support import ScratchDatabase

CLIENTS = 16
BEFORE_BACKUP = 320  # acknowledged writes before the backup starts
AFTER_BACKUP = 160  # and after it ends, before the clients stop
DEADLINE_S = 120.0
AT = str(Path(sys.executable).parent / "agent-task")


class Load:
    """16 client threads writing through HTTP; what each got acknowledged, in order."""

    def __init__(self, url: str, member: str, agent: str) -> None:
        self.url = url
        self.member = member
        self.agent = agent
        self.lock = threading.Lock()
        self.acked: dict[str, str] = {}  # taskId -> the newest acknowledged status
        self.count = 0
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(CLIENTS)
        ]

    def _post(self, verb: str, body: dict[str, Any], token: str) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.url}/v/{verb}",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer

    def _ack(self, task_id: str, status: str) -> None:
        with self.lock:
            self.acked[task_id] = status
            self.count += 1

    def _client(self, n: int) -> None:
        k = 0
        while not self.stop.is_set():
            k += 1
            try:
                task = self._post(
                    "agenttask.create",
                    {"verb": "agent.run", "payload": {"client": n, "k": k}},
                    self.member,
                )
                self._ack(task["taskId"], "QUEUED")
                if k % 3:
                    continue
                claimed = self._post("agenttask.claim", {"taskId": task["taskId"]}, self.agent)
                done = self._post(
                    "agenttask.checkpoint",
                    {
                        "taskId": task["taskId"],
                        "fence": claimed["lease"]["fence"],
                        "status": "DONE",
                        "checkpoint": {"output": k},
                    },
                    self.agent,
                )
                self._ack(task["taskId"], done["status"])
            except (urllib.error.URLError, OSError, KeyError) as exc:
                with self.lock:
                    self.errors.append(f"client {n}: {exc!r}")
                return

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def wait_for(self, count: int, started: float) -> None:
        while True:
            with self.lock:
                if self.count >= count or self.errors:
                    return
            assert time.monotonic() - started < DEADLINE_S, "the load made too little progress"
            time.sleep(0.02)

    def snapshot(self) -> dict[str, str]:
        with self.lock:
            return dict(self.acked)

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)
        assert not self.errors, self.errors[:3]


def agent_task(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AT, *args], capture_output=True, text=True, env=env, check=False)


def _restored_tasks(data: Path, token: str) -> dict[str, str]:
    """Every task of the restored journal, read through a service opened on it."""
    service = Service.open(data)
    try:
        seen: dict[str, str] = {}
        cursor = None
        while True:
            page = service.call(token, "agenttask.list", {"cursor": cursor, "limit": 1000})
            body = json.loads(page.body)
            seen |= {t["taskId"]: t["status"] for t in body["tasks"]}
            cursor = body["nextCursor"]
            if cursor is None:
                return seen
    finally:
        service.close()


@pytest.mark.slow
def test_a_backup_under_load_holds_every_acknowledged_write(tmp_path: Path, backend: str) -> None:
    data = tmp_path / "data"
    service = Service.open(data)
    clock = SystemClock()
    tokens = {
        tier: issue_token(service.storage, clock, workspace="w1", tier=tier).token
        for tier in (Tier.ADMIN, Tier.MEMBER, Tier.AGENT)
    }
    server = BackgroundServer(create_app(service))
    load = Load(server.start(), tokens[Tier.MEMBER], tokens[Tier.AGENT])
    env = {**os.environ, "AGENT_TASK_DATA_DIR": str(data)}
    scratch: ScratchDatabase | None = None
    started = time.monotonic()
    try:
        load.start()
        load.wait_for(BEFORE_BACKUP, started)
        before = load.snapshot()  # acknowledged before the backup began
        if backend == "sqlite":
            done = agent_task("db", "backup", "--to", str(tmp_path / "b.sqlite"), "--json", env=env)
            assert done.returncode == 0, done.stderr
            report = json.loads(done.stdout)
        else:
            done = agent_task("db", "backup", "--to", str(tmp_path / "b.dump"), env=env)
            assert done.returncode == 3, done.stderr
            line = done.stderr.split("; run ", 1)[1].split(" (with the password", 1)[0]
            dumped = subprocess.run(shlex.split(line), capture_output=True, text=True, check=False)
            assert dumped.returncode == 0, dumped.stderr
        during = load.count
        load.wait_for(during + AFTER_BACKUP, started)
    finally:
        load.finish()
        server.stop()
        service.close()
    everything = load.snapshot()
    print(  # the figures, for the log
        f"{backend}: {len(before)} tasks acknowledged before the backup, {during - BEFORE_BACKUP}"
        f" more writes while it ran, {len(everything)} tasks in all"
    )
    assert len(everything) > len(before)  # the clients went on during and after the backup

    if backend == "sqlite":
        assert report["counts"]["queue_task"] >= len(before)
        verified = agent_task("db", "verify", "--file", str(tmp_path / "b.sqlite"), env=env)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        restored = agent_task("db", "restore", str(tmp_path / "b.sqlite"), "--json", env=env)
        assert restored.returncode == 0, restored.stderr
        assert json.loads(restored.stdout)["replaced"]
        target = data
    else:
        server_url = os.environ[DATABASE_ENV]
        scratch = ScratchDatabase(server_url, server_url.rsplit("/", 1)[1] + "_restored")
        scratch.create()
        loaded = subprocess.run(
            ["pg_restore", "--no-owner", "--no-privileges", "--dbname", scratch.url,
             str(tmp_path / "b.dump")],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert loaded.returncode == 0, loaded.stderr
        verified = agent_task("db", "verify", "--database", scratch.url, env=env)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        os.environ[DATABASE_ENV] = scratch.url  # the backend fixture's monkeypatch restores it
        target = data
    try:
        if backend == "sqlite":
            assert agent_task("db", "verify", env=env).returncode == 0
        seen = _restored_tasks(target, tokens[Tier.ADMIN])
    finally:
        if scratch is not None:
            os.environ[DATABASE_ENV] = server_url
            scratch.drop()
    missing = [t for t in before if t not in seen]
    assert not missing, f"{len(missing)} acknowledged tasks are not in the backup"
    for task_id, status in before.items():
        if status == "DONE":
            assert seen[task_id] == "DONE", task_id
    assert set(seen) <= set(everything)  # nothing the clients were not told about
