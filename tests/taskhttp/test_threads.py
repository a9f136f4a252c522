import asyncio
import threading

import pytest
from taskhttp.threads import WorkerPool


def test_returns_the_result_computed_off_the_loop_thread():
    pool = WorkerPool()
    loop_thread = threading.get_ident()

    async def main():
        return await pool.run(lambda a, b=0: (a + b, threading.get_ident()), 2, b=3)

    value, ident = asyncio.run(main())
    pool.close()
    assert value == 5
    assert ident != loop_thread


def test_the_exception_reaches_the_awaiting_coroutine():
    pool = WorkerPool()

    def boom():
        raise KeyError("nope")

    async def main():
        await pool.run(boom)

    with pytest.raises(KeyError, match="nope"):
        asyncio.run(main())
    pool.close()


def test_threads_are_bounded_and_waiting_calls_run_in_order():
    pool = WorkerPool(max_threads=3)
    gate = threading.Event()
    ran: list[int] = []
    lock = threading.Lock()

    def work(i):
        gate.wait(10)
        with lock:
            ran.append(i)
        return i

    async def main():
        tasks = [asyncio.ensure_future(pool.run(work, i)) for i in range(10)]
        await asyncio.sleep(0.05)
        assert pool.threads == 3
        gate.set()
        return await asyncio.gather(*tasks)

    assert asyncio.run(main()) == list(range(10))
    assert sorted(ran) == list(range(10))
    assert pool.threads == 3
    pool.close()


def test_idle_threads_are_reused():
    pool = WorkerPool()
    seen: set[int] = set()

    async def main():
        for _ in range(50):
            seen.add(await pool.run(threading.get_ident))

    asyncio.run(main())
    assert pool.threads == 1
    assert len(seen) == 1
    pool.close()


def test_close_stops_the_threads_after_queued_work_and_later_calls_start_new_ones():
    pool = WorkerPool(max_threads=2)
    workers: set[threading.Thread] = set()

    def square(i):
        workers.add(threading.current_thread())
        return i * i

    async def main():
        return await asyncio.gather(*(pool.run(square, i) for i in range(6)))

    assert asyncio.run(main()) == [0, 1, 4, 9, 16, 25]
    assert 1 <= len(workers) <= 2
    pool.close()
    for t in workers:
        t.join(10)
        assert not t.is_alive()
    assert pool.threads == 0
    first = set(workers)
    assert asyncio.run(main()) == [0, 1, 4, 9, 16, 25]
    assert workers - first  # new threads served the later calls
    pool.close()


def test_a_cancelled_awaiter_leaves_the_call_to_finish():
    pool = WorkerPool()
    started, finish, done = threading.Event(), threading.Event(), threading.Event()

    def slow():
        started.set()
        finish.wait(10)
        done.set()
        return "late"

    async def main():
        task = asyncio.ensure_future(pool.run(slow))
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        finish.set()
        for _ in range(10_000):
            if done.is_set():
                break
            await asyncio.sleep(0.001)
        # the pool still serves calls after a cancelled one
        assert await pool.run(lambda: 7) == 7

    asyncio.run(main())
    assert done.is_set()
    pool.close()


def test_max_threads_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        WorkerPool(max_threads=0)
