"""Side-effect-free reads: a missing journal stays missing, an existing one is not written."""

import hashlib
from pathlib import Path

import pytest
from taskcore.contract import InstructionsRequest, ReferenceFetchRequest, TaskStatusRequest
from taskcore.errors import ErrorCode, TaskError
from taskcore.workflow import local_reader, open_reader
from taskcore.workflow.types import (
    NextRequest,
    RecoveryKind,
    RequirementsRequest,
    TaskRecoveryRequest,
)

from tests.taskcore.workflow.support import PROFILE, REPO, actor, claim_request, parse

HEX = "b" * 64


def _all_reads(journal, caller):
    """Call every side-effect-free read once (reads of an unknown task are NOT_FOUND)."""
    journal.requirements(caller, RequirementsRequest(version=1, change_id="c1"))
    journal.next(caller, NextRequest(version=1, change_id="c1"))
    calls = [
        lambda: journal.status(
            caller, TaskStatusRequest(version=1, task_id="t-x", task_digest=HEX, attempt_id="a-x")
        ),
        lambda: journal.instructions(
            caller,
            InstructionsRequest(
                version=1, task_id="t-x", task_digest=HEX, supported_schema_versions=(1,)
            ),
        ),
        lambda: journal.reference(
            caller,
            ReferenceFetchRequest(
                version=1,
                task_id="t-x",
                task_digest=HEX,
                name="guide",
                expected_sha256=HEX,
                expected_schema_version=1,
            ),
        ),
        lambda: journal.recovery(
            caller,
            TaskRecoveryRequest(
                version=1,
                kind=RecoveryKind.HEARTBEAT,
                request_id="r",
                task_id="t-x",
                task_digest=HEX,
                attempt_id="a-x",
                attempt_digest=HEX,
                execution_operation_id="op",
                fence=1,
            ),
        ),
    ]
    for call in calls:
        with pytest.raises(TaskError) as info:
            call()
        assert info.value.code is ErrorCode.NOT_FOUND


@pytest.mark.backend_only(
    "sqlite", reason="what a read leaves in a data dir is about the SQLite journal file"
)
def test_reads_on_a_missing_data_dir_create_nothing(tmp_path: Path):
    data_dir = tmp_path / "absent"
    with pytest.raises(TaskError) as info:
        local_reader(data_dir, actor(), repository_id=REPO, profile_id=PROFILE)
    assert info.value.code is ErrorCode.NOT_FOUND
    assert not data_dir.exists()


@pytest.mark.backend_only(
    "sqlite", reason="what a read leaves in a data dir is about the SQLite journal file"
)
def test_reads_on_a_data_dir_without_a_journal_create_nothing(tmp_path: Path):
    with pytest.raises(TaskError):
        open_reader(tmp_path)
    assert list(tmp_path.iterdir()) == []


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.backend_only(
    "sqlite", reason="compares the SQLite journal file's bytes before and after"
)
def test_every_read_leaves_an_existing_journal_unchanged(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    parse(world.journal.claim(world.caller(), claim_request(task)))
    world.close()
    journal_file = world.data_dir / "journal.sqlite"
    before = _digest(journal_file)
    names_before = {p.name for p in world.data_dir.iterdir()}
    journal, caller = local_reader(
        world.data_dir, actor(), repository_id=REPO, profile_id=PROFILE, clock=world.clock
    )
    try:
        _all_reads(journal, caller)
        assert journal.next(caller, NextRequest(version=1, change_id="c1")).reason == (
            "attempt_in_progress"
        )
        with pytest.raises(TaskError, match="read-only"):
            journal.claim(caller, claim_request(task, "claim-2"))
    finally:
        journal.storage.close()
    assert _digest(journal_file) == before
    extra = {p.name for p in world.data_dir.iterdir()} - names_before
    assert extra <= {"journal.sqlite-wal", "journal.sqlite-shm"}
