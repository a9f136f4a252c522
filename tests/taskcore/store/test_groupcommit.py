"""Group commit: real threads and real processes against a real journal file.

The coordinator is driven deterministically where the batch shape matters (a call holds the
connection until the others are queued behind it), and freely where only the outcome does
(many threads, one service). The crash test SIGKILLs a process in the middle of batches,
again and again, and checks after each kill that no acknowledged call was lost and that no
call was half applied: a call's rows and its audit row are there together or not at all.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest
from taskcore import Actor, Service, TaskError, Tier
from taskcore.digest import AUDIT_INPUT_DOMAIN, domain_digest
from taskcore.errors import ErrorCode
from taskcore.store import groupcommit
from taskcore.store.groupcommit import GroupCommit
from taskcore.store.sqlite import Component, Migration, SqliteDatabase

NOTES = Component(
    "notes",
    (
        Migration(
            1,
            """
            CREATE TABLE note(id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;
            CREATE TABLE parent(id INTEGER PRIMARY KEY) STRICT;
            CREATE TABLE child(
                id INTEGER PRIMARY KEY,
                parent_id INTEGER NOT NULL
                    REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED
            ) STRICT;
            """,
        ),
    ),
)

MEMBER = Actor(token_id="member", workspace="w", tier=Tier.MEMBER, autonomy=2)
WORKER = Actor(token_id="worker", workspace="w", tier=Tier.AGENT, autonomy=1)


@pytest.fixture
def db(tmp_path: Path):
    database = SqliteDatabase(tmp_path / "notes.sqlite", (NOTES,), create=True)
    yield database
    database.close()


def _committed(db: SqliteDatabase, sql: str = "SELECT id FROM note ORDER BY id") -> list[int]:
    """What a fresh connection sees: only committed rows."""
    conn = apsw.Connection(str(db.path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [row[0] for row in conn.execute(sql)]
    finally:
        conn.close()


def _wait_for(predicate: Callable[[], bool]) -> None:
    """Poll until ``predicate`` holds (a test that never gets there fails on its timeout)."""
    while not predicate():
        time.sleep(0.001)


class _Queued:
    """Threads that each run one write, in order; the first holds the connection until all the
    others are queued behind it, so they all share its batch."""

    def __init__(self, writer: GroupCommit, bodies: list[Callable[[apsw.Connection], None]]):
        self.writer = writer
        self.bodies = bodies
        self.errors: dict[int, BaseException] = {}
        self.returned: dict[int, list[int]] = {}
        self.first_in = threading.Event()
        self.threads = [
            threading.Thread(target=self._run, args=(i,)) for i in range(len(self.bodies))
        ]

    def _run(self, i: int) -> None:
        try:
            with self.writer.write() as conn:
                if i == 0:
                    self.first_in.set()
                    _wait_for(lambda: self.writer.waiting() == len(self.bodies) - 1)
                self.bodies[i](conn)
            # Acknowledged: a fresh connection must see this call's row already.
            self.returned[i] = _committed(self.writer.db)
        except BaseException as exc:
            self.errors[i] = exc

    def run(self) -> None:
        self.threads[0].start()
        self.first_in.wait()
        last = len(self.threads) - 1
        for n, t in enumerate(self.threads[1:], start=1):
            t.start()  # queued one after another: turns go in this order
            if n < last:  # the last one is awaited by the first thread, which then moves on:
                # polling for it here could miss the moment and wait forever on a busy machine
                _wait_for(lambda n=n: self.writer.waiting() == n)
        for t in self.threads:
            t.join()


def _insert(n: int) -> Callable[[apsw.Connection], None]:
    def body(conn: apsw.Connection) -> None:
        conn.execute("INSERT INTO note(id, body) VALUES (?, 'x')", (n,))

    return body


def test_queued_calls_share_one_commit_and_return_after_it(db: SqliteDatabase) -> None:
    writer = GroupCommit(db)
    run = _Queued(writer, [_insert(n) for n in range(8)])
    run.run()
    assert run.errors == {}
    assert writer.stats() == (1, 8)  # eight calls, one COMMIT
    for n in range(8):
        assert n in run.returned[n]  # durable and visible before the caller returned
    assert _committed(db) == list(range(8))


def test_a_failing_call_rolls_back_only_its_savepoint(db: SqliteDatabase) -> None:
    writer = GroupCommit(db)

    def fails(conn: apsw.Connection) -> None:
        conn.execute("INSERT INTO note(id, body) VALUES (100, 'half')")
        raise TaskError(ErrorCode.INVALID_VALUE, "refused after a write")

    run = _Queued(writer, [_insert(1), fails, _insert(2), _insert(3)])
    run.run()
    assert set(run.errors) == {1}
    assert isinstance(run.errors[1], TaskError)
    assert run.errors[1].code is ErrorCode.INVALID_VALUE
    assert _committed(db) == [1, 2, 3]
    assert writer.stats() == (1, 3)


def test_the_first_call_of_a_batch_failing_leaves_the_others(db: SqliteDatabase) -> None:
    writer = GroupCommit(db)

    def fails(conn: apsw.Connection) -> None:
        conn.execute("INSERT INTO note(id, body) VALUES (100, 'half')")
        raise ValueError("a handler bug")

    run = _Queued(writer, [fails, _insert(1), _insert(2)])
    run.run()
    assert set(run.errors) == {0}
    assert isinstance(run.errors[0], ValueError)
    assert _committed(db) == [1, 2]


def test_a_constraint_error_is_the_callers_alone(db: SqliteDatabase) -> None:
    writer = GroupCommit(db)
    run = _Queued(writer, [_insert(1), _insert(1), _insert(2)])  # the second collides
    run.run()
    assert set(run.errors) == {1}
    assert isinstance(run.errors[1], apsw.ConstraintError)
    assert _committed(db) == [1, 2]


def test_an_abandoned_transaction_fails_every_call_of_the_batch(db: SqliteDatabase) -> None:
    writer = GroupCommit(db)

    def abandons(conn: apsw.Connection) -> None:
        conn.execute("INSERT INTO note(id, body) VALUES (50, 'x')")
        conn.execute("ROLLBACK")  # what SQLite does itself on a full disk or an I/O error

    run = _Queued(writer, [_insert(1), _insert(2), abandons])
    run.run()
    assert set(run.errors) == {0, 1, 2}
    for err in run.errors.values():
        assert isinstance(err, TaskError)
        assert err.code is ErrorCode.STORAGE_UNAVAILABLE
    assert _committed(db) == []
    with writer.write() as conn:  # the writer goes on
        conn.execute("INSERT INTO note(id, body) VALUES (9, 'x')")
    assert _committed(db) == [9]


def test_a_failed_commit_fails_every_call_and_applies_none(db: SqliteDatabase) -> None:
    writer = GroupCommit(db)

    def orphan(conn: apsw.Connection) -> None:  # a deferred foreign key fails at COMMIT
        conn.execute("INSERT INTO child(id, parent_id) VALUES (1, 404)")

    run = _Queued(writer, [_insert(1), orphan, _insert(2)])
    run.run()
    assert set(run.errors) == {0, 1, 2}
    assert all(
        isinstance(e, TaskError) and e.code is ErrorCode.STORAGE_UNAVAILABLE
        for e in run.errors.values()
    )
    assert _committed(db) == []
    assert _committed(db, "SELECT id FROM child") == []
    assert writer.stats() == (0, 0)


def test_an_integer_storage_cannot_hold_is_out_of_bounds(db: SqliteDatabase) -> None:
    writer = GroupCommit(db)
    with pytest.raises(TaskError) as info, writer.write() as conn:
        conn.execute("INSERT INTO note(id, body) VALUES (?, 'x')", (2**64,))
    assert info.value.code is ErrorCode.OUT_OF_BOUNDS
    with writer.write() as conn:
        conn.execute("INSERT INTO note(id, body) VALUES (1, 'x')")
    assert _committed(db) == [1]


def test_a_nested_write_on_the_same_thread_is_refused(db: SqliteDatabase) -> None:
    writer = GroupCommit(db)
    with writer.write() as conn:
        conn.execute("INSERT INTO note(id, body) VALUES (1, 'x')")
        with pytest.raises(TaskError) as info, writer.write():
            pass
        assert info.value.code is ErrorCode.INTERNAL
    assert _committed(db) == [1]


def test_a_writer_waits_for_its_turn_no_longer_than_the_busy_timeout(tmp_path: Path) -> None:
    database = SqliteDatabase(tmp_path / "n.sqlite", (NOTES,), create=True, busy_timeout_ms=200)
    writer = GroupCommit(database)
    errors: list[BaseException] = []

    def second() -> None:
        try:
            with writer.write():
                pass
        except BaseException as exc:
            errors.append(exc)

    try:
        with writer.write() as conn:
            conn.execute("INSERT INTO note(id, body) VALUES (1, 'x')")
            other = threading.Thread(target=second)
            other.start()
            other.join()  # the holder waits for the other writer: it must give up, not hang
        assert len(errors) == 1
        assert isinstance(errors[0], TaskError)
        assert errors[0].code is ErrorCode.BUSY
        assert _committed(database) == [1]
    finally:
        database.close()


def test_another_connections_write_lock_is_waited_for_in_short_looks(tmp_path: Path) -> None:
    """Another process's writer (here: another connection) holds the lock for 30 ms: the group
    writer gets in within a few milliseconds of its release, not SQLite's up-to-100 ms sleeps;
    held past ``busy_timeout_ms`` it gives up with ``BUSY``."""
    database = SqliteDatabase(tmp_path / "n.sqlite", (NOTES,), create=True, busy_timeout_ms=300)
    writer = GroupCommit(database)
    other = database.open_connection()
    released: list[float] = []
    entered: list[float] = []

    def hold(seconds: float) -> None:
        time.sleep(seconds)
        released.append(time.monotonic())
        other.execute("COMMIT")

    try:
        for _ in range(3):
            other.execute("BEGIN IMMEDIATE")
            holder = threading.Thread(target=hold, args=(0.03,))
            holder.start()
            with writer.write() as conn:
                entered.append(time.monotonic())
                conn.execute("INSERT INTO note(body) VALUES ('x')")
            holder.join()
        waits = sorted(e - r for e, r in zip(entered, released, strict=True))
        assert waits[0] >= 0
        assert waits[1] < 0.02  # the median wait after the release: a look every <= 1 ms
        other.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with pytest.raises(TaskError) as raised, writer.write():
            pass
        assert raised.value.code is ErrorCode.BUSY
        assert 0.3 <= time.monotonic() - started < 5
        other.execute("ROLLBACK")
        assert len(_committed(database)) == 3
    finally:
        other.close()
        database.close()


def test_turns_go_in_arrival_order(db: SqliteDatabase) -> None:
    writer = GroupCommit(db)
    order: list[int] = []

    def note(n: int) -> Callable[[apsw.Connection], None]:
        def body(conn: apsw.Connection) -> None:
            order.append(n)
            _insert(n)(conn)

        return body

    run = _Queued(writer, [note(n) for n in range(6)])
    run.run()
    assert run.errors == {}
    assert order == list(range(6))


def test_a_batch_is_bounded(db: SqliteDatabase) -> None:
    writer = GroupCommit(db, max_batch=3)
    run = _Queued(writer, [_insert(n) for n in range(7)])
    run.run()
    assert run.errors == {}
    commits, calls = writer.stats()
    assert calls == 7
    assert commits >= 3  # at most three calls per COMMIT
    assert _committed(db) == list(range(7))


def test_many_threads_every_write_lands_once(db: SqliteDatabase) -> None:
    writer = GroupCommit(db)
    threads, each = 12, 25
    failures: list[BaseException] = []

    def work(t: int) -> None:
        for i in range(each):
            n = t * 1000 + i
            try:
                with writer.write() as conn:
                    conn.execute("INSERT INTO note(id, body) VALUES (?, 'x')", (n,))
                    if i % 5 == 4:
                        raise KeyError(n)  # every fifth call fails after its insert
                if n not in _committed(db):
                    failures.append(AssertionError(f"{n} returned before it was durable"))
            except KeyError:
                continue
            except BaseException as exc:
                failures.append(exc)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert failures == []
    expected = sorted(t * 1000 + i for t in range(threads) for i in range(each) if i % 5 != 4)
    assert _committed(db) == expected
    commits, calls = writer.stats()
    assert calls == len(expected)
    assert 1 <= commits <= calls


# -- the flush after the commit ----------------------------------------------------------------


def test_a_call_returns_only_after_its_commit_is_flushed_outside_the_lock(
    db: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer commits at synchronous=NORMAL and flushes the WAL itself, after COMMIT freed
    SQLite's lock (another connection can take it then) and before the caller returns."""
    flushed: list[tuple[str, bool]] = []
    real = groupcommit._fdatasync

    def flush(fd: int) -> None:
        other = apsw.Connection(str(db.path))
        try:
            other.execute("BEGIN IMMEDIATE")  # the write lock is free during the flush
            other.execute("ROLLBACK")
            lock_free = True
        except apsw.BusyError:
            lock_free = False
        finally:
            other.close()
        wal = os.fstat(fd).st_ino == os.stat(groupcommit.wal_path(db)).st_ino
        flushed.append(("the WAL" if wal else "another file", lock_free))
        real(fd)

    monkeypatch.setattr(groupcommit, "_fdatasync", flush)
    writer = GroupCommit(db)
    with writer.write() as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        conn.execute("INSERT INTO note(id, body) VALUES (1, 'x')")
        assert flushed == []
    assert flushed == [("the WAL", True)]
    assert _committed(db) == [1]


def test_the_flush_keeps_one_descriptor_of_the_wal_and_never_opens_the_database(
    db: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing any descriptor of a file drops this process's POSIX locks on it (SQLite's, on
    the database file): the flush opens the WAL alone, once, and closes it with the writer."""
    opened: list[str] = []
    real_open = os.open

    def spy(path, flags, *args):  # type: ignore[no-untyped-def]
        opened.append(str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(groupcommit.os, "open", spy)
    writer = GroupCommit(db)
    for n in range(3):
        with writer.write() as conn:
            conn.execute("INSERT INTO note(id, body) VALUES (?, 'x')", (n,))
    assert opened == [groupcommit.wal_path(db)]
    writer.close()
    monkeypatch.undo()
    with writer.write() as conn:  # a closed writer opens what it needs again
        conn.execute("INSERT INTO note(id, body) VALUES (3, 'x')")
    writer.close()
    assert _committed(db) == [0, 1, 2, 3]


def test_a_failed_flush_fails_every_call_of_its_batch_and_the_next_batch_works(
    db: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = groupcommit._fdatasync
    failing = [True]

    def flush(fd: int) -> None:
        if failing[0]:
            failing[0] = False
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(groupcommit, "_fdatasync", flush)
    writer = GroupCommit(db)
    run = _Queued(writer, [_insert(n) for n in range(3)])
    run.run()
    assert set(run.errors) == {0, 1, 2}
    for error in run.errors.values():
        assert isinstance(error, TaskError)
        assert error.code is ErrorCode.STORAGE_UNAVAILABLE
        assert "could not flush" in error.message
    with writer.write() as conn:
        conn.execute("INSERT INTO note(id, body) VALUES (9, 'x')")
    assert writer.stats() == (1, 1)
    assert _committed(db) == [0, 1, 2, 9]  # committed, unconfirmed: not rolled back


def test_the_next_batch_runs_while_one_is_flushed(
    db: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = groupcommit._fdatasync
    first_flushing, release = threading.Event(), threading.Event()
    returned: list[int] = []

    def flush(fd: int) -> None:
        if not first_flushing.is_set():
            first_flushing.set()
            assert release.wait(10)
        real(fd)

    monkeypatch.setattr(groupcommit, "_fdatasync", flush)
    writer = GroupCommit(db)

    def one(n: int) -> None:
        with writer.write() as conn:
            conn.execute("INSERT INTO note(id, body) VALUES (?, 'x')", (n,))
        returned.append(n)

    first = threading.Thread(target=one, args=(1,))
    first.start()
    assert first_flushing.wait(10)
    one(2)  # a whole batch, flush included, while the first is still flushing
    assert returned == [2]  # the first caller is not answered before its own flush
    release.set()
    first.join()
    assert returned == [2, 1]
    assert writer.stats() == (2, 2)


def test_closing_the_writer_during_a_flush_keeps_its_descriptor_until_the_flush_returns(
    db: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A straggler (a call that outlived its caller) may still be flushing when the service
    closes: its descriptor stays open until its fdatasync returns, then it is closed."""
    real = groupcommit._fdatasync
    flushing, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def flush(fd: int) -> None:
        seen.append(fd)
        if len(seen) == 1:
            flushing.set()
            assert release.wait(10)
        os.fstat(fd)  # still open (EBADF otherwise)
        real(fd)

    monkeypatch.setattr(groupcommit, "_fdatasync", flush)
    writer = GroupCommit(db)
    errors: list[BaseException] = []

    def straggler() -> None:
        try:
            with writer.write() as conn:
                conn.execute("INSERT INTO note(id, body) VALUES (1, 'x')")
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=straggler)
    thread.start()
    assert flushing.wait(10)
    writer.close()
    os.fstat(seen[0])  # close() left the running flush's descriptor open
    release.set()
    thread.join()
    assert errors == []
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(seen[0])  # the flush's end closed it
    with writer.write() as conn:  # the closed writer used again opens the WAL anew
        conn.execute("INSERT INTO note(id, body) VALUES (2, 'x')")
    writer.close()
    assert _committed(db) == [1, 2]


