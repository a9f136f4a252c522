"""Importing signed transfers: retries, tampering, fences, pinning (evidence.imports)."""

from __future__ import annotations

import attrs
import pytest
from taskcore.authority.gitrev import git_revision
from taskcore.canonical import canonical_json
from taskcore.contract.collector_descriptor import (
    build_execution_request,
    request_bytes,
)
from taskcore.contract.collector_records import SandboxMode
from taskcore.contract.collector_transfer import decode_transfer, encode_transfer
from taskcore.digest import sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.signing import generate_seed, public_key_hex

from tests.taskcore.collector.conftest import commit_file, head, recipe
from tests.taskcore.evidence.flow import Flow, clone_state, refused


def test_an_exact_upload_retry_returns_the_historical_view(flow):
    _, _, envelope, view = flow.run_to_receipt()
    assert flow.upload(envelope) == view


def test_upload_is_not_an_mcp_tool_and_takes_raw_bytes(flow):
    op = flow.service.registry.get("workflow.collector_upload")
    assert op.raw_input
    assert op.max_input_bytes == 16 * 1024 * 1024


def test_a_flipped_byte_in_a_retained_transfer_is_an_invalid_signature(flow):
    flow.checkpoint()
    _, descriptor = flow.claim_next()
    envelope = bytearray(flow.collect(descriptor))
    envelope[-2] ^= 0x01
    assert refused(flow.upload, bytes(envelope)) is ErrorCode.INVALID_SIGNATURE
    assert flow.qualification()["tasks"][0]["state"] == "claimed"


def test_a_record_signed_by_an_unenrolled_key_is_refused(flow):
    flow.checkpoint()
    _, descriptor = flow.claim_next()
    decoded = decode_transfer(flow.collect(descriptor))
    seed = generate_seed()
    forged = encode_transfer(
        attrs.evolve(decoded.header, public_key=public_key_hex(seed)), decoded.records, seed
    )
    assert refused(flow.upload, forged) is ErrorCode.EXECUTOR_NOT_ENROLLED


def test_a_signature_by_another_key_under_the_enrolled_key_is_refused(flow):
    flow.checkpoint()
    _, descriptor = flow.claim_next()
    decoded = decode_transfer(flow.collect(descriptor))
    forged = encode_transfer(decoded.header, decoded.records, generate_seed())
    assert refused(flow.upload, forged) is ErrorCode.INVALID_SIGNATURE


def test_a_transfer_for_another_revision_is_refused(flow):
    old = head(flow.authority.repo)
    commit_file(flow.authority.repo, "README.md", "newer\n")
    flow.checkpoint()
    _, descriptor = flow.claim_next()
    binding = attrs.evolve(
        descriptor.binding, commit=old, revision=git_revision(flow.authority.repo, old)
    )
    request = build_execution_request(binding, descriptor.profile)
    wrong = attrs.evolve(
        descriptor,
        binding=binding,
        request=request,
        request_sha256=sha256_hex(request_bytes(request)),
    )
    envelope = flow.collect(wrong, state=clone_state(flow, "other"))
    assert refused(flow.upload, envelope) is ErrorCode.REVISION_MISMATCH


def test_a_replay_of_an_old_fence_is_refused(flow):
    flow.checkpoint()
    claimed, descriptor = flow.claim_next()
    old_envelope = flow.collect(descriptor)
    attempt = claimed["attempt"]
    flow.call(
        "reconcile",
        {
            "version": 1,
            "request_id": "rec-1",
            "action": "reconcile",
            "task_id": claimed["task_id"],
            "task_digest": claimed["task_digest"],
            "attempt_id": attempt["attempt_id"],
            "attempt_digest": claimed["attempt_digest"],
            "execution_operation_id": attempt["execution_operation_id"],
            "executor": attempt["executor"],
            "fence": attempt["fence"],
            "reason": "restart",
        },
    )
    claimed2, descriptor2 = flow.claim_next()
    assert claimed2["attempt"]["fence"] > attempt["fence"]
    assert refused(flow.upload, old_envelope) is ErrorCode.STALE_FENCE
    flow.upload(flow.collect(descriptor2))
    flow.finalize()
    assert flow.qualification()["qualified"] is True


def test_changed_bytes_for_an_imported_attempt_conflict(flow):
    _, _, envelope, _ = flow.run_to_receipt()
    decoded = decode_transfer(envelope)
    again = encode_transfer(
        attrs.evolve(decoded.header, upload_request_id="upload-other"),
        decoded.records,
        flow.state.load_key().seed,
    )
    assert refused(flow.upload, again) is ErrorCode.IDEMPOTENCY_CONFLICT


