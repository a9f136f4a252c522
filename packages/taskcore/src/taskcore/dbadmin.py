"""The journal for operators: ``agent-task db migrate``, ``status``, ``backup``, ``restore``, ``verify``.

The journal is the PostgreSQL database ``$AGENT_TASK_DATABASE`` names (what ``--database``
sets), else the SQLite file in the data dir (:func:`taskcore.store.open_storage` decides).

>>> import tempfile, pathlib
>>> tmp = pathlib.Path(tempfile.mkdtemp()) / "data"
>>> from taskcore.store import open_storage
>>> open_storage(tmp, create=True, database="").close()
>>> report = migrate_journal(tmp, database="")
>>> report["backend"], report["applied"], report["schema"]["queue"] >= 1
('sqlite', [], True)

A backup of the SQLite journal is one file, taken while the service runs, checked before it
is kept; ``verify`` checks a data dir, a backup file or a PostgreSQL database:

>>> copy = tmp.parent / "journal-backup.sqlite"
>>> backup_journal(tmp, copy, database="")["counts"]["queue_task"]
0
>>> verify_journal(tmp, file=copy, database="")["ok"]
True
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from taskcore.errors import ErrorCode, TaskError
from taskcore.store.datadir import JOURNAL_NAME, prior_state
from taskcore.store.journal_file import (
    JournalFacts,
    copy_sqlite,
    hold_exclusive,
    inspect_postgres,
    inspect_sqlite,
    release,
)
from taskcore.store.storage import (
    database_url,
    journal_components,
    open_storage,
    postgres_storage,
)

__all__ = [
    "backup_journal",
    "journal_status",
    "migrate_journal",
    "pg_dump_command",
    "restore_journal",
    "verify_journal",
]


def migrate_journal(data_dir: Path | str, *, database: str | None = None) -> dict[str, Any]:
    """Bring the journal to this release's schema; return backend, what ran, the versions.

    On PostgreSQL the migrations run under the migration advisory lock (several hosts may run
    this at once; each migration applies once). A SQLite journal migrates when opened; a
    missing one is ``NOT_FOUND`` and nothing is created.
    """
    url = database_url(database)
    if url is not None:
        pg = postgres_storage()(url)
        try:
            return {"backend": pg.backend, "applied": list(pg.applied), "schema": pg.schema()}
        finally:
            pg.close()
    storage = open_storage(data_dir, database="")
    try:
        return {"backend": storage.backend, "applied": [], "schema": storage.schema()}
    finally:
        storage.close()


def journal_status(data_dir: Path | str, *, database: str | None = None) -> dict[str, Any]:
    """Return the backend and recorded versions without writing (a schema behind is refused)."""
    storage = open_storage(data_dir, readonly=True, database=database)
    try:
        return {"backend": storage.backend, "schema": storage.schema()}
    finally:
        storage.close()


# -- backup, restore, verify ------------------------------------------------------------------


def _without_password(url: str) -> str:
    """``url`` with no password (libpq takes it from ``~/.pgpass`` or ``PGPASSWORD``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", "@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def pg_dump_command(url: str, target: Path | str) -> str:
    """The ``pg_dump`` line that backs up the PostgreSQL journal ``url`` into ``target``.

    The custom format (``pg_restore`` reads it); no owner or privileges, so it restores into
    a database of any name and owner. The password is left out of the line.

    >>> pg_dump_command("postgresql://app:pw@db:5432/agent_task", "/backups/at.dump")
    'pg_dump --format=custom --no-owner --no-privileges --file /backups/at.dump postgresql://app@db:5432/agent_task'
    """
    postgres_storage()  # psycopg is the postgres extra's: without it, the typed error
    from taskcore.store.postgres.storage import split_url

    conninfo, _ = split_url(url)
    return shlex.join(
        [
            "pg_dump",
            "--format=custom",
            "--no-owner",
            "--no-privileges",
            "--file",
            str(target),
            _without_password(conninfo),
        ]
    )


def _facts_report(facts: JournalFacts) -> dict[str, Any]:
    return {
        "schema": dict(sorted(facts.versions.items())),
        "counts": dict(sorted(facts.counts.items())),
        "audit": {
            "events": facts.audit.events,
            "first_seq": facts.audit.first_seq,
            "last_seq": facts.audit.last_seq,
        },
    }


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sqlite_journal(data_dir: Path) -> Path:
    journal = data_dir / JOURNAL_NAME
    if journal.is_file() and journal.stat().st_size > 0:
        return journal
    found = prior_state(data_dir)
    raise TaskError(
        ErrorCode.JOURNAL_MISSING if found else ErrorCode.NOT_FOUND,
        f"there is no journal in {str(data_dir)[:512]}"
        + (f" (it holds {', '.join(found)})" if found else "")
        + "; give the service's data dir (--data-dir or AGENT_TASK_DATA_DIR)",
    )


def _newer(versions: dict[str, int]) -> list[str]:
    latest = {c.name: c.latest for c in journal_components()}
    return [f"{n} {v} > {latest[n]}" for n, v in sorted(versions.items()) if v > latest.get(n, v)]


def backup_journal(
    data_dir: Path | str, target: Path | str, *, database: str | None = None
) -> dict[str, Any]:
    """Copy the SQLite journal of ``data_dir`` into the new file ``target``, checked.

    Safe while the service runs: the copy is the journal as of one commit (SQLite's online
    backup API), written beside ``target`` under a temporary name, fsynced, opened and
    checked (``integrity_check``, schema versions, counts), and only then given its name
    (never over an existing file: ``ALREADY_EXISTS``). The answer is what the copy holds.

    On PostgreSQL (``database`` or ``$AGENT_TASK_DATABASE``) nothing is copied: the answer is
    a ``BAD_INPUT`` naming the exact ``pg_dump`` line to run (the database's own tool makes
    the consistent copy; ``agent-task db verify --database`` checks the restored one).
    """
    target = Path(target)
    url = database_url(database)
    if url is not None:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "the journal is a PostgreSQL database: back it up with PostgreSQL's own tool; run "
            f"{pg_dump_command(url, target)} (with the password in ~/.pgpass or PGPASSWORD), "
            "and after a restore check it with 'agent-task db verify --database URL'",
        )
    journal = _sqlite_journal(Path(data_dir))
    if os.path.lexists(target):
        raise TaskError(
            ErrorCode.ALREADY_EXISTS,
            f"{str(target)[:512]} exists; a backup never replaces a file: name a new one",
        )
    if not target.parent.is_dir():
        raise TaskError(
            ErrorCode.INVALID_PATH,
            f"the directory {str(target.parent)[:512]} does not exist; create it first",
        )
    partial = target.parent / f".{target.name}.partial-{os.getpid()}"
    started = time.time()
    try:
        copy_sqlite(journal, partial)
        os.chmod(partial, 0o600)  # the journal's own mode: it holds token hashes, receipts
        facts = inspect_sqlite(partial, full=True)
        if facts.integrity != ["ok"]:
            raise TaskError(
                ErrorCode.INTEGRITY_FAILURE,
                "the copy failed its integrity check ("
                + "; ".join(facts.integrity[:3])
                + "); nothing was kept: check the journal with 'agent-task db verify'",
            )
        try:
            os.link(partial, target)  # never over a file that appeared meanwhile
        except FileExistsError:
            raise TaskError(
                ErrorCode.ALREADY_EXISTS,
                f"{str(target)[:512]} appeared while the backup ran; nothing was replaced",
            ) from None
        except OSError as exc:
            raise TaskError(
                ErrorCode.STORAGE_UNAVAILABLE,
                f"cannot name the backup {str(target)[:512]} ({exc.strerror})",
            ) from None
        _fsync_dir(target.parent)
    finally:
        if os.path.lexists(partial):
            os.unlink(partial)
    return {
        "backend": "sqlite",
        "file": str(target),
        "bytes": target.stat().st_size,
        "seconds": round(time.time() - started, 3),
        "integrity": "ok",
        **_facts_report(facts),
    }


