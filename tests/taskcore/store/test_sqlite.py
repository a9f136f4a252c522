import multiprocessing
import os
import stat

import apsw
import pytest
import taskcore.store.sqlite as sqlite_module
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.sqlite import Component, Migration, SqliteDatabase, storage_error

pytestmark = pytest.mark.backend_only(
    "sqlite",
    reason="SqliteDatabase itself (pragmas, WAL, the file's integrity, a full file system)",
)

NOTES_V1 = Component("notes", (Migration(1, "CREATE TABLE note(id INTEGER PRIMARY KEY, b TEXT)"),))
NOTES_V2 = Component(
    "notes", (*NOTES_V1.migrations, Migration(2, "ALTER TABLE note ADD COLUMN c TEXT"))
)


def test_missing_file_is_not_created_without_create(tmp_path):
    with pytest.raises(TaskError) as info:
        SqliteDatabase(tmp_path / "x.sqlite", (NOTES_V1,))
    assert info.value.code is ErrorCode.NOT_FOUND
    assert not (tmp_path / "x.sqlite").exists()


def test_readonly_open_never_creates(tmp_path):
    with pytest.raises(TaskError):
        SqliteDatabase(tmp_path / "x.sqlite", (NOTES_V1,), create=True, readonly=True)
    assert list(tmp_path.iterdir()) == []


def test_wal_and_full_sync_and_private_mode(tmp_path):
    db = SqliteDatabase(tmp_path / "x.sqlite", (NOTES_V1,), create=True)
    with db.read() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    assert stat.S_IMODE(os.stat(tmp_path / "x.sqlite").st_mode) == 0o600
    db.close()


def test_forward_migration_keeps_data(tmp_path):
    path = tmp_path / "x.sqlite"
    db = SqliteDatabase(path, (NOTES_V1,), create=True)
    with db.write() as conn:
        conn.execute("INSERT INTO note(b) VALUES ('kept')")
    db.close()
    db2 = SqliteDatabase(path, (NOTES_V2,))
    with db2.read() as conn:
        assert conn.execute("SELECT b, c FROM note").fetchall() == [("kept", None)]
        assert conn.execute("SELECT version FROM schema_versions").fetchall() == [(2,)]
    db2.close()


def test_newer_schema_is_refused_not_downgraded(tmp_path):
    path = tmp_path / "x.sqlite"
    SqliteDatabase(path, (NOTES_V2,), create=True).close()
    with pytest.raises(TaskError) as info:
        SqliteDatabase(path, (NOTES_V1,))
    assert info.value.code is ErrorCode.STORAGE_UNAVAILABLE


def test_readonly_refuses_unmigrated_schema(tmp_path):
    path = tmp_path / "x.sqlite"
    SqliteDatabase(path, (NOTES_V1,), create=True).close()
    with pytest.raises(TaskError):
        SqliteDatabase(path, (NOTES_V2,), readonly=True)


def test_exception_rolls_back(tmp_path):
    db = SqliteDatabase(tmp_path / "x.sqlite", (NOTES_V1,), create=True)

    def insert_then_fail() -> None:
        with db.write() as conn:
            conn.execute("INSERT INTO note(b) VALUES ('gone')")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        insert_then_fail()
    with db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM note").fetchone()[0] == 0
    db.close()


def test_readonly_database_refuses_writes(tmp_path):
    path = tmp_path / "x.sqlite"
    SqliteDatabase(path, (NOTES_V1,), create=True).close()
    ro = SqliteDatabase(path, (NOTES_V1,), readonly=True)
    with pytest.raises(TaskError):
        ro.write().__enter__()
    ro.close()


def test_damaged_file_fails_integrity_check(tmp_path):
    path = tmp_path / "bad.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    with pytest.raises(TaskError) as info:
        SqliteDatabase(path, (NOTES_V1,), create=True)
    assert info.value.code in (ErrorCode.INTEGRITY_FAILURE, ErrorCode.STORAGE_UNAVAILABLE)


def _writer(path: str, n: int) -> None:
    db = SqliteDatabase(path, (NOTES_V1,), create=True, busy_timeout_ms=30_000)
    for i in range(n):
        with db.write() as conn:
            count = conn.execute("SELECT COUNT(*) FROM note").fetchone()[0]
            conn.execute("INSERT INTO note(id, b) VALUES (?, ?)", (count + 1, f"{os.getpid()}:{i}"))
    db.close()


def test_processes_serialize_writers(tmp_path):
    path = str(tmp_path / "x.sqlite")
    SqliteDatabase(path, (NOTES_V1,), create=True).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, 50)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    db = SqliteDatabase(path, (NOTES_V1,))
    with db.read() as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM note ORDER BY id")]
    # A read-then-insert in each transaction only works if writers never interleave.
    assert ids == list(range(1, 201))
    db.close()


def test_integer_above_signed_64_bit_is_out_of_bounds_and_rolls_back(tmp_path):
    db = SqliteDatabase(tmp_path / "x.sqlite", (NOTES_V1,), create=True)

    def insert_then_overflow() -> None:
        with db.write() as conn:
            conn.execute("INSERT INTO note(b) VALUES ('kept?')")
            conn.execute("SELECT * FROM note WHERE id = ?", (2**64 - 1,))

    with pytest.raises(TaskError) as info:
        insert_then_overflow()
    assert info.value.code is ErrorCode.OUT_OF_BOUNDS
    with db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM note").fetchone()[0] == 0
    db.close()