def test_changed_bytes_under_the_same_upload_request_conflict(flow):
    flow.checkpoint()
    _, descriptor = flow.claim_next()
    envelope = flow.collect(descriptor)
    decoded = decode_transfer(envelope)
    flow.upload(envelope)
    changed = encode_transfer(
        attrs.evolve(decoded.header, created_at_ms=decoded.header.created_at_ms + 1),
        decoded.records,
        flow.state.load_key().seed,
    )
    assert refused(flow.upload, changed) is ErrorCode.IDEMPOTENCY_CONFLICT


def test_a_request_that_is_not_the_pinned_one_is_refused(flow):
    flow.checkpoint()
    _, descriptor = flow.claim_next()
    loose = attrs.evolve(descriptor.profile.recipe, timeout_ms=1234)
    profile = attrs.evolve(descriptor.profile, recipe=loose)
    request = build_execution_request(descriptor.binding, profile)
    decoded = decode_transfer(flow.collect(descriptor))
    records = (canonical_json(request), decoded.records[1])
    from taskcore.contract.collector_transfer import RecordType, record_entries

    entries = record_entries(
        ((RecordType.EXECUTION_REQUEST, records[0]), (RecordType.EXECUTION_RECORD, records[1]))
    )
    header = attrs.evolve(decoded.header, records=entries, request_sha256=entries[0].sha256)
    forged = encode_transfer(header, records, flow.state.load_key().seed)
    assert refused(flow.upload, forged) is ErrorCode.BINDING_MISMATCH


def test_concurrent_identical_uploads_import_once_and_answer_alike(flow):
    from concurrent.futures import ThreadPoolExecutor

    flow.checkpoint()
    _, descriptor = flow.claim_next()
    envelope = flow.collect(descriptor)
    with ThreadPoolExecutor(max_workers=4) as pool:
        views = list(pool.map(lambda _: flow.upload(envelope), range(8)))
    assert all(view == views[0] for view in views)
    with flow.service.storage.read() as tx:
        subject_seq = tx.journal.get_task(views[0]["task_id"]).subject_seq
        assert len(tx.collector.transfers_of_subject(subject_seq)) == 1


def test_a_transfer_for_a_superseded_subject_is_refused_and_finalizes_nothing(flow):
    flow.checkpoint()
    _, descriptor = flow.claim_next()
    envelope = flow.collect(descriptor)
    commit_file(flow.authority.repo, "README.md", "moved on\n")
    flow.checkpoint()
    assert refused(flow.upload, envelope) is ErrorCode.SUBJECT_STALE
    assert refused(flow.finalize) is ErrorCode.DEPENDENCY_INCOMPLETE


def test_the_upload_answer_and_the_receipt_say_how_the_command_was_isolated(flow):
    _, _, _, view = flow.run_to_receipt()
    assert view["sandbox"] == "none"
    [entry] = flow.finalize()["receipt"]["transfers"]
    assert entry["sandbox"] == "none"


def test_a_record_short_of_the_profiles_isolation_is_refused(
    authority, state, tmp_path, monkeypatch
):
    from taskcore.contract.collector import DEFAULT_ISOLATION

    # The profile pins an unsandboxed runtime digest but requires bubblewrap: an honest
    # collector refuses to run; one that runs anyway is refused by the authority.
    required = attrs.evolve(DEFAULT_ISOLATION, minimum_sandbox=SandboxMode.BWRAP)
    pinned = authority.profile(recipe("echo ok"), sandbox=SandboxMode.NONE)
    authority.profile = lambda command=None: attrs.evolve(pinned, isolation=required)
    f = Flow(authority, state, tmp_path)
    try:
        f.checkpoint()
        _, descriptor = f.claim_next()
        with pytest.raises(TaskError) as honest:
            f.collect(descriptor)
        assert honest.value.code is ErrorCode.ISOLATION_UNAVAILABLE  # nothing reserved or run
        # A collector that ignores the profile's isolation and runs anyway:
        from taskcore.collector import collect

        for name in ("probe_runtime", "run_recipe"):
            real = getattr(collect, name)
            monkeypatch.setattr(
                collect, name, lambda *a, _f=real, **kw: _f(*a, **{**kw, "isolation": None})
            )
        envelope = f.collect(descriptor)
        monkeypatch.undo()
        with pytest.raises(TaskError) as err:
            f.upload(envelope)
        assert err.value.code is ErrorCode.RUNTIME_MISMATCH
        assert "falls short" in err.value.message
    finally:
        f.service.close()