def restore_journal(
    data_dir: Path | str, source: Path | str, *, database: str | None = None
) -> dict[str, Any]:
    """Put the backup file ``source`` in place as the SQLite journal of ``data_dir``.

    Refused (``JOURNAL_IN_USE``) while any process holds the journal (a running service, a
    command on it): stop the service first. ``source`` is checked before anything moves
    (``integrity_check``; a journal of a newer release is ``STORAGE_UNAVAILABLE``; an older
    one migrates when the service next starts). The journal it replaces is kept beside it,
    renamed ``journal.sqlite.replaced-<UTC time>`` (with its ``-wal`` file, if any, renamed
    to match, so SQLite still opens it). The restored file is copied under a temporary
    name, fsynced and then renamed into place. The data directory is created if missing
    (a restore onto a new machine); its other files (the authority key, the first admin
    token) are left alone.

    On PostgreSQL nothing is done: ``BAD_INPUT`` names the ``pg_restore`` steps.
    """
    source = Path(source)
    directory = Path(data_dir)
    url = database_url(database)
    if url is not None:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "the journal is a PostgreSQL database: restore a pg_dump file with PostgreSQL's "
            "own tool into a new, empty database (createdb NEW; pg_restore --no-owner "
            f"--no-privileges --dbname NEW {shlex.quote(str(source))}), check it with "
            "'agent-task db verify --database URL', then point the service at it",
        )
    if not source.is_file():
        raise TaskError(ErrorCode.NOT_FOUND, f"there is no backup file {str(source)[:512]}")
    facts = inspect_sqlite(source, full=True)
    if facts.integrity != ["ok"]:
        raise TaskError(
            ErrorCode.INTEGRITY_FAILURE,
            f"the backup {str(source)[:512]} failed its integrity check ("
            + "; ".join(facts.integrity[:3])
            + "); nothing was changed: restore another backup",
        )
    newer = _newer(facts.versions)
    if newer:
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE,
            f"the backup was written by a newer release ({', '.join(newer)}); restore it with "
            "that release; nothing was changed",
        )
    if directory.is_symlink():
        raise TaskError(ErrorCode.INVALID_PATH, "the data directory must not be a symlink")
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    hold = hold_exclusive(directory)
    try:
        return _restore_held(directory, source, facts)
    finally:
        release(hold)


