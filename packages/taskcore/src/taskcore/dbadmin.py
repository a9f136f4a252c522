"""The journal's schema for operators: ``agent-task db migrate`` and ``agent-task db status``.

The journal is the PostgreSQL database ``$AGENT_TASK_DATABASE`` names (what ``--database``
sets), else the SQLite file in the data dir (:func:`taskcore.store.open_storage` decides).

>>> import tempfile, pathlib
>>> tmp = pathlib.Path(tempfile.mkdtemp()) / "data"
>>> from taskcore.store import open_storage
>>> open_storage(tmp, create=True, database="").close()
>>> report = migrate_journal(tmp, database="")
>>> report["backend"], report["applied"], report["schema"]["queue"] >= 1
('sqlite', [], True)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taskcore.store.storage import database_url, open_storage, postgres_storage

__all__ = ["journal_status", "migrate_journal"]


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
