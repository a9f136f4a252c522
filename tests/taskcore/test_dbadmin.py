"""taskcore.dbadmin: migrate and status of the journal the environment names, both backends."""

import psycopg
import pytest
from taskcore.dbadmin import journal_status, migrate_journal
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend


def test_migrate_and_status_agree(tmp_path, backend):
    open_storage(tmp_path / "d", create=True).close()
    migrated = migrate_journal(tmp_path / "d")
    assert migrated["backend"] == backend
    assert migrated["applied"] == []
    assert journal_status(tmp_path / "d") == {
        "backend": backend,
        "schema": migrated["schema"],
    }


@pytest.mark.backend_only("sqlite", reason="a missing SQLite journal is a missing file")
def test_a_missing_sqlite_journal_is_not_created(tmp_path, backend):
    with pytest.raises(TaskError) as info:
        migrate_journal(tmp_path / "nothing")
    assert info.value.code is ErrorCode.NOT_FOUND
    assert not (tmp_path / "nothing").exists()


# -- backup, restore, verify ------------------------------------------------------------------

import os  # noqa: E402
import stat  # noqa: E402

import apsw  # noqa: E402
from taskcore.dbadmin import (  # noqa: E402
    backup_journal,
    pg_dump_command,
    restore_journal,
    verify_journal,
)
from taskcore.store.journal_file import hold_exclusive, release  # noqa: E402


def _fill(data, n=3):
    """A journal with ``n`` tokens (each an audited operator act)."""
    from taskcore.operator_ops import OperatorDesk

    with OperatorDesk(data, create=True) as desk:
        for i in range(n):
            desk.call(
                "operator.token_create", {"workspace": "w1", "tier": "agent", "name": f"t{i}"}
            )


