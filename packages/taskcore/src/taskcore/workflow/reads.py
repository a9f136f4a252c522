"""Side-effect-free workflow reads straight from a data dir (CLI, Stop hooks, operators).

The seed's reads (status, recovery, requirements, next, instructions, reference) never
create a missing journal or a row. Through the service they read the service's open journal
inside a read transaction (the front door's audit event is the one write every dispatched
call makes, reads included). Called locally through :func:`open_reader`, the journal is
opened read-only with ``create=False``: a missing data dir or journal is ``NOT_FOUND`` and
stays missing, no schema is migrated and the journal mode is not changed (SQLite may create
its own ``-wal``/``-shm`` sidecars beside an existing WAL database).

>>> import tempfile, pathlib
>>> missing = pathlib.Path(tempfile.mkdtemp()) / "nothing-here"
>>> try:
...     open_reader(missing)
... except Exception as err:
...     print(err.code.value, str(missing) in err.message)
NOT_FOUND True
>>> missing.exists()
False
"""

from __future__ import annotations

from pathlib import Path

from taskcore.actors import Actor
from taskcore.clock import Clock
from taskcore.store.storage import Storage, open_storage
from taskcore.workflow.guard import ActorGuard
from taskcore.workflow.journal import Caller, WorkflowJournal

__all__ = ["local_reader", "open_reader"]


def open_reader(data_dir: Path | str, *, busy_timeout_ms: int = 10_000) -> Storage:
    """Open the journal read-only (see ``open_storage``); never create or migrate anything."""
    return open_storage(data_dir, create=False, readonly=True, busy_timeout_ms=busy_timeout_ms)


def local_reader(
    data_dir: Path | str,
    actor: Actor,
    *,
    repository_id: str,
    profile_id: str,
    clock: Clock | None = None,
) -> tuple[WorkflowJournal, Caller]:
    """Return a read-only journal on ``data_dir`` and a caller for ``actor`` on that route.

    Only the read methods (status, recovery, requirements, next, instructions, reference)
    work on it; a mutation fails because the storage is read-only. Close
    ``journal.storage`` when done.
    """
    storage = open_reader(data_dir)
    journal = WorkflowJournal(storage, clock=clock)
    caller = Caller(
        actor=actor, repository_id=repository_id, profile_id=profile_id, guard=ActorGuard(actor)
    )
    return journal, caller
