"""Whether a data directory may get a new, empty journal.

A journal is the service's memory: tasks, leases, tokens, receipts. If ``journal.sqlite`` is
deleted or truncated in a data directory that was used, creating a fresh one would silently
start an empty service over the remains of the old one (the remaining admin token, a WAL with
the last transactions, the collector's retained transfers). So a new journal is created only
where nothing says a service ran before:

==============================  ================================================================
artefact                        why it shows an earlier service
==============================  ================================================================
``journal.sqlite`` of 0 bytes   the journal was truncated (SQLite would treat it as empty)
``journal.sqlite-wal``          the write-ahead log of a journal that is no longer there
``journal.sqlite-shm``          its shared-memory index
``journal.sqlite-journal``      a rollback journal of one
``admin.token``                 written by the first start of a journal
``authority-key.json``          the authority's descriptor-signing key, made with the journal
                                (remote collectors pin it: a new one would orphan them)
``collector/attempts/*``        a collection ran against a journal (``collector/key.json``
                                alone does not count: a key is made before enrolment)
==============================  ================================================================

Anything else in the directory is not ours and is left alone. Initialising on purpose
(``agent-task serve --init``) moves these artefacts aside, renamed with an
``.orphaned-<UTC time>`` suffix, never deleting them, and then creates the journal.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> check_new_journal(d)           # an empty directory: a journal may be created
()
>>> _ = (d / "admin.token").write_text("x")
>>> try:
...     check_new_journal(d)
... except TaskError as err:
...     err.code.value
'JOURNAL_MISSING'
>>> [p.name.split(".orphaned-")[0] for p in check_new_journal(d, init=True)]
['admin.token']
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from taskcore.errors import ErrorCode, TaskError

__all__ = ["JOURNAL_NAME", "check_new_journal", "prior_state"]

JOURNAL_NAME = "journal.sqlite"
"""The journal's file name inside the data directory."""

_SIDE_FILES = ("-wal", "-shm", "-journal")
_ADMIN_TOKEN = "admin.token"  # noqa: S105 - a file name. taskcore.auth.FIRST_ADMIN_TOKEN_FILENAME (a test keeps them equal)
_AUTHORITY_KEY = "authority-key.json"  # taskcore.evidence.authority_key.AUTHORITY_KEY_FILE (a test keeps them equal)


def prior_state(data_dir: Path) -> tuple[str, ...]:
    """Return the artefacts of an earlier service in ``data_dir`` (relative names, sorted).

    Called only when the journal is missing or empty; an empty result means a new journal
    may be created.
    """
    found: list[str] = []
    journal = data_dir / JOURNAL_NAME
    try:
        if journal.is_file() and journal.stat().st_size == 0:
            found.append(JOURNAL_NAME)
    except OSError:
        pass
    for suffix in _SIDE_FILES:
        if os.path.lexists(data_dir / (JOURNAL_NAME + suffix)):
            found.append(JOURNAL_NAME + suffix)
    for name in (_ADMIN_TOKEN, _AUTHORITY_KEY):
        if os.path.lexists(data_dir / name):
            found.append(name)
    attempts = data_dir / "collector" / "attempts"
    try:
        if attempts.is_dir() and any(attempts.iterdir()):
            found.append("collector/attempts")
    except OSError:
        pass
    return tuple(sorted(found))


def _set_aside(data_dir: Path, names: tuple[str, ...]) -> tuple[Path, ...]:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved = []
    for name in names:
        if name == "collector/attempts":
            continue  # the collector's own state: it refuses stale attempts itself
        source = data_dir / name
        target = data_dir / f"{name}.orphaned-{stamp}"
        try:
            os.rename(source, target)
        except OSError as exc:
            raise TaskError(
                ErrorCode.STORAGE_UNAVAILABLE,
                f"cannot move {name} aside in the data directory ({exc.strerror}); move it "
                "yourself and start again",
            ) from None
        moved.append(target)
    return tuple(moved)


def check_new_journal(data_dir: Path | str, *, init: bool = False) -> tuple[Path, ...]:
    """Allow creating a journal in ``data_dir``, or raise ``JOURNAL_MISSING``.

    With ``init=True`` (the operator said to start a new service here) the artefacts of an
    earlier one are renamed aside and their new paths returned. Call it only when the
    journal is missing or has zero length.
    """
    directory = Path(data_dir)
    found = prior_state(directory)
    if not found:
        return ()
    if init:
        return _set_aside(directory, found)
    raise TaskError(
        ErrorCode.JOURNAL_MISSING,
        "the data directory holds state of an earlier service "
        f"({', '.join(found)}) but its journal {JOURNAL_NAME} is "
        + ("empty" if JOURNAL_NAME in found else "missing")
        + "; nothing was created. Restore journal.sqlite (with its -wal file, if you have one) "
        "from a backup into this directory, or, to start a new, empty service here on "
        "purpose, run 'agent-task serve --init' (the old files are renamed aside, not deleted)",
    )
