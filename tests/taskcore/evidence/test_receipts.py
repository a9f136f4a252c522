"""Collector completion and v2 receipts, end to end in process (evidence.receipts)."""

from __future__ import annotations

import json

from taskcore.authority import revoke_executor
from taskcore.codec import default_codec
from taskcore.digest import sha256_hex
from taskcore.errors import ErrorCode
from taskcore.evidence.profiles import install_collector_profile

from tests.taskcore.collector.conftest import recipe
from tests.taskcore.evidence.flow import refused


def test_a_passing_collection_then_finalization_qualifies_the_subject(flow):
    _, _, envelope, view = flow.run_to_receipt()
    assert view["completes_dependency"] is True
    assert view["admission"] == "requires_finalization"
    assert view["transfer_digest"] == sha256_hex(envelope)
    before = flow.qualification()
    assert before["qualified"] is False
    assert before["tasks"][0]["state"] == "succeeded"
    assert before["next"] == {"operation": "collector_finalize"}
    final = flow.finalize()
    after = flow.qualification()
    assert after["qualified"] is True
    assert after["receipt_digest"] == final["receipt_digest"]
    assert after["failures"] == []
    assert after["next"] == {"operation": "none"}


def test_the_receipt_names_every_transfer_task_attempt_fence_registration_and_origin(flow):
    claimed, descriptor, envelope, _ = flow.run_to_receipt()
    receipt = flow.finalize()["receipt"]
    assert receipt["receipt_version"] == 2
    assert receipt["revision"] == descriptor.binding.revision
    [entry] = receipt["transfers"]
    assert entry["transfer_digest"] == sha256_hex(envelope)
    assert entry["task_id"] == claimed["task_id"]
    assert entry["attempt_id"] == claimed["attempt"]["attempt_id"]
    assert entry["fence"] == claimed["attempt"]["fence"]
    assert entry["registration"] == json.loads(default_codec().dumps(descriptor.registration))
    assert entry["public_key"] == flow.state.load_key().public_key
    assert entry["collector_profile_id"] == "cp-1"
    assert entry["origin"] == json.loads(default_codec().dumps(descriptor.origin))
    assert [t["task_id"] for t in receipt["tasks"]] == [claimed["task_id"]]


def test_finalizing_twice_returns_the_same_receipt(flow):
    flow.run_to_receipt()
    first, second = flow.finalize(), flow.finalize()
    assert first["receipt_digest"] == second["receipt_digest"]
    assert (first["created"], second["created"]) == (True, False)


def test_revoking_the_key_makes_the_old_receipt_stop_qualifying(flow):
    flow.run_to_receipt()
    flow.finalize()
    revoke_executor(flow.authority.storage, flow.clock, registration_id="reg-1", reason="lost")
    q = flow.qualification()
    assert q["qualified"] is False
    assert q["receipt_digest"] is None
    assert {"task_id": q["tasks"][0]["task_id"], "code": "executor_revoked"} in q["failures"]
    assert refused(flow.finalize) is ErrorCode.EXECUTOR_REVOKED


def test_reenrollment_does_not_rehabilitate_old_evidence(flow):
    from taskcore.authority import enroll_executor

    flow.run_to_receipt()
    e = flow.authority.enrollment
    enroll_executor(
        flow.authority.storage,
        flow.clock,
        registration_id="reg-1",
        executor_id=e.executor_id,
        repository_id="acme",
        step_id="tests",
        verification_key_id=e.verification_key_id,
        public_key=e.public_key,
    )
    q = flow.qualification()
    assert q["qualified"] is False
    assert {"task_id": q["tasks"][0]["task_id"], "code": "executor_not_current"} in q["failures"]


def test_a_changed_collector_profile_never_produces_a_receipt(flow):
    flow.run_to_receipt()
    install_collector_profile(
        flow.authority.storage,
        flow.clock,
        profile=flow.authority.profile(recipe("echo other"), profile_id="cp-2"),
    )
    q = flow.qualification()
    assert q["qualified"] is False
    assert {"task_id": q["tasks"][0]["task_id"], "code": "collector_profile_changed"} in (
        q["failures"]
    )
    assert refused(flow.finalize) is ErrorCode.COLLECTOR_PROFILE_CHANGED