def test_a_replaced_wal_descriptor_is_closed_once_no_flush_uses_it(
    db: SqliteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = GroupCommit(db)
    with writer.write() as conn:  # the WAL exists
        conn.execute("INSERT INTO note(id, body) VALUES (1, 'x')")
    flush = groupcommit._WalFlush(db)
    wal = groupcommit.wal_path(db)
    flush()
    first = flush._fd
    assert first is not None
    inode = os.stat(wal).st_ino
    real_stat = os.stat
    monkeypatch.setattr(
        groupcommit.os,
        "stat",
        lambda p, *a, **k: (
            os.stat_result((0, inode + 1, *real_stat(p)[2:]))
            if str(p) == str(wal)
            else real_stat(p, *a, **k)
        ),
    )
    flush()  # the WAL looks replaced: a new descriptor, the old one closed (no flush uses it)
    assert flush._fd not in (None, first)
    monkeypatch.undo()
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(first)
    flush.close()
    writer.close()


# -- the service, many threads ---------------------------------------------------------------


@pytest.mark.backend_only(
    "sqlite",
    reason="group commit is the SQLite storage's writer; PostgreSQL's concurrency is tested in tests/replicas and the queue suite",
)
def test_service_threads_share_commits_and_audit_every_call(tmp_path: Path) -> None:
    service = Service.open(tmp_path / "data")
    threads, cycles = 8, 15
    failures: list[BaseException] = []
    refusals: list[str] = []

    def work(t: int) -> None:
        try:
            for i in range(cycles):
                body = {"verb": "agent.run", "payload": {"t": t, "i": i}}
                service.dispatch(MEMBER, "agenttask.create", body)
                claim = service.dispatch(WORKER, "agenttask.claimNext", b"{}").json()
                task_id, fence = claim["task"]["taskId"], claim["lease"]["fence"]
                stale = {"taskId": task_id, "status": "DONE", "fence": fence + 7}
                try:
                    service.dispatch(WORKER, "agenttask.checkpoint", stale)
                except TaskError as err:
                    refusals.append(err.code.value)
                done = {"taskId": task_id, "status": "DONE", "fence": fence}
                service.dispatch(WORKER, "agenttask.checkpoint", done)
        except BaseException as exc:
            failures.append(exc)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    try:
        assert failures == []
        assert len(refusals) == threads * cycles
        assert len(set(refusals)) == 1  # the same stale-fence refusal every time
        with service.storage.read() as tx:
            conn = tx.conn  # type: ignore[attr-defined]
            statuses = dict(conn.execute("SELECT status, count(*) FROM queue_task GROUP BY 1"))
            assert statuses == {"DONE": threads * cycles}
            outcomes = dict(
                conn.execute(
                    "SELECT operation || ' ' || outcome, count(*) FROM audit_event GROUP BY 1"
                )
            )
        n = threads * cycles
        assert outcomes == {
            "agenttask.create OK": n,
            "agenttask.claimNext OK": n,
            "agenttask.checkpoint OK": n,
            f"agenttask.checkpoint {refusals[0]}": n,
        }
        commits, calls = service.storage.writer.stats()
        assert calls == 4 * n  # every call and every refusal audit went through the writer
        assert commits <= calls
    finally:
        service.close()


# -- SIGKILL in the middle of batches --------------------------------------------------------

KILLS = 8
CRASH_THREADS = 6


def _crash_child(data_dir: str, log_path: str, seed: int) -> None:
    service = Service.open(data_dir)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def log(entry: dict[str, object]) -> None:
        os.write(fd, (json.dumps(entry) + "\n").encode())

    def work(t: int) -> None:
        rng = random.Random(seed * 100 + t)
        i = 0
        while True:
            i += 1
            tag = f"{seed}-{t}-{i}"
            body = json.dumps({"verb": "agent.run", "payload": {"tag": tag}}).encode()
            created = service.dispatch(MEMBER, "agenttask.create", body).json()
            log({"ack": "create", "tag": tag, "task": created["taskId"]})
            if rng.random() < 0.5:
                claim = service.dispatch(WORKER, "agenttask.claimNext", b"{}").json()
                task_id, fence = claim["task"]["taskId"], claim["lease"]["fence"]
                log({"ack": "claim", "task": task_id})
                done = json.dumps({"taskId": task_id, "status": "DONE", "fence": fence})
                service.dispatch(WORKER, "agenttask.checkpoint", done.encode())
                log({"ack": "done", "task": task_id})
            if rng.random() < 0.3:
                raw = json.dumps({"taskId": f"at_missing_{tag}", "status": "DONE", "fence": 1})
                try:
                    service.dispatch(WORKER, "agenttask.checkpoint", raw.encode())
                except TaskError as err:
                    digest = domain_digest(AUDIT_INPUT_DOMAIN, raw.encode())
                    log({"ack": "refused", "digest": digest, "code": err.code.value})

    for t in range(CRASH_THREADS):
        threading.Thread(target=work, args=(t,), daemon=True).start()
    threading.Event().wait()


def _check_after_kill(data_dir: Path, log_path: Path) -> int:
    conn = apsw.Connection(str(data_dir / "journal.sqlite"))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        tasks = {
            task_id: (status, json.loads(payload)["tag"])
            for task_id, status, payload in conn.execute(
                "SELECT task_id, status, payload_json FROM queue_task"
            )
        }
        audits: dict[tuple[str, str], int] = {}
        for op, outcome, subject in conn.execute(
            "SELECT operation, outcome, subject FROM audit_event"
        ):
            key = (f"{op} {outcome}", subject)
            audits[key] = audits.get(key, 0) + 1
        refused = {
            (digest, outcome)
            for digest, outcome in conn.execute(
                "SELECT input_digest, outcome FROM audit_event WHERE outcome != 'OK'"
            )
        }
    finally:
        conn.close()
    # All or nothing: each task row has its create audit, each create audit its task; a
    # claimed task its claim audit, a finished one its checkpoint audit, and nothing else.
    created = {s for (k, s), n in audits.items() if k == "agenttask.create OK" for _ in range(n)}
    assert created == set(tasks)
    assert sum(n for (k, _), n in audits.items() if k == "agenttask.create OK") == len(tasks)
    claimed = {s: n for (k, s), n in audits.items() if k == "agenttask.claimNext OK"}
    finished = {s: n for (k, s), n in audits.items() if k == "agenttask.checkpoint OK"}
    assert set(finished) == {t for t, (status, _) in tasks.items() if status == "DONE"}
    assert all(n == 1 for n in finished.values())
    assert set(claimed) == {t for t, (status, _) in tasks.items() if status in ("LEASED", "DONE")}
    assert all(n == 1 for n in claimed.values())
    # Nothing acknowledged was lost.
    acked = 0
    for line in log_path.read_text().splitlines():
        entry = json.loads(line)
        acked += 1
        if entry["ack"] == "create":
            assert tasks[entry["task"]][1] == entry["tag"]
        elif entry["ack"] == "claim":
            assert tasks[entry["task"]][0] in ("LEASED", "DONE")
        elif entry["ack"] == "done":
            assert tasks[entry["task"]][0] == "DONE"
        else:
            assert (entry["digest"], entry["code"]) in refused
    return acked


@pytest.mark.slow
@pytest.mark.backend_only(
    "sqlite",
    reason="group commit is the SQLite storage's writer; PostgreSQL's concurrency is tested in tests/replicas and the queue suite",
)
def test_sigkill_during_batches_loses_nothing_acknowledged(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    Service.open(data_dir).close()
    ctx = multiprocessing.get_context("spawn")
    acked_total = 0
    for kill in range(KILLS):
        log_path = tmp_path / f"acks-{kill}.log"
        log_path.touch()
        child = ctx.Process(target=_crash_child, args=(str(data_dir), str(log_path), kill))
        child.start()
        # Let it get going (a few acknowledged calls), then kill it at a random moment.
        deadline = time.monotonic() + 60
        while log_path.stat().st_size < 2000 and time.monotonic() < deadline:
            assert child.is_alive()
            time.sleep(0.01)
        time.sleep(random.uniform(0.0, 0.3))
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        assert child.exitcode == -signal.SIGKILL
        acked = _check_after_kill(data_dir, log_path)
        assert acked > 0
        acked_total += acked
    assert acked_total >= KILLS


@pytest.mark.backend_only(
    "sqlite",
    reason="group commit is the SQLite storage's writer; PostgreSQL's concurrency is tested in tests/replicas and the queue suite",
)
def test_the_service_adds_a_lock_only_for_a_storage_that_does_not_group(tmp_path: Path) -> None:
    service = Service.open(tmp_path / "data")

    class OneAtATime:  # a storage without group commit (another backend)
        def __init__(self, inner) -> None:
            self.write, self.read = inner.write, inner.read
            self.ping, self.close = inner.ping, inner.close

    plain = Service(OneAtATime(service.storage), config=service.config)
    try:
        with service.write():
            assert not service._write_lock.locked()  # the group-commit writer queues callers
        with plain.write():
            assert plain._write_lock.locked()
        assert not plain._write_lock.locked()
    finally:
        service.close()
