"""The authority side end to end, in process: claim, descriptor, import, finalize, qualify."""

from __future__ import annotations

import json
import shutil

import attrs
import pytest
from taskcore.actors import Tier
from taskcore.auth import issue_token, revoke_token
from taskcore.authority import revoke_executor
from taskcore.authority.gitrev import git_revision
from taskcore.canonical import canonical_json
from taskcore.codec import default_codec
from taskcore.collector.collect import collect_command
from taskcore.collector.state import CollectorState
from taskcore.contract.collector_descriptor import (
    CollectorDescriptor,
    build_execution_request,
    request_bytes,
)
from taskcore.contract.collector_records import SandboxMode
from taskcore.contract.collector_transfer import decode_transfer, encode_transfer
from taskcore.digest import sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.profiles import install_collector_profile
from taskcore.service import Route, Service
from taskcore.signing import generate_seed, public_key_hex

from tests.taskcore.collector.conftest import commit_file, head, recipe


class Flow:
    def __init__(self, authority, state, tmp_path, command=None):
        self.authority = authority
        self.state = state
        self.tmp_path = tmp_path
        self.clock = authority.clock
        install_collector_profile(authority.storage, self.clock, profile=authority.profile(command))
        self.service = Service.open(tmp_path / "data", clock=self.clock)
        self.token = issue_token(
            self.service.storage, self.clock, workspace="w1", tier=Tier.AGENT
        ).token
        self.route = Route(repository="acme", profile="default")
        self.n = 0

    def call(self, op, request, token=None):
        body = json.dumps({"operation": op, "request": request}).encode()
        return self.service.call_workflow(token or self.token, body, route=self.route).json()[
            "result"
        ]

    def upload(self, envelope, token=None):
        return self.service.call_workflow(
            token or self.token, envelope, route=self.route, operation="collector_upload"
        ).json()["result"]

    def checkpoint(self, change="c1"):
        return self.call(
            "checkpoint",
            {"version": 1, "change_id": change, "commit": head(self.authority.repo), "context": ""},
        )

    def qualification(self, change="c1", token=None):
        return self.call("qualification", {"version": 1, "change_id": change}, token)

    def claim(self, task_id, task_digest):
        self.n += 1
        return self.call(
            "collector_claim",
            {
                "version": 1,
                "request_id": f"claim-{self.n}",
                "task_id": task_id,
                "task_digest": task_digest,
                "execution_operation_id": f"op-{self.n}",
                "requested_lease_ms": 600_000,
            },
        )

    def descriptor(self, claimed):
        raw = self.call(
            "collector_descriptor",
            {
                "version": 1,
                "task_id": claimed["task_id"],
                "task_digest": claimed["task_digest"],
                "attempt_id": claimed["attempt"]["attempt_id"],
            },
        )
        return default_codec().structure(raw, CollectorDescriptor)

    def claim_next(self, change="c1"):
        q = self.qualification(change)
        assert q["next"]["operation"] == "collector_claim"
        task = next(t for t in q["tasks"] if t["task_id"] == q["next"]["task_id"])
        claimed = self.claim(task["task_id"], task["task_digest"])
        return claimed, self.descriptor(claimed)

    def collect(self, descriptor, state=None):
        return collect_command(
            descriptor,
            state=state or self.state,
            repository=self.authority.repo,
            sandbox=SandboxMode.NONE,
        ).envelope

    def finalize(self, change="c1"):
        return self.call("collector_finalize", {"version": 1, "change_id": change})

    def run_to_receipt(self):
        self.checkpoint()
        claimed, descriptor = self.claim_next()
        envelope = self.collect(descriptor)
        view = self.upload(envelope)
        return claimed, descriptor, envelope, view


@pytest.fixture
def flow(authority, state, tmp_path):
    f = Flow(authority, state, tmp_path)
    yield f
    f.service.close()


def refused(fn, *args):
    with pytest.raises(TaskError) as err:
        fn(*args)
    return err.value.code


# -- the happy path ---------------------------------------------------------------------------


def test_qualification_is_false_before_collection_and_names_collector_claim(flow):
    flow.checkpoint()
    q = flow.qualification()
    assert q["qualified"] is False
    assert q["subject_current"] is True
    assert q["receipt_digest"] is None
    assert q["revision"] == git_revision(flow.authority.repo, head(flow.authority.repo))
    assert [t["state"] for t in q["tasks"]] == ["pending"]
    assert q["next"] == {"operation": "collector_claim", "task_id": q["tasks"][0]["task_id"]}


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


def test_an_exact_upload_retry_returns_the_historical_view(flow):
    _, _, envelope, view = flow.run_to_receipt()
    assert flow.upload(envelope) == view


def test_upload_is_not_an_mcp_tool_and_takes_raw_bytes(flow):
    op = flow.service.registry.get("workflow.collector_upload")
    assert op.raw_input
    assert op.max_input_bytes == 16 * 1024 * 1024


