"""One local command collection: descriptor in, signed and retained transfer bytes out.

:func:`collect_command` is everything ``agent-task collect`` does between asking the authority
for the descriptor and uploading: it checks the descriptor is self-consistent and names this
collector's key, checks the commit's revision with the authority's revision function, probes
the runtime and refuses before anything runs if it is not the pinned identity, reserves the
attempt durably, materializes the snapshot, runs the recipe, removes the snapshot, builds the
record, signs the transfer and retains it (fsync) before returning.

Reopening is safe: with a retained transfer the same bytes come back and nothing runs again; a
reservation without a transfer is ``EXECUTION_UNCERTAIN`` (the command may have run), never a
second run.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from taskcore.authority.gitrev import git_revision
from taskcore.canonical import canonical_json
from taskcore.clock import Clock, SystemClock
from taskcore.collector.runtime import Progress, detect_sandbox, probe_runtime, run_recipe
from taskcore.collector.sandbox import check_exposure, protected_paths
from taskcore.collector.snapshot import materialize, remove_tree
from taskcore.collector.state import AttemptState, CollectorKey, CollectorState
from taskcore.contract.collector_descriptor import CollectorDescriptor, request_bytes
from taskcore.contract.collector_records import (
    CleanupEvidence,
    ExecutionRecord,
    SandboxMode,
    runtime_identity_digest,
)
from taskcore.contract.collector_transfer import (
    RecordType,
    TransferHeader,
    TransferKind,
    encode_transfer,
    record_entries,
)
from taskcore.errors import ErrorCode, TaskError

__all__ = ["CollectResult", "attempt_state_for", "collect_command"]

RevisionFunction = Callable[[Path, str], str]
"""``revision_of(repository_path, commit) -> 64-hex revision`` (the documented git mapping)."""


@attrs.frozen(kw_only=True)
class CollectResult:
    """The retained signed bytes, where they live, and whether this call ran the command."""

    envelope: bytes
    attempt: AttemptState
    ran: bool
    record: ExecutionRecord | None


def attempt_state_for(
    state: CollectorState, descriptor: CollectorDescriptor, *, create: bool
) -> AttemptState:
    """Return the attempt directory of ``descriptor`` (named by one digest component)."""
    b = descriptor.binding
    component = state.attempt_component(
        audience=b.audience,
        task_id=b.task_id,
        attempt_id=b.attempt_id,
        attempt_digest=b.attempt_digest,
        fence=b.fence,
    )
    return state.attempt(component, create=create)


def _check_key(descriptor: CollectorDescriptor, key: CollectorKey) -> None:
    if descriptor.registration.verification_key_id != key.key_id:
        raise TaskError(
            ErrorCode.EXECUTOR_NOT_ENROLLED,
            f"the task's enrolled key is {descriptor.registration.verification_key_id}; this "
            f"collector holds {key.key_id}. Use the state directory of the enrolled key",
        )


def collect_command(
    descriptor: CollectorDescriptor,
    *,
    state: CollectorState,
    repository: Path,
    revision_of: RevisionFunction | None = None,
    clock: Clock | None = None,
    env_source: Mapping[str, str] | None = None,
    sandbox: SandboxMode | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> CollectResult:
    """Run one collection for ``descriptor`` and return the retained signed transfer.

    ``repository`` is the work tree the *local authority* registered for the repository (never
    a path from the descriptor); ``revision_of`` is the authority's revision function
    (:func:`taskcore.authority.gitrev.git_revision` unless a test passes another).
    """
    clock = clock or SystemClock()
    revision_of = revision_of or git_revision
    descriptor.check()
    key = state.load_key()
    _check_key(descriptor, key)
    attempt = attempt_state_for(state, descriptor, create=True)
    if attempt.has_transfer():
        return CollectResult(
            envelope=attempt.read_transfer(), attempt=attempt, ran=False, record=None
        )
    if attempt.has_reservation():
        attempt.reserve(None)  # raises EXECUTION_UNCERTAIN: never a second run
    b = descriptor.binding
    if revision_of(repository, b.commit) != b.revision:
        raise TaskError(
            ErrorCode.REVISION_MISMATCH,
            "the commit's revision is not the task's revision; checkpoint again",
        )
    mode = sandbox if sandbox is not None else detect_sandbox()
    recipe, isolation = descriptor.profile.recipe, descriptor.profile.isolation
    if isolation is not None:
        check_exposure(isolation, protected_paths(state=state.root, repository=repository))
    before = probe_runtime(recipe, env_source=env_source, sandbox=mode, isolation=isolation)
    if runtime_identity_digest(before) != descriptor.profile.runtime_identity_sha256:
        raise TaskError(
            ErrorCode.RUNTIME_MISMATCH,
            "this machine's runtime is not the one the collector profile pins; nothing was run. "
            "Compare 'agent-task collector runtime-probe' with the installed profile",
        )
    component = attempt.path.name
    attempt.write_json(attempt.descriptor_path, canonical_json_tree(descriptor))
    snapshot_dir = state.snapshot_dir(component)
    remove_tree(snapshot_dir)  # a crash may have left one behind; it never held a result
    try:
        # Materializing has no external effect; the reservation comes right before the run.
        snapshot = materialize(repository, b.commit, b.revision, snapshot_dir)
        attempt.reserve(
            {
                "task_id": b.task_id,
                "attempt_id": b.attempt_id,
                "fence": b.fence,
                "request_sha256": descriptor.request_sha256,
                "reserved_at_ms": clock.now_ms(),
                "pid": os.getpid(),
            }
        )
        started_at = clock.now_ms()
        run = run_recipe(
            recipe,
            snapshot_dir,
            env_source=env_source,
            sandbox=mode,
            isolation=isolation,
            progress=progress,
        )
    finally:
        removed = remove_tree(snapshot_dir)
    finished_at = clock.now_ms()
    after = probe_runtime(recipe, env_source=env_source, sandbox=mode, isolation=isolation)
    record = ExecutionRecord(
        version=1,
        request_sha256=descriptor.request_sha256,
        outcome=run.outcome,
        exit_status=run.exit_status,
        signal=run.signal,
        duration_ms=run.duration_ms,
        stdout=run.stdout,
        stderr=run.stderr,
        runtime=after,
        runtime_identity_sha256=runtime_identity_digest(after),
        snapshot=snapshot,
        environment_names=run.environment_names,
        cleanup=CleanupEvidence(
            process_group_ended=run.process_group_ended, snapshot_removed=removed
        ),
        limits_reached=run.limits_reached,
        started_at_ms=started_at,
        finished_at_ms=max(finished_at, started_at),
    )
    req_bytes = request_bytes(descriptor.request)
    rec_bytes = canonical_json(record)
    entries = record_entries(
        ((RecordType.EXECUTION_REQUEST, req_bytes), (RecordType.EXECUTION_RECORD, rec_bytes))
    )
    header = TransferHeader(
        version=1,
        kind=TransferKind.COMMAND,
        audience=b.audience,
        repository_id=b.repository_id,
        workflow_profile_id=b.workflow_profile_id,
        collector_profile_id=descriptor.profile.profile_id,
        step_id=b.step_id,
        task_id=b.task_id,
        task_digest=b.task_digest,
        attempt_id=b.attempt_id,
        attempt_digest=b.attempt_digest,
        execution_operation_id=b.execution_operation_id,
        fence=b.fence,
        origin=descriptor.origin,
        registration=descriptor.registration,
        public_key=key.public_key,
        request_sha256=entries[0].sha256,
        collector_identity_sha256=record.runtime_identity_sha256,
        upload_request_id="upload-" + secrets.token_hex(12),
        records=entries,
        created_at_ms=finished_at,
    )
    envelope = encode_transfer(header, (req_bytes, rec_bytes), key.seed)
    attempt.retain_transfer(envelope)
    return CollectResult(envelope=envelope, attempt=attempt, ran=True, record=record)


def canonical_json_tree(value: object) -> object:
    """Return ``value`` as a plain JSON tree (via its canonical bytes)."""
    import json

    return json.loads(canonical_json(value))