def _rows(journal, table):
    conn = apsw.Connection(str(journal), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.backend_only("sqlite", reason="the SQLite journal is the file backed up")
def test_a_backup_is_a_checked_copy_that_names_what_it_holds(tmp_path, backend):
    data = tmp_path / "d"
    _fill(data)
    report = backup_journal(data, tmp_path / "b.sqlite")
    assert report["backend"] == "sqlite"
    assert report["integrity"] == "ok"
    assert report["counts"]["token"] == 3
    assert report["audit"]["events"] == report["counts"]["audit_event"] >= 3
    assert report["bytes"] == (tmp_path / "b.sqlite").stat().st_size
    assert stat.S_IMODE((tmp_path / "b.sqlite").stat().st_mode) == 0o600
    assert _rows(tmp_path / "b.sqlite", "token") == 3
    assert not (tmp_path / "b.sqlite-wal").exists()  # one self-contained file
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


@pytest.mark.backend_only("sqlite", reason="the SQLite journal is the file backed up")
def test_a_backup_never_replaces_a_file_nor_invents_a_journal(tmp_path, backend):
    data = tmp_path / "d"
    _fill(data, 1)
    (tmp_path / "old").write_text("keep me")
    with pytest.raises(TaskError) as info:
        backup_journal(data, tmp_path / "old")
    assert info.value.code is ErrorCode.ALREADY_EXISTS
    assert (tmp_path / "old").read_text() == "keep me"
    with pytest.raises(TaskError) as info:
        backup_journal(data, tmp_path / "missing" / "b.sqlite")
    assert info.value.code is ErrorCode.INVALID_PATH
    with pytest.raises(TaskError) as info:
        backup_journal(tmp_path / "none", tmp_path / "c.sqlite")
    assert info.value.code is ErrorCode.NOT_FOUND
    assert not (tmp_path / "none").exists()
    assert not (tmp_path / "c.sqlite").exists()


@pytest.mark.backend_only("postgresql", reason="PostgreSQL's backup is pg_dump")
def test_a_postgresql_backup_names_the_pg_dump_line(tmp_path, backend):
    _fill(tmp_path / "d", 1)
    with pytest.raises(TaskError) as info:
        backup_journal(tmp_path / "d", tmp_path / "b.dump")
    assert info.value.code is ErrorCode.BAD_INPUT
    line = pg_dump_command(os.environ["AGENT_TASK_DATABASE"], tmp_path / "b.dump")
    assert line in str(info.value)
    assert not (tmp_path / "b.dump").exists()
    assert pg_dump_command("postgresql://u:secret@h/db", "f") == (
        "pg_dump --format=custom --no-owner --no-privileges --file f postgresql://u@h/db"
    )


@pytest.mark.backend_only("sqlite", reason="restore puts a SQLite file in place")
def test_restore_is_refused_while_the_journal_is_held_then_keeps_the_replaced_one(
    tmp_path, backend
):
    data = tmp_path / "d"
    _fill(data, 2)
    backup_journal(data, tmp_path / "b.sqlite")
    _fill(data, 3)  # five tokens now; the backup has two
    storage = open_storage(data)
    try:
        with pytest.raises(TaskError) as info:
            restore_journal(data, tmp_path / "b.sqlite")
        assert info.value.code is ErrorCode.JOURNAL_IN_USE
        assert "stop it" in str(info.value)
    finally:
        storage.close()
    assert _rows(data / "journal.sqlite", "token") == 5  # nothing moved
    report = restore_journal(data, tmp_path / "b.sqlite")
    assert report["counts"]["token"] == 2
    assert _rows(data / "journal.sqlite", "token") == 2
    [kept] = [p for p in report["replaced"] if not p.endswith("-wal")]
    assert _rows(kept, "token") == 5  # the replaced journal, whole (its WAL beside it)
    storage = open_storage(data)  # the service opens the restored journal
    try:
        with storage.read() as tx:
            assert len(tx.tokens.list()) == 2
    finally:
        storage.close()


@pytest.mark.backend_only("sqlite", reason="the data-dir hold is the SQLite journal's")
def test_no_journal_opens_while_a_restore_holds_it(tmp_path, backend):
    data = tmp_path / "d"
    _fill(data, 1)
    hold = hold_exclusive(data)
    try:
        for readonly in (False, True):
            with pytest.raises(TaskError) as info:
                open_storage(data, readonly=readonly)
            assert info.value.code is ErrorCode.JOURNAL_IN_USE
    finally:
        release(hold)
    open_storage(data).close()


@pytest.mark.backend_only("sqlite", reason="restore checks a SQLite file")
def test_restore_refuses_a_damaged_or_newer_backup_and_changes_nothing(tmp_path, backend):
    data = tmp_path / "d"
    _fill(data, 1)
    before = (data / "journal.sqlite").read_bytes()
    (tmp_path / "junk").write_bytes(b"not a database" * 512)
    with pytest.raises(TaskError) as info:
        restore_journal(data, tmp_path / "junk")
    assert info.value.code is ErrorCode.INTEGRITY_FAILURE
    backup_journal(data, tmp_path / "newer.sqlite")
    conn = apsw.Connection(str(tmp_path / "newer.sqlite"))
    conn.execute("UPDATE schema_versions SET version = 99 WHERE component = 'queue'")
    conn.close()
    with pytest.raises(TaskError) as info:
        restore_journal(data, tmp_path / "newer.sqlite")
    assert info.value.code is ErrorCode.STORAGE_UNAVAILABLE
    assert "newer release" in str(info.value)
    with pytest.raises(TaskError) as info:
        restore_journal(data, tmp_path / "absent.sqlite")
    assert info.value.code is ErrorCode.NOT_FOUND
    assert (data / "journal.sqlite").read_bytes() == before
    assert not [p for p in data.iterdir() if "replaced" in p.name or "restoring" in p.name]


@pytest.mark.backend_only("sqlite", reason="restore onto a new machine")
def test_restore_into_a_new_data_dir(tmp_path, backend):
    _fill(tmp_path / "d", 2)
    backup_journal(tmp_path / "d", tmp_path / "b.sqlite")
    report = restore_journal(tmp_path / "new", tmp_path / "b.sqlite")
    assert report["replaced"] == []
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700
    assert verify_journal(tmp_path / "new")["ok"] is True


@pytest.mark.backend_only("postgresql", reason="PostgreSQL's restore is pg_restore")
def test_a_postgresql_restore_names_pg_restore(tmp_path, backend):
    with pytest.raises(TaskError) as info:
        restore_journal(tmp_path / "d", tmp_path / "b.dump")
    assert info.value.code is ErrorCode.BAD_INPUT
    assert "pg_restore --no-owner" in str(info.value)


def test_verify_passes_a_sound_journal_and_names_each_check(tmp_path, backend):
    _fill(tmp_path / "d", 2)
    report = verify_journal(tmp_path / "d")
    assert report["ok"] is True, report
    assert report["backend"] == backend
    names = {c["check"] for c in report["checks"]}
    expected = {"schema", "audit_rows"} | (
        {"integrity", "foreign_keys", "audit_sequence"} if backend == "sqlite" else {"sequences"}
    )
    assert names == expected
    assert report["counts"]["token"] == 2


@pytest.mark.backend_only("sqlite", reason="a hole in SQLite's rowid sequence")
def test_verify_finds_audit_events_missing_from_the_middle(tmp_path, backend):
    _fill(tmp_path / "d", 5)
    backup_journal(tmp_path / "d", tmp_path / "b.sqlite")
    conn = apsw.Connection(str(tmp_path / "b.sqlite"))
    conn.execute("DELETE FROM audit_event WHERE seq = 1")  # the oldest: what retention does
    conn.close()
    assert verify_journal(file=tmp_path / "b.sqlite")["ok"] is True
    conn = apsw.Connection(str(tmp_path / "b.sqlite"))
    conn.execute("DELETE FROM audit_event WHERE seq = 3")  # one from the middle
    conn.close()
    report = verify_journal(file=tmp_path / "b.sqlite")
    assert report["ok"] is False
    [bad] = [c for c in report["checks"] if not c["ok"]]
    assert bad["check"] == "audit_sequence"
    assert "1 missing inside" in bad["detail"]


@pytest.mark.backend_only("sqlite", reason="SQLite's own integrity check")
def test_verify_finds_a_damaged_file_and_a_newer_schema(tmp_path, backend):
    _fill(tmp_path / "d", 3)
    backup_journal(tmp_path / "d", tmp_path / "b.sqlite")
    conn = apsw.Connection(str(tmp_path / "b.sqlite"))
    conn.execute("UPDATE schema_versions SET version = 99 WHERE component = 'tokens'")
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'token'").fetchone()[0]
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    report = verify_journal(file=tmp_path / "b.sqlite")
    [bad] = [c for c in report["checks"] if not c["ok"]]
    assert bad["check"] == "schema"
    assert "tokens 99 > 1" in bad["detail"]
    with open(tmp_path / "b.sqlite", "r+b") as f:  # scribble over the token table's page
        f.seek((root - 1) * page + 8)
        f.write(b"\xff" * 64)
    report = verify_journal(file=tmp_path / "b.sqlite")
    assert report["ok"] is False
    assert not next(c for c in report["checks"] if c["check"] == "integrity")["ok"]
    (tmp_path / "junk").write_bytes(b"not a database" * 512)  # not even SQLite
    report = verify_journal(file=tmp_path / "junk")
    assert report["ok"] is False
    assert report["checks"][0]["check"] == "integrity"


@pytest.mark.backend_only("postgresql", reason="PostgreSQL sequences")
def test_verify_finds_a_sequence_behind_its_rows(tmp_path, backend):
    _fill(tmp_path / "d", 3)
    url = os.environ["AGENT_TASK_DATABASE"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT setval('audit_event_seq_seq', 1)")
    report = verify_journal(tmp_path / "d")
    assert report["ok"] is False
    [bad] = [c for c in report["checks"] if not c["ok"]]
    assert bad["check"] == "sequences"
    assert "audit_event.seq" in bad["detail"]
