from __future__ import annotations

import os
from pathlib import Path

import pytest
from taskcore.collector.collect import attempt_state_for, collect_command
from taskcore.contract.collector_records import (
    ExecutionOutcome,
    ExecutionRecord,
    ExecutionRequest,
    SandboxMode,
    check_execution_record,
)
from taskcore.contract.collector_transfer import decode_record, decode_transfer
from taskcore.errors import ErrorCode, TaskError

from .conftest import commit_file, recipe


def _collect(descriptor, state, repo, **kw):
    return collect_command(descriptor, state=state, repository=repo, sandbox=SandboxMode.NONE, **kw)


def test_collection_signs_a_record_the_authority_rules_accept(repo, state, make_descriptor):
    descriptor = make_descriptor(recipe("ls; cat README.md"))
    result = _collect(descriptor, state, repo)
    assert result.ran
    decoded = decode_transfer(result.envelope)
    decoded.verify(state.load_key().public_key)
    request = decode_record(ExecutionRequest, decoded.records[0])
    record = decode_record(ExecutionRecord, decoded.records[1])
    assert request == descriptor.request
    check_execution_record(record, request, decoded.header.request_sha256)
    assert record.outcome is ExecutionOutcome.PASSED
    assert b"hello" in record.stdout.retained()
    assert record.snapshot.revision == descriptor.binding.revision
    assert record.cleanup.snapshot_removed
    assert record.cleanup.process_group_ended
    assert decoded.header.fence == descriptor.binding.fence
    assert decoded.header.origin == descriptor.origin


def test_a_failing_command_is_collected_as_a_failed_record(repo, state, make_descriptor):
    result = _collect(make_descriptor(recipe("echo boom >&2; exit 4")), state, repo)
    record = decode_record(ExecutionRecord, decode_transfer(result.envelope).records[1])
    assert record.outcome is ExecutionOutcome.FAILED
    assert record.exit_status == 4
    assert record.stderr.retained() == b"boom\n"


def test_signed_bytes_are_retained_before_returning(repo, state, make_descriptor):
    descriptor = make_descriptor()
    result = _collect(descriptor, state, repo)
    attempt = attempt_state_for(state, descriptor, create=False)
    assert attempt.read_transfer() == result.envelope
    assert os.stat(attempt.transfer_path).st_mode & 0o777 == 0o600


def test_reopening_returns_the_same_bytes_and_never_runs_again(
    repo, state, make_descriptor, tmp_path
):
    counter = tmp_path / "runs"
    command = recipe('echo run >> "$RUNS"', allow=("PATH", "RUNS"))
    descriptor = make_descriptor(command)
    env = {"PATH": os.environ["PATH"], "RUNS": str(counter)}
    first = _collect(descriptor, state, repo, env_source=env)
    second = _collect(descriptor, state, repo, env_source=env)
    assert first.ran
    assert not second.ran
    assert second.envelope == first.envelope
    assert counter.read_text() == "run\n"


def test_a_reservation_without_a_transfer_is_uncertain_and_never_reruns(
    repo, state, make_descriptor, tmp_path
):
    counter = tmp_path / "runs"
    command = recipe('echo run >> "$RUNS"', allow=("PATH", "RUNS"))
    descriptor = make_descriptor(command)
    env = {"PATH": os.environ["PATH"], "RUNS": str(counter)}
    _collect(descriptor, state, repo, env_source=env)
    attempt = attempt_state_for(state, descriptor, create=False)
    attempt.transfer_path.unlink()  # a crash between the run and retention
    with pytest.raises(TaskError) as err:
        _collect(descriptor, state, repo, env_source=env)
    assert err.value.code is ErrorCode.EXECUTION_UNCERTAIN
    assert counter.read_text() == "run\n"


def test_a_runtime_other_than_the_pinned_one_runs_nothing(repo, state, make_descriptor):
    descriptor = make_descriptor(runtime_sha="0" * 64)
    with pytest.raises(TaskError) as err:
        _collect(descriptor, state, repo)
    assert err.value.code is ErrorCode.RUNTIME_MISMATCH
    assert not attempt_state_for(state, descriptor, create=False).has_reservation()


def test_a_commit_whose_revision_is_not_the_tasks_is_refused(repo, state, make_descriptor):
    descriptor = make_descriptor()
    with pytest.raises(TaskError) as err:
        collect_command(
            descriptor,
            state=state,
            repository=repo,
            sandbox=SandboxMode.NONE,
            revision_of=lambda _repo, _commit: "f" * 64,
        )
    assert err.value.code is ErrorCode.REVISION_MISMATCH


def test_the_snapshot_is_the_recorded_commit_not_the_work_tree(repo, state, make_descriptor):
    old = make_descriptor(recipe("cat README.md"))
    commit_file(repo, "README.md", "changed\n")
    (repo / "README.md").write_text("uncommitted\n")
    record = decode_record(
        ExecutionRecord, decode_transfer(_collect(old, state, repo).envelope).records[1]
    )
    assert record.stdout.retained() == b"hello\n"


def test_a_descriptor_for_another_key_is_refused(repo, state, make_descriptor, tmp_path):
    from taskcore.collector.state import CollectorState

    other = CollectorState.open(tmp_path / "other", create=True)
    other.generate_key()
    with pytest.raises(TaskError) as err:
        collect_command(make_descriptor(), state=other, repository=repo, sandbox=SandboxMode.NONE)
    assert err.value.code is ErrorCode.EXECUTOR_NOT_ENROLLED


def test_progress_is_reported_while_the_command_runs(repo, state, make_descriptor):
    ticks = []
    _collect(make_descriptor(recipe("sleep 1.3")), state, repo, progress=ticks.append)
    assert ticks
    assert ticks[0].elapsed_ms >= 900


def test_the_snapshot_directory_is_gone_after_collection(repo, state, make_descriptor):
    _collect(make_descriptor(), state, repo)
    assert list(Path(state.root, "snapshots").iterdir()) == []
