"""Scheduling across replicas: two ``agent-task serve`` processes on one PostgreSQL database.

A claimer waiting on replica B is woken by a resume made through replica A (the commit's
NOTIFY), and by a task created through A whose runAt comes (B's timer is the earliest runAt it
reads from the database). A carrier verb of its own keeps these tests apart from others'
tasks in the shared database.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from taskcore.actors import Tier

from tests.replicas.test_replicas import _start, _stop, _token


def test_a_resume_through_one_replica_wakes_a_claimer_waiting_on_another(tmp_path, postgres_url):
    a, b = _start(tmp_path, postgres_url, 2)
    verb = f"sched.r{uuid.uuid4().hex[:8]}"
    try:
        admin = _token(postgres_url, "sched-admin", Tier.ADMIN)
        agent = _token(postgres_url, "sched-agent", Tier.AGENT)
        assert a.post("/v/agenttask.verb.register", {"verb": verb}, admin).status_code == 200
        assert a.post("/v/agenttask.pause", {"verb": verb}, admin).json()["paused"] is True
        task = a.post("/v/agenttask.create", {"verb": verb}, admin).json()["taskId"]
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(
                b.post, "/v/agenttask.claimNext", {"verb": verb, "waitMs": 20_000}, agent
            )
            time.sleep(1.0)
            assert not waiting.done()
            started = time.monotonic()
            assert a.post("/v/agenttask.resume", {"verb": verb}, admin).status_code == 200
            answer = waiting.result().json()
            took = time.monotonic() - started
        assert answer["claimed"] is True
        assert answer["task"]["taskId"] == task
        assert took < 5.0
    finally:
        _stop([a, b])


def test_a_task_scheduled_through_one_replica_wakes_a_claimer_on_another(tmp_path, postgres_url):
    a, b = _start(tmp_path, postgres_url, 2)
    verb = f"sched.s{uuid.uuid4().hex[:8]}"
    try:
        admin = _token(postgres_url, "sched-admin2", Tier.ADMIN)
        agent = _token(postgres_url, "sched-agent2", Tier.AGENT)
        assert a.post("/v/agenttask.verb.register", {"verb": verb}, admin).status_code == 200
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(
                b.post, "/v/agenttask.claimNext", {"verb": verb, "waitMs": 20_000}, agent
            )
            time.sleep(1.0)
            made = a.post("/v/agenttask.create", {"verb": verb, "delayMs": 1_500}, admin)
            task = made.json()
            started = time.monotonic()
            answer = waiting.result().json()
            took = time.monotonic() - started
        assert answer["claimed"] is True
        assert answer["task"]["taskId"] == task["taskId"]
        assert 0.8 < took < 8.0  # not before its runAt, soon after it
    finally:
        _stop([a, b])