def _restore_held(directory: Path, source: Path, facts: JournalFacts) -> dict[str, Any]:
    journal = directory / JOURNAL_NAME
    partial = directory / f".{JOURNAL_NAME}.restoring-{os.getpid()}"
    copy_sqlite(source, partial)
    os.chmod(partial, 0o600)
    replaced: list[str] = []
    try:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = directory / f"{JOURNAL_NAME}.replaced-{stamp}"
        for suffix in ("", "-wal", "-shm", "-journal"):
            old = directory / (JOURNAL_NAME + suffix)
            if os.path.lexists(old):
                if suffix == "-shm":
                    os.unlink(old)  # an index of the WAL, rebuilt from it: nothing to keep
                    continue
                os.rename(old, directory / (aside.name + suffix))
                replaced.append(str(directory / (aside.name + suffix)))
        os.rename(partial, journal)
        _fsync_dir(directory)
    except OSError as exc:
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE,
            f"the restore could not put the journal in place ({exc.strerror}); the journal "
            f"it replaced is kept as {', '.join(replaced) or 'it was'}",
        ) from None
    finally:
        if os.path.lexists(partial):
            os.unlink(partial)
    restored = inspect_sqlite(journal, full=False)
    if restored.counts != facts.counts:
        raise TaskError(
            ErrorCode.INTEGRITY_FAILURE,
            "the restored journal does not hold what the backup holds; the replaced journal "
            f"is kept as {', '.join(replaced)}",
        )
    return {
        "backend": "sqlite",
        "journal": str(journal),
        "restored_from": str(source),
        "replaced": replaced,
        **_facts_report(restored),
    }


def _check(name: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"check": name, "ok": ok, "detail": detail}


def _schema_check(versions: dict[str, int], components: dict[str, int]) -> dict[str, Any]:
    missing = sorted(set(components) - set(versions))
    newer = [
        f"{n} {versions[n]} > {v}" for n, v in sorted(components.items()) if versions.get(n, 0) > v
    ]
    behind = [
        f"{n} {versions[n]} < {v}"
        for n, v in sorted(components.items())
        if 0 < versions.get(n, v) < v
    ]
    if newer:
        return _check("schema", False, f"newer than this release: {', '.join(newer)}")
    if missing:
        return _check("schema", False, f"no recorded version for {', '.join(missing)}")
    if behind:
        return _check("schema", True, f"behind (migrated on the next start): {', '.join(behind)}")
    return _check("schema", True, "every component at this release's version")


