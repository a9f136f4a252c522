"""Wake-ups: the in-process mechanism, and commits heard in-process and across processes.

The pure part (groups, pass-on, ``since``, timers, blocking waiters) needs no journal; the
rest runs on both backends: a commit that signals a queue topic wakes a waiter of this
storage at once, a rolled-back one wakes nobody, every write commit announces the journal,
and a commit through *another* storage of the same journal (another process, as a replica
is) wakes a waiter here: by the ``data_version`` watch on SQLite, by ``NOTIFY`` on
PostgreSQL. One test commits from a real child process.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from taskcore.store import open_storage
from taskcore.store.queue_api import TaskRecord
from taskcore.store.wakeup import JOURNAL_TOPIC, Wakeup, queue_topic

TOPIC = queue_topic("w")
GROUP = ("agent.run", 1)


def _task(task_id: str, workspace: str = "w", status: str = "QUEUED") -> TaskRecord:
    return TaskRecord(
        task_id=task_id,
        workspace=workspace,
        verb="agent.run",
        payload_json=None,
        status=status,
        priority=0,
        autonomy_ceiling=1,
        depth=0,
        parent_task_id=None,
        run_id=None,
        matter_id=None,
        matter_step_id=None,
        created_by="tok",
        created_at_ms=1,
        updated_at_ms=1,
    )


async def _woken(waiter, timeout: float = 5.0) -> bool:
    return await waiter.wait(timeout)


def _settle(*waiters) -> None:
    """Let the first waiters' extra look (a source that just started listening) pass."""
    for waiter in waiters:
        waiter.wait_blocking(0.3)


# -- the mechanism ------------------------------------------------------------------------------


def test_a_notification_wakes_one_waiter_per_group_and_every_ungrouped_one():
    wakeup = Wakeup()
    first = wakeup.waiter(TOPIC, group=GROUP)
    second = wakeup.waiter(TOPIC, group=GROUP)
    other = wakeup.waiter(TOPIC, group=("agent.run", 2))
    stream_a = wakeup.waiter(TOPIC)
    stream_b = wakeup.waiter(TOPIC)
    elsewhere = wakeup.waiter(queue_topic("w2"), group=GROUP)
    wakeup.notify([TOPIC])
    assert [w.signalled for w in (first, second, other, stream_a, stream_b, elsewhere)] == [
        True,
        False,
        True,
        True,
        True,
        False,
    ]
    # A second notification while the head has not looked yet goes to the next in line.
    wakeup.notify([TOPIC])
    assert second.signalled
    wakeup.close()


def test_pass_on_wakes_the_next_and_an_unused_wake_up_is_passed_on_when_leaving():
    wakeup = Wakeup()
    a, b, c = (wakeup.waiter(TOPIC, group=GROUP) for _ in range(3))
    wakeup.notify([TOPIC])
    assert (a.signalled, b.signalled, c.signalled) == (True, False, False)
    assert asyncio.run(_woken(a, 0))  # consumed
    a.pass_on()  # a found something: there may be more
    assert b.signalled
    assert not c.signalled
    b.close()  # b leaves without looking: the longest waiting unwoken one (a again) gets it
    assert a.signalled
    assert not c.signalled
    a.close()  # a leaves too, its wake-up unused: c
    assert c.signalled
    c.close()
    assert wakeup.waiting() == 0
    wakeup.close()


def test_a_waiter_registered_after_a_notification_it_did_not_see_starts_woken():
    wakeup = Wakeup()
    since = wakeup.generation(TOPIC)
    wakeup.notify([TOPIC])  # between the look and the registration
    late = wakeup.waiter(TOPIC, group=GROUP, since=since)
    assert late.signalled
    current = wakeup.waiter(TOPIC, group=GROUP, since=wakeup.generation(TOPIC))
    assert not current.signalled
    wakeup.close()


def test_wait_times_out_and_a_blocking_waiter_is_woken_from_another_thread():
    wakeup = Wakeup()
    waiter = wakeup.waiter(TOPIC, group=GROUP)
    started = time.monotonic()
    assert asyncio.run(_woken(waiter, 0.05)) is False
    assert time.monotonic() - started >= 0.04
    threading.Timer(0.02, wakeup.notify, args=([TOPIC],)).start()
    assert waiter.wait_blocking(5.0) is True
    assert waiter.wait_blocking(0.01) is False
    wakeup.close()


