"""``agent-task serve --workers N``: real worker processes on one port, on both backends
(the directory's ``module_backend``).

* 2 workers serve one port; 8 HTTP clients drain 160 tasks: no task claimed twice, each DONE
  exactly once, both workers alive throughout;
* a worker killed with SIGKILL is restarted (said on stderr) and the port keeps answering;
  SIGTERM to ``serve`` stops every worker and exits 0;
* a worker that cannot start (a broken ``retention.json``) stops the server with the worker's
  message and a failing status, leaving no worker behind.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.adversarial.served import Served

WORKSPACE = "w"
PID = re.compile(r"worker (\d+) started \(pid (\d+)\)")


def _pids(served: Served) -> dict[int, int]:
    """The pid of each worker index, the latest start of each."""
    out: dict[int, int] = {}
    for index, pid in PID.findall(served.log()):
        out[int(index)] = int(pid)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped) counts as gone.
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().split(") ", 1)[1][0] != "Z"


def _wait_gone(pids: list[int], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids if Path(f"/proc/{p}").exists()):
        assert time.monotonic() < deadline, f"workers still running: {pids}"
        time.sleep(0.05)


def _post(client: httpx.Client, verb: str, body: object, token: str) -> httpx.Response:
    return client.post(
        f"/v/{verb}",
        json=body,
        headers={"Authorization": f"Bearer {token}"},
    )


@pytest.mark.slow
def test_two_workers_serve_one_port_and_no_task_is_claimed_twice(tmp_path):
    served = Served(tmp_path / "data", "--workers", "2", "--token-rate", "0")
    try:
        pids = _pids(served)
        assert sorted(pids) == [1, 2], served.log()
        token = served.token(WORKSPACE, tier="member", autonomy=3)
        tasks, clients_n = 160, 8
        for _ in range(tasks):
            r = _post(served.client, "agenttask.create", {"verb": "agent.run"}, token)
            assert r.status_code == 200, r.text
        done: list[list[str]] = [[] for _ in range(clients_n)]
        failures: list[str] = []

        def drain(i: int) -> None:
            # A fresh connection per client: the kernel hands each to one of the workers.
            with httpx.Client(base_url=served.url, timeout=60) as client:
                while True:
                    r = _post(client, "agenttask.claimNext", {}, token)
                    if r.status_code != 200:
                        failures.append(f"claim {r.status_code} {r.text}")
                        return
                    claim = r.json()
                    if not claim["claimed"]:
                        return
                    task_id, fence = claim["task"]["taskId"], claim["lease"]["fence"]
                    body = {"taskId": task_id, "status": "DONE", "fence": fence}
                    r = _post(client, "agenttask.checkpoint", body, token)
                    if r.status_code != 200:
                        failures.append(f"checkpoint {r.status_code} {r.text}")
                        return
                    done[i].append(task_id)

        threads = [threading.Thread(target=drain, args=(i,)) for i in range(clients_n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert failures == []
        finished = Counter(task for per in done for task in per)
        assert len(finished) == tasks
        assert max(finished.values()) == 1  # 0 double claims
        assert all(_alive(pid) for pid in pids.values())
    finally:
        assert served.stop() == 0
    _wait_gone(list(pids.values()))
    assert "agent-task: stopped" in served.log()


@pytest.mark.slow
def test_a_killed_worker_is_restarted_and_sigterm_stops_every_worker(tmp_path):
    served = Served(tmp_path / "data", "--workers", "2")
    first = _pids(served)
    try:
        os.kill(first[1], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while _pids(served).get(1) == first[1]:
            assert time.monotonic() < deadline, served.log()
            time.sleep(0.05)
        assert f"worker 1 (pid {first[1]}) exited with signal 9; restarting it" in served.log()
        # The port answers throughout: the other worker, then both.
        for _ in range(20):
            assert served.client.get("/healthz").status_code == 200
        again = _pids(served)
        assert again[2] == first[2]
        assert again[1] != first[1]
    finally:
        status = served.stop()
    assert status == 0, served.log()
    _wait_gone([*first.values(), *_pids(served).values()])


def test_a_worker_that_cannot_start_stops_the_server(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "retention.json").write_text("{not json")
    served = Served(data, "--workers", "2", expect_start=False)
    assert served.url == ""
    assert served.proc.returncode not in (0, None)
    log = served.log()
    assert "before it listened; stopping" in log
    assert "retention.json" in log
    _wait_gone([int(pid) for _, pid in PID.findall(log)])


@pytest.mark.slow
def test_workers_stop_themselves_when_the_supervisor_is_killed(tmp_path):
    served = Served(tmp_path / "data", "--workers", "2")
    pids = list(_pids(served).values())
    served.proc.kill()  # SIGKILL: the supervisor cannot stop anyone
    served.proc.wait(10)
    _wait_gone(pids, seconds=40)  # each saw its parent go and stopped gracefully
    served.client.close()