def _audit_checks(facts: JournalFacts, backend: str) -> list[dict[str, Any]]:
    audit = facts.audit
    checks = [
        _check(
            "audit_rows",
            audit.malformed == 0,
            f"{audit.events} events"
            + (f", {audit.malformed} malformed" if audit.malformed else ", each well formed"),
        )
    ]
    if backend == "sqlite" and audit.first_seq is not None and audit.last_seq is not None:
        span = audit.last_seq - audit.first_seq + 1
        # Sequence numbers are the table's rowids: a rolled-back call leaves no gap, and the
        # retention sweep deletes only from the oldest end, so the events are one run.
        checks.append(
            _check(
                "audit_sequence",
                span == audit.events,
                f"seq {audit.first_seq}..{audit.last_seq}"
                + ("" if span == audit.events else f": {span - audit.events} missing inside"),
            )
        )
    return checks


def verify_journal(
    data_dir: Path | str | None = None,
    *,
    file: Path | str | None = None,
    database: str | None = None,
) -> dict[str, Any]:
    """Check a journal without changing it; return the report (``ok`` and each check).

    The journal is ``file`` (a backup), else the PostgreSQL ``database`` (or
    ``$AGENT_TASK_DATABASE``), else the SQLite journal of ``data_dir``. Checks: SQLite's
    ``integrity_check`` and ``foreign_key_check``; the recorded schema version of every
    component (none newer than this release, none missing); the audit events (each row well
    formed; on SQLite one unbroken run of sequence numbers, since only the retention sweep
    deletes them and only from the oldest); on PostgreSQL each sequence at or above the
    largest value of the column it feeds (a restore that did not carry the sequences would
    hand out used numbers). Nothing is migrated or written.
    """
    url = None if file is not None else database_url(database)
    if file is not None:
        if not Path(file).is_file():
            raise TaskError(ErrorCode.NOT_FOUND, f"there is no file {str(file)[:512]}")
        target, backend = str(file), "sqlite"
    elif url is not None:
        postgres_storage()  # psycopg is the postgres extra's: without it, the typed error
        from taskcore.store.postgres.storage import redact

        target, backend = redact(url), "postgresql"
    else:
        if data_dir is None:
            raise TaskError(ErrorCode.BAD_INPUT, "give a data dir, a --file or a --database")
        target, backend = str(_sqlite_journal(Path(data_dir))), "sqlite"
    try:
        facts = inspect_postgres(url) if url is not None else inspect_sqlite(Path(target))
    except TaskError as err:
        if err.code is not ErrorCode.INTEGRITY_FAILURE:
            raise
        return {  # too damaged (or not a journal) to read on: that is the finding
            "ok": False,
            "backend": backend,
            "journal": target,
            "checks": [_check("integrity", False, err.message)],
            "schema": {},
            "counts": {},
            "audit": {"events": 0, "first_seq": None, "last_seq": None},
        }
    components = {c.name: c.latest for c in journal_components()}
    checks = [_schema_check(facts.versions, components)]
    if backend == "sqlite":
        checks.append(
            _check(
                "integrity",
                facts.integrity == ["ok"],
                "; ".join(facts.integrity[:5]),
            )
        )
        checks.append(
            _check(
                "foreign_keys",
                facts.foreign_keys == 0,
                "every reference has its row"
                if facts.foreign_keys == 0
                else f"{facts.foreign_keys} rows refer to a missing row",
            )
        )
    checks += _audit_checks(facts, backend)
    if backend == "postgresql":
        behind = [
            f"{k} at {last} < {top}" for k, (last, top) in facts.sequences.items() if last < top
        ]
        checks.append(
            _check(
                "sequences",
                not behind,
                f"{len(facts.sequences)} sequences at or above their columns"
                if not behind
                else "behind the rows they number: " + ", ".join(behind),
            )
        )
    return {
        "ok": all(c["ok"] for c in checks),
        "backend": backend,
        "journal": target,
        "checks": checks,
        **_facts_report(facts),
    }