# -- a full file system (issue 10) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (apsw.FullError("database or disk is full"), ErrorCode.STORAGE_FULL),
        (apsw.BusyError("database is locked"), ErrorCode.BUSY),
        (apsw.IOError("disk I/O error"), ErrorCode.STORAGE_UNAVAILABLE),
        (apsw.CantOpenError("unable to open"), ErrorCode.STORAGE_UNAVAILABLE),
        (apsw.NotADBError("file is not a database"), ErrorCode.INTEGRITY_FAILURE),
        (apsw.CorruptError("malformed"), ErrorCode.INTEGRITY_FAILURE),
    ],
)
def test_storage_errors_name_their_real_cause(tmp_path, exc, code):
    err = storage_error(exc, tmp_path / "x.sqlite")
    assert err is not None
    assert err.code is code
    if code is ErrorCode.STORAGE_FULL:
        assert err.retry_after is not None


def test_an_io_error_on_a_nearly_full_file_system_is_storage_full(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_module, "free_bytes", lambda path: 4096)
    err = storage_error(apsw.IOError("disk I/O error"), tmp_path / "x.sqlite")
    assert err is not None
    assert err.code is ErrorCode.STORAGE_FULL


def test_a_misuse_is_not_a_storage_error(tmp_path):
    assert storage_error(apsw.ConstraintError("UNIQUE"), tmp_path / "x.sqlite") is None


def test_a_full_database_is_storage_full_and_rolls_back(tmp_path):
    db = SqliteDatabase(tmp_path / "x.sqlite", (NOTES_V1,), create=True)
    with db.write() as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")

    def grow() -> None:
        with db.write() as conn:
            conn.execute("INSERT INTO note(b) VALUES ('kept?')")
            conn.execute("INSERT INTO note(b) VALUES (?)", ("x" * 100_000,))

    with pytest.raises(TaskError) as info:
        grow()
    assert info.value.code is ErrorCode.STORAGE_FULL
    with db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM note").fetchone()[0] == 0
    with db.write() as conn:
        conn.execute(f"PRAGMA max_page_count = {pages * 100}")
    grow()
    db.close()


def _wal_size(path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


@pytest.mark.parametrize(("free", "grows"), [(1 << 40, True), (1 << 20, False)])
def test_low_space_checkpoints_every_commit_so_the_wal_stays_small(
    tmp_path, monkeypatch, free, grows
):
    monkeypatch.setattr(sqlite_module, "_free_in", lambda directory: free)
    path = tmp_path / "x.sqlite"
    db = SqliteDatabase(path, (NOTES_V1,), create=True)
    for i in range(300):
        with db.write() as conn:
            conn.execute("INSERT INTO note(b) VALUES (?)", (f"{i}" * 500,))
    with db.read() as conn:
        size = conn.execute("PRAGMA journal_size_limit").fetchone()[0]
    assert size > 0
    # 300 commits of about a page each: ~1.2 MiB of WAL unless it is checkpointed as it goes.
    assert (_wal_size(path) > 512 * 1024) is grows
    db.close()


def test_close_waits_for_a_connection_another_thread_is_still_using(tmp_path):
    """A call that outlived its caller (a tool call past its limit) may still be inside a
    statement when the service closes: close waits for it to leave, then closes."""
    import threading

    db = SqliteDatabase(tmp_path / "x.sqlite", (NOTES_V1,), create=True)
    conn = db.open_connection()
    entered, release = threading.Event(), threading.Event()

    def block() -> int:
        entered.set()
        release.wait(10)
        return 1

    conn.create_scalar_function("block", block, 0)
    rows: list = []
    user = threading.Thread(target=lambda: rows.extend(conn.execute("SELECT block()")))
    user.start()
    assert entered.wait(10)
    errors: list[BaseException] = []

    def close() -> None:
        try:
            db.close()
        except BaseException as exc:
            errors.append(exc)

    closer = threading.Thread(target=close)
    closer.start()
    closer.join(0.1)
    assert closer.is_alive()  # waiting for the statement, not failing at once
    release.set()
    closer.join(10)
    user.join(10)
    assert not closer.is_alive()
    assert errors == []
    assert rows == [(1,)]
    with pytest.raises(apsw.ConnectionClosedError):
        conn.execute("SELECT 1")


def test_close_gives_up_past_the_busy_timeout(tmp_path):
    import threading

    db = SqliteDatabase(tmp_path / "x.sqlite", (NOTES_V1,), create=True, busy_timeout_ms=50)
    conn = db.open_connection()
    entered, release = threading.Event(), threading.Event()

    def block() -> int:
        entered.set()
        release.wait(10)
        return 1

    conn.create_scalar_function("block", block, 0)
    user = threading.Thread(target=lambda: conn.execute("SELECT block()").fetchall())
    user.start()
    assert entered.wait(10)
    try:
        with pytest.raises(apsw.ThreadingViolationError):
            db.close()
    finally:
        release.set()
        user.join(10)