def test_notify_at_fires_once_at_the_earliest_time_asked():
    wakeup = Wakeup()
    waiter = wakeup.waiter(TOPIC, group=GROUP)
    wakeup.notify_at(TOPIC, 5.0)
    wakeup.notify_at(TOPIC, 0.03)  # earlier: kept
    wakeup.notify_at(TOPIC, 1.0)  # later than the pending one: dropped
    started = time.monotonic()
    assert waiter.wait_blocking(3.0)
    assert 0.02 <= time.monotonic() - started < 1.0
    assert wakeup.generation(TOPIC) == 1
    wakeup.close()


def test_closing_wakes_every_waiter():
    wakeup = Wakeup()
    waiters = [wakeup.waiter(TOPIC, group=GROUP) for _ in range(3)]
    wakeup.close()
    assert all(w.signalled for w in waiters)


def test_an_async_waiter_cancelled_while_waiting_leaves_cleanly():
    wakeup = Wakeup()
    waiter = wakeup.waiter(TOPIC, group=GROUP)

    async def main() -> None:
        task = asyncio.create_task(waiter.wait(10.0))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    waiter.close()
    wakeup.notify([TOPIC])  # nobody left to wake; no error
    assert wakeup.waiting() == 0
    wakeup.close()


# -- commits ------------------------------------------------------------------------------------


@pytest.fixture
def storage(tmp_path):
    s = open_storage(tmp_path / "data", create=True)
    yield s
    s.close()


def test_a_commit_that_signals_wakes_a_waiter_and_a_rollback_does_not(storage):
    wakeup = storage.wakeup
    waiter = wakeup.waiter(TOPIC, group=GROUP, since=wakeup.generation(TOPIC))
    journal = wakeup.waiter(JOURNAL_TOPIC)
    _settle(waiter, journal)

    def rolled_back() -> None:
        with storage.write() as tx:
            tx.queue.insert_task(_task("t0"))
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        rolled_back()
    assert not waiter.signalled
    assert not journal.signalled
    with storage.read() as tx:
        tx.queue.get_task("w", "t0")
    assert not journal.signalled  # a read commits nothing
    with storage.write() as tx:
        tx.queue.insert_task(_task("t1", workspace="w2"))  # another workspace's topic
    assert not waiter.signalled
    assert journal.signalled
    with storage.write() as tx:
        tx.queue.insert_task(_task("t2"))
    assert waiter.signalled
    waiter.close()
    journal.close()


def test_only_writes_that_may_free_a_task_signal_the_queue(storage):
    wakeup = storage.wakeup
    with storage.write() as tx:
        tx.queue.insert_task(_task("t", status="ESCALATED"))  # not claimable: no signal
    assert wakeup.generation(TOPIC) == 0
    with storage.write() as tx:
        task = tx.queue.get_task("w", "t")
        import attrs

        queued = attrs.evolve(task, status="QUEUED", version=task.version + 1)
        assert tx.queue.update_task(queued, before=task)
    assert wakeup.generation(TOPIC) == 1
    with storage.write() as tx:
        task = tx.queue.get_task("w", "t")
        assert tx.queue.update_task(
            attrs.evolve(task, priority=5, version=task.version + 1), before=task
        )
    assert wakeup.generation(TOPIC) == 1  # still QUEUED: nothing newly claimable


def _wait_for(waiter, seconds: float = 10.0) -> bool:
    return waiter.wait_blocking(seconds)


def test_a_commit_through_another_storage_of_the_journal_wakes_a_waiter_here(tmp_path, storage):
    # Another storage on the same journal is what another process (a replica) is: its own
    # connections, its own wake-ups; only the database connects the two.
    other = open_storage(tmp_path / "data")
    try:
        since = storage.wakeup.generation(TOPIC)
        waiter = storage.wakeup.waiter(TOPIC, group=GROUP, since=since)
        assert _wait_for(waiter)  # the first waiter of a topic looks once more: nothing lost
        started = time.monotonic()
        with other.write() as tx:
            tx.queue.insert_task(_task("t"))
        assert _wait_for(waiter), "the other storage's commit was not heard"
        heard_in = time.monotonic() - started
        assert heard_in < 2.0
        # Its own commit is heard in-process once, not a second time through the watch.
        waiter.close()
        waiter = storage.wakeup.waiter(TOPIC, group=GROUP)
        _wait_for(waiter, 0.5)  # let a re-registration's look pass
        generation = storage.wakeup.generation(TOPIC)
        with storage.write() as tx:
            tx.queue.insert_task(_task("t2"))
        time.sleep(0.3)
        assert storage.wakeup.generation(TOPIC) == generation + 1
        waiter.close()
    finally:
        other.close()