# -- failures never produce a receipt -----------------------------------------------------------


@pytest.fixture
def failing_flow(authority, state, tmp_path):
    f = Flow(authority, state, tmp_path, command=recipe("echo broken >&2; exit 1"))
    yield f
    f.service.close()


def test_a_failed_run_is_uploaded_but_never_qualifies(failing_flow):
    flow = failing_flow
    _, _, _, view = flow.run_to_receipt()
    assert view["record_outcome"] == "failed"
    assert view["completes_dependency"] is False
    q = flow.qualification()
    assert q["qualified"] is False
    assert q["tasks"][0]["state"] == "failed"
    assert {"task_id": q["tasks"][0]["task_id"], "code": "collector_not_passed"} in q["failures"]
    assert q["next"] == {"operation": "none"}
    assert refused(flow.finalize) is ErrorCode.DEPENDENCY_INCOMPLETE


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


def test_a_new_checkpoint_makes_the_old_subject_stale(flow):
    flow.run_to_receipt()
    flow.finalize()
    commit_file(flow.authority.repo, "README.md", "edited\n")
    flow.checkpoint()
    q = flow.qualification()
    assert q["qualified"] is False
    assert q["tasks"][0]["state"] == "pending"
    assert q["next"]["operation"] == "collector_claim"


def test_revoking_the_originating_token_withdraws_qualification(flow):
    flow.run_to_receipt()
    flow.finalize()
    other = issue_token(flow.service.storage, flow.clock, workspace="w1", tier=Tier.AGENT).token
    origin_id = flow.token.split("_")[1]
    revoke_token(flow.service.storage, flow.clock, origin_id)
    q = flow.qualification(token=other)
    assert q["qualified"] is False
    assert {"task_id": q["tasks"][0]["task_id"], "code": "authorization_changed"} in q["failures"]


# -- tampering: each refused with its own code ----------------------------------------------------


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


def _clone_state(flow, name):
    other = CollectorState.open(flow.tmp_path / name, create=True)
    shutil.copy(flow.state.key_path, other.key_path)
    return other


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
    envelope = flow.collect(wrong, state=_clone_state(flow, "other"))
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


def test_only_the_agent_holding_the_attempt_may_read_its_descriptor(flow):
    flow.checkpoint()
    claimed, _ = flow.claim_next()
    other = issue_token(flow.service.storage, flow.clock, workspace="w1", tier=Tier.AGENT).token
    request = {
        "version": 1,
        "task_id": claimed["task_id"],
        "task_digest": claimed["task_digest"],
        "attempt_id": claimed["attempt"]["attempt_id"],
    }
    assert refused(flow.call, "collector_descriptor", request, other) is ErrorCode.FORBIDDEN


def test_an_ordinary_claim_cannot_take_a_collector_step(flow):
    flow.checkpoint()
    task = flow.qualification()["tasks"][0]
    request = {
        "version": 1,
        "request_id": "plain",
        "task_id": task["task_id"],
        "task_digest": task["task_digest"],
        "execution_operation_id": "op",
        "requested_lease_ms": 60_000,
        "executor": None,
    }
    assert refused(flow.call, "claim", request) is ErrorCode.ILLEGAL_TRANSITION


def test_without_a_collector_profile_nothing_can_be_claimed(authority, state, tmp_path):
    service = Service.open(tmp_path / "data", clock=authority.clock)
    token = issue_token(service.storage, authority.clock, workspace="w1", tier=Tier.AGENT).token
    route = Route(repository="acme", profile="default")

    def call(op, req):
        body = json.dumps({"operation": op, "request": req}).encode()
        return service.call_workflow(token, body, route=route).json()["result"]

    call(
        "checkpoint",
        {"version": 1, "change_id": "c1", "commit": head(authority.repo), "context": ""},
    )
    answer = call("qualification", {"version": 1, "change_id": "c1"})
    task = answer["tasks"][0]
    assert answer["next"] == {"operation": "none"}
    assert answer["failures"] == [{"task_id": task["task_id"], "code": "collector_profile_missing"}]
    with pytest.raises(TaskError) as err:
        call(
            "collector_claim",
            {
                "version": 1,
                "request_id": "r",
                "task_id": task["task_id"],
                "task_digest": task["task_digest"],
                "execution_operation_id": "op",
                "requested_lease_ms": 60_000,
            },
        )
    assert err.value.code is ErrorCode.NOT_FOUND
    service.close()


def test_qualification_never_writes_journal_rows(flow):
    flow.run_to_receipt()
    with flow.service.storage.read() as tx:
        before = tx.collector.receipt_of_subject(1)
    flow.qualification()
    with flow.service.storage.read() as tx:
        assert tx.collector.receipt_of_subject(1) == before is None


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


# -- isolation ----------------------------------------------------------------------------------


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