_CHILD = """
import sys, time
from taskcore.store import open_storage
from taskcore.store.queue_api import TaskRecord
storage = open_storage(sys.argv[1])
time.sleep(0.2)
with storage.write() as tx:
    tx.queue.insert_task(TaskRecord(task_id="child", workspace="w", verb="agent.run",
        payload_json=None, status="QUEUED", priority=0, autonomy_ceiling=1, depth=0,
        parent_task_id=None, run_id=None, matter_id=None, matter_step_id=None,
        created_by="tok", created_at_ms=1, updated_at_ms=1))
storage.close()
"""


def test_a_commit_in_another_process_wakes_a_waiter_here(tmp_path: Path, storage):
    waiter = storage.wakeup.waiter(TOPIC, group=GROUP, since=storage.wakeup.generation(TOPIC))
    assert _wait_for(waiter)  # the first look
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path / "data")], env={**os.environ}
    )
    try:
        assert _wait_for(waiter, 30.0), "the child's commit was not heard"
        assert child.wait(30) == 0
        with storage.read() as tx:
            assert tx.queue.get_task("w", "child") is not None
    finally:
        if child.poll() is None:
            child.kill()
        waiter.close()


def test_a_commit_elsewhere_between_a_look_and_the_waiter_registering_is_not_lost(
    tmp_path, storage
):
    # A claimer reads the generation, looks (nothing), and only then registers its waiter:
    # another replica's commit heard in between, while nobody here waited on the topic, must
    # still wake it (on PostgreSQL the listener drops nothing; on SQLite a topic newly
    # watched is checked once).
    other = open_storage(tmp_path / "data")
    try:
        first = storage.wakeup.waiter(TOPIC, group=GROUP, since=storage.wakeup.generation(TOPIC))
        _settle(first)  # the source listens from now on
        first.close()
        since = storage.wakeup.generation(TOPIC)  # the look
        with other.write() as tx:
            tx.queue.insert_task(_task("between"))
        time.sleep(0.5)  # heard here while nobody waits on the topic
        waiter = storage.wakeup.waiter(TOPIC, group=GROUP, since=since)
        assert _wait_for(waiter, 1.0), "a commit between the look and the wait was lost"
        waiter.close()
    finally:
        other.close()


def test_notify_all_moves_every_generation_and_wakes_every_group():
    wakeup = Wakeup()
    never = queue_topic("never-named")
    since = wakeup.generation(never)  # a look at a topic nobody named yet
    one = wakeup.waiter(TOPIC, group=GROUP)
    two = wakeup.waiter(TOPIC, group=GROUP)
    other = wakeup.waiter(TOPIC, group=("agent.review", 1))
    stream = wakeup.waiter(JOURNAL_TOPIC)
    wakeup.notify_all()
    assert wakeup.waiter(never, group=GROUP, since=since).signalled
    assert [one.signalled, two.signalled, other.signalled, stream.signalled] == [
        True,
        False,
        True,
        True,
    ]
    wakeup.close()


@pytest.mark.backend_only("postgresql", reason="the payload that names no topic is NOTIFY's")
def test_a_notification_naming_no_topic_moves_the_generation_of_every_topic(storage):
    import psycopg
    from taskcore.store.postgres.listen import CHANNEL

    first = storage.wakeup.waiter(TOPIC, group=GROUP, since=storage.wakeup.generation(TOPIC))
    _settle(first)  # the listener runs from now on
    first.close()
    topic = queue_topic("not-waited-on")
    since = storage.wakeup.generation(topic)
    with psycopg.connect(os.environ["AGENT_TASK_DATABASE"], autocommit=True) as conn:
        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, '{"o":"elsewhere","all":true}'))
    time.sleep(0.5)  # heard here while nobody waits on the topic
    waiter = storage.wakeup.waiter(topic, group=GROUP, since=since)
    assert _wait_for(waiter, 1.0), "a notification naming no topic did not move this one"
    waiter.close()
