"""The collector's client flows against an in-process authority (the WorkflowClient protocol)."""

from __future__ import annotations

import json

import attrs
import pytest
from taskcore.codec import default_codec
from taskcore.collector.client import (
    Checking,
    Claimed,
    Claiming,
    Collecting,
    Finalizing,
    Recorded,
    RenewalFailed,
    Running,
    Uploading,
    check_local_authority,
    checkpoint,
    clean_head,
    collect_once,
    finalize_if_ready,
    qualification,
    reconcile_change,
    retry_uploads,
)
from taskcore.contract.collector_descriptor import CollectorDescriptor
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage

from .conftest import InProcessClient, Live, commit_file, git, head, recipe

WORKFLOW = {"repository": "acme", "profile": "default"}


class Refusing(InProcessClient):
    """The in-process client, except that the named operations fail as if unreachable."""

    def __init__(self, live: Live, *refused: str) -> None:
        super().__init__(live.service, live.token)
        self.refused = set(refused)

    def _refuse(self, op: str) -> None:
        if op in self.refused:
            raise TaskError(ErrorCode.SERVICE_UNREACHABLE, f"{op} did not answer")

    def workflow(self, repository, profile, op, body):
        self._refuse(op)
        return super().workflow(repository, profile, op, body)

    def upload(self, repository, profile, data):
        self._refuse("collector_upload")
        return super().upload(repository, profile, data)


def claimed_descriptor(live: Live, change: str = "c1") -> CollectorDescriptor:
    def call(op, request):
        return live.client.workflow("acme", "default", op, json.dumps(request).encode())["result"]

    answer = qualification(live.client, change=change, **WORKFLOW)
    task = next(t for t in answer["tasks"] if t["task_id"] == answer["next"]["task_id"])
    claimed = call(
        "collector_claim",
        {
            "version": 1,
            "request_id": "r1",
            "task_id": task["task_id"],
            "task_digest": task["task_digest"],
            "execution_operation_id": "e1",
            "requested_lease_ms": 60_000,
        },
    )
    raw = call(
        "collector_descriptor",
        {
            "version": 1,
            "task_id": claimed["task_id"],
            "task_digest": claimed["task_digest"],
            "attempt_id": claimed["attempt"]["attempt_id"],
        },
    )
    return default_codec().structure(raw, CollectorDescriptor)


# -- checkpoint ---------------------------------------------------------------------------------


def test_clean_head_is_the_head_of_a_clean_work_tree(repo):
    assert clean_head(repo) == head(repo)


def test_clean_head_refuses_uncommitted_and_untracked_changes(repo):
    (repo / "README.md").write_text("changed\n")
    with pytest.raises(TaskError) as dirty:
        clean_head(repo)
    assert dirty.value.code is ErrorCode.CONFLICT
    assert "uncommitted" in dirty.value.message
    git(repo, "checkout", "-q", "--", "README.md")
    (repo / "new.txt").write_text("new\n")
    with pytest.raises(TaskError) as untracked:
        clean_head(repo)
    assert untracked.value.code is ErrorCode.CONFLICT


def test_clean_head_of_a_repository_without_commits_is_not_found(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with pytest.raises(TaskError) as err:
        clean_head(empty)
    assert err.value.code is ErrorCode.NOT_FOUND


def test_checkpoint_records_the_subject_at_the_commit(live):
    result = live.checkpoint()
    assert result["created"] is True
    assert result["subject"]["commit"] == head(live.repo)
    assert [t["step_id"] for t in result["tasks"]] == ["tests"]


# -- collect_once -------------------------------------------------------------------------------


def test_collect_once_claims_runs_uploads_and_finalizes(live):
    live.checkpoint()
    live.client.calls.clear()
    out = live.collect()
    assert out["collected"] is True
    assert out["record_outcome"] == "passed"
    assert out["qualification"]["qualified"] is True
    assert out["qualification"]["next"] == {"operation": "none"}
    assert out["attempt_id"] == out["upload"]["attempt_id"]
    assert isinstance(out["command_ms"], int)
    assert live.client.calls == [
        "qualification",
        "collector_claim",
        "collector_descriptor",
        "status",
        "collector_upload",
        "qualification",
        "collector_finalize",
        "qualification",
    ]


def test_collect_once_reports_each_stage_in_order(live):
    live.checkpoint()
    events = []
    live.collect(notify=events.append)
    stages = [type(e) for e in events if not isinstance(e, Running)]
    assert stages == [Checking, Claiming, Claimed, Collecting, Recorded, Uploading, Finalizing]
    assert events[0].step_id == "tests"
    claimed = next(e for e in events if isinstance(e, Claimed))
    collecting = next(e for e in events if isinstance(e, Collecting))
    assert claimed.attempt_id.startswith("a")
    assert collecting.commit == head(live.repo)
    assert collecting.argv == ("/bin/sh", "-c", "echo ok")
    recorded = next(e for e in events if isinstance(e, Recorded))
    assert recorded.record.outcome.value == "passed"


def test_nothing_to_collect_is_a_conflict_and_claims_nothing(live):
    live.checkpoint()
    live.collect()
    live.client.calls.clear()
    with pytest.raises(TaskError) as err:
        live.collect()
    assert err.value.code is ErrorCode.CONFLICT
    assert "nothing to collect" in err.value.message
    assert err.value.details == {"next": {"operation": "none"}, "next_command": None}
    assert live.client.calls == ["qualification"]


def test_a_pending_finalize_is_finalized_without_collecting_again(live):
    live.checkpoint()
    with pytest.raises(TaskError):
        collect_once(
            Refusing(live, "collector_finalize"),
            change="c1",
            data_dir=live.data_dir,
            state=live.state,
            lease_ms=600_000,
            **WORKFLOW,
        )
    assert qualification(live.client, change="c1", **WORKFLOW)["next"] == {
        "operation": "collector_finalize"
    }
    events = []
    out = live.collect(notify=events.append)
    assert out == {
        "collected": False,
        "upload": None,
        "qualification": out["qualification"],
        "next_command": None,
        "next_action": "This Change is qualified.",
    }
    assert out["qualification"]["qualified"] is True
    assert events == [Finalizing()]
    assert "collector_claim" not in live.client.calls


def test_finalize_if_ready_without_a_pending_finalize_only_asks(live):
    live.checkpoint()
    answer = finalize_if_ready(live.client, change="c1", **WORKFLOW)
    assert answer["next"]["operation"] == "collector_claim"
    assert live.client.calls == ["checkpoint", "qualification"]


@pytest.mark.backend_only(
    "sqlite",
    reason="another data dir is another journal only on SQLite; on PostgreSQL every data dir reads the one database",
)
def test_collect_against_another_data_dir_runs_nothing(live, tmp_path):
    other = tmp_path / "other-data"
    open_storage(other, create=True).close()
    live.checkpoint()
    with pytest.raises(TaskError) as err:
        live.collect(data_dir=other)
    assert err.value.code is ErrorCode.BINDING_MISMATCH
    assert all(not a.has_reservation() for a in live.state.attempts())
    assert "status" not in live.client.calls


def test_an_attempt_no_longer_applicable_runs_nothing(live):
    class ExpiringBeforeStatus(InProcessClient):
        def workflow(self, repository, profile, op, body):
            if op == "status":
                live.clock.advance(5_000)  # past the 1 s lease: expiry is observed at read
            return super().workflow(repository, profile, op, body)

    live.checkpoint()
    with pytest.raises(TaskError) as err:
        collect_once(
            ExpiringBeforeStatus(live.service, live.token),
            change="c1",
            data_dir=live.data_dir,
            state=live.state,
            lease_ms=1_000,
            **WORKFLOW,
        )
    assert err.value.code is ErrorCode.CONFLICT
    assert "no longer applicable; nothing was run" in err.value.message
    assert all(not a.has_reservation() for a in live.state.attempts())


def test_a_failed_upload_keeps_the_signed_transfer_and_names_retry_upload(live):
    live.checkpoint()
    with pytest.raises(TaskError) as err:
        collect_once(
            Refusing(live, "collector_upload"),
            change="c1",
            data_dir=live.data_dir,
            state=live.state,
            lease_ms=600_000,
            **WORKFLOW,
        )
    assert err.value.code is ErrorCode.SERVICE_UNREACHABLE
    [attempt] = live.state.attempts()
    assert err.value.message.endswith(
        f"is retained: run agent-task retry-upload --attempt {attempt.path.name}, then "
        "agent-task collect c1"
    )
    assert attempt.has_transfer()
    assert attempt.read_json(attempt.upload_path) is None
    [view] = retry_uploads(live.client, live.state)
    assert view["attempt"] == attempt.path.name
    assert view["record_outcome"] == "passed"
    assert retry_uploads(live.client, live.state) == []


def test_a_long_run_renews_its_lease_while_the_command_runs(authority, state, tmp_path):
    live = Live(authority, state, tmp_path, command=recipe("sleep 2.5"))
    try:
        live.checkpoint()
        out = live.collect(lease_ms=1_000)
        assert out["qualification"]["qualified"] is True
        assert live.client.calls.count("heartbeat") >= 2
    finally:
        live.close()


def test_a_failed_renewal_is_reported_and_the_run_continues(authority, state, tmp_path):
    live = Live(authority, state, tmp_path, command=recipe("sleep 2.5"))
    try:
        live.checkpoint()
        events = []
        out = collect_once(
            Refusing(live, "heartbeat"),
            change="c1",
            data_dir=live.data_dir,
            state=live.state,
            lease_ms=1_000,
            notify=events.append,
            **WORKFLOW,
        )
        assert out["record_outcome"] == "passed"
        failures = [e for e in events if isinstance(e, RenewalFailed)]
        assert failures
        assert failures[0].error.code is ErrorCode.SERVICE_UNREACHABLE
    finally:
        live.close()


# -- check_local_authority ----------------------------------------------------------------------


def test_the_local_authority_check_returns_the_registered_work_tree(live):
    live.checkpoint()
    descriptor = claimed_descriptor(live)
    assert check_local_authority(descriptor, live.data_dir, "c1") == live.repo


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"binding": {"repository_id": "elsewhere"}}, ErrorCode.BINDING_MISMATCH),
        ({"binding": {"audience": "another-authority"}}, ErrorCode.BINDING_MISMATCH),
        ({"profile_digest": "0" * 64}, ErrorCode.COLLECTOR_PROFILE_CHANGED),
    ],
)
def test_a_descriptor_the_local_authority_does_not_back_is_refused(live, change, code):
    live.checkpoint()
    descriptor = claimed_descriptor(live)
    if "binding" in change:
        descriptor = attrs.evolve(
            descriptor, binding=attrs.evolve(descriptor.binding, **change["binding"])
        )
    else:
        descriptor = attrs.evolve(descriptor, **change)
    with pytest.raises(TaskError) as err:
        check_local_authority(descriptor, live.data_dir, "c1")
    assert err.value.code is code


def test_a_descriptor_for_a_superseded_subject_is_stale(live):
    live.checkpoint()
    descriptor = claimed_descriptor(live)
    commit_file(live.repo, "README.md", "newer\n")
    live.checkpoint()
    with pytest.raises(TaskError) as err:
        check_local_authority(descriptor, live.data_dir, "c1")
    assert err.value.code is ErrorCode.SUBJECT_STALE


# -- retry_uploads ------------------------------------------------------------------------------


def test_retry_uploads_resends_identical_bytes_and_gets_the_historical_view(live):
    live.checkpoint()
    first = live.collect()
    [attempt] = live.state.attempts()
    attempt.upload_path.unlink()  # as if the first upload's answer was lost
    [again] = retry_uploads(live.client, live.state)
    assert {k: again[k] for k in first["upload"]} == first["upload"]
    assert retry_uploads(live.client, live.state) == []  # nothing left to send
    assert [v["attempt"] for v in retry_uploads(live.client, live.state, every=True)] == [
        attempt.path.name
    ]
    named = retry_uploads(live.client, live.state, attempt_name=attempt.path.name)
    assert [v["attempt"] for v in named] == [attempt.path.name]


def test_retry_uploads_refuses_an_attempt_without_a_readable_descriptor(live):
    live.checkpoint()
    live.collect()
    [attempt] = live.state.attempts()
    attempt.upload_path.unlink()
    attempt.write_json(attempt.descriptor_path, {})
    with pytest.raises(TaskError) as err:
        retry_uploads(live.client, live.state)
    assert err.value.code is ErrorCode.INTEGRITY_FAILURE


def test_checkpoint_of_a_new_commit_supersedes_and_a_new_collection_follows(live):
    live.checkpoint()
    live.collect()
    commit_file(live.repo, "README.md", "two\n")
    result = checkpoint(live.client, change="c1", commit=clean_head(live.repo), **WORKFLOW)
    assert result["subject"]["change_version"] == 2
    assert live.collect()["qualification"]["qualified"] is True


# -- a failed collect never strands the Change ----------------------------------------------------


def _collectable(live, change="c1"):
    answer = qualification(live.client, change=change, **WORKFLOW)
    return answer["next"]["operation"] == "collector_claim"


class FailingAt(InProcessClient):
    """The in-process client; ``op`` fails once with ``code`` (optionally after it ran)."""

    def __init__(self, live, op, code=ErrorCode.SERVICE_UNREACHABLE, *, after=False):
        super().__init__(live.service, live.token)
        self.op, self.code, self.after, self.fired = op, code, after, False

    def _maybe(self, op):
        if op == self.op and not self.fired:
            self.fired = True
            raise TaskError(self.code, f"{op} failed on purpose")

    def workflow(self, repository, profile, op, body):
        if not self.after:
            self._maybe(op)
        answer = super().workflow(repository, profile, op, body)
        if self.after:
            self._maybe(op)
        return answer

    def upload(self, repository, profile, data):
        self._maybe("collector_upload")
        return super().upload(repository, profile, data)


@pytest.mark.backend_only(
    "sqlite",
    reason="a data dir without a journal exists only on SQLite; on PostgreSQL the journal is the database",
)
def test_a_failure_before_the_claim_claims_nothing(live, tmp_path):
    other = tmp_path / "not-the-service-data"
    live.checkpoint()
    with pytest.raises(TaskError) as err:
        live.collect(data_dir=other)
    assert err.value.code is ErrorCode.NOT_FOUND
    assert str(other) in err.value.message
    assert "Nothing was claimed" in err.value.message
    assert "collector_claim" not in live.client.calls
    assert _collectable(live)
    assert live.collect()["qualification"]["qualified"] is True


def test_a_runtime_that_is_not_the_pinned_one_is_refused_before_the_claim(
    authority, state, tmp_path
):
    live = Live(authority, state, tmp_path)
    try:
        from taskcore.evidence.profiles import install_collector_profile

        pinned = authority.profile(recipe("echo ok"), profile_id="cp-elsewhere")
        install_collector_profile(
            authority.storage,
            live.clock,
            profile=attrs.evolve(pinned, runtime_identity_sha256="0" * 64),
        )
        live.checkpoint()
        with pytest.raises(TaskError) as err:
            live.collect()
        assert err.value.code is ErrorCode.RUNTIME_MISMATCH
        assert "resolves here to" in err.value.message
        assert "collector_claim" not in live.client.calls
        assert _collectable(live)
    finally:
        live.close()


@pytest.mark.parametrize("op", ["collector_descriptor", "status"])
def test_a_failure_after_the_claim_releases_the_attempt_in_the_same_call(live, op):
    live.checkpoint()
    failing = FailingAt(live, op)
    with pytest.raises(TaskError) as err:
        collect_once(
            failing,
            change="c1",
            data_dir=live.data_dir,
            state=live.state,
            lease_ms=600_000,
            **WORKFLOW,
        )
    attempt_id = err.value.details["attempt_id"]
    assert f"attempt {attempt_id} was released" in err.value.message
    assert err.value.details["next_command"] == "agent-task collect c1"
    assert failing.calls.count("reconcile") == 1
    assert live.state.claim(attempt_id)["state"] == "released"
    assert _collectable(live)
    out = live.collect()
    assert out["attempt_id"] != attempt_id
    assert out["qualification"]["qualified"] is True


def test_a_transient_upload_failure_keeps_the_attempt_and_names_retry_upload(live):
    live.checkpoint()
    with pytest.raises(TaskError) as err:
        collect_once(
            FailingAt(live, "collector_upload"),
            change="c1",
            data_dir=live.data_dir,
            state=live.state,
            lease_ms=600_000,
            **WORKFLOW,
        )
    attempt_id = err.value.details["attempt_id"]
    [attempt] = live.state.attempts()
    assert err.value.details["next_command"] == (
        f"agent-task retry-upload --attempt {attempt.path.name}"
    )
    assert live.state.claim(attempt_id)["state"] == "upload_pending"
    [view] = retry_uploads(live.client, live.state, attempt_name=attempt.path.name)
    assert view["record_outcome"] == "passed"
    out = live.collect()  # next is collector_finalize now: it only finalizes
    assert out["collected"] is False
    assert out["qualification"]["qualified"] is True


def test_an_upload_the_authority_refuses_releases_the_attempt(live):
    class Corrupting(InProcessClient):
        def upload(self, repository, profile, data):
            flipped = bytearray(data)
            flipped[-1] ^= 0x01
            return super().upload(repository, profile, bytes(flipped))

    live.checkpoint()
    with pytest.raises(TaskError) as err:
        collect_once(
            Corrupting(live.service, live.token),
            change="c1",
            data_dir=live.data_dir,
            state=live.state,
            lease_ms=600_000,
            **WORKFLOW,
        )
    assert err.value.code in (ErrorCode.INVALID_SIGNATURE, ErrorCode.TRANSFER_MALFORMED)
    assert "was released" in err.value.message
    assert _collectable(live)
    assert live.collect()["qualification"]["qualified"] is True


def test_a_failed_release_names_reconcile_force(live):
    class Unreachable(FailingAt):
        def workflow(self, repository, profile, op, body):
            if op in ("collector_descriptor", "reconcile"):
                raise TaskError(ErrorCode.SERVICE_UNREACHABLE, f"{op} did not answer")
            return super().workflow(repository, profile, op, body)

    live.checkpoint()
    with pytest.raises(TaskError) as err:
        collect_once(
            Unreachable(live, "none"),
            change="c1",
            data_dir=live.data_dir,
            state=live.state,
            lease_ms=600_000,
            **WORKFLOW,
        )
    assert err.value.details["next_command"] == "agent-task reconcile c1 --force"
    out = reconcile_change(live.client, change="c1", force=True, **WORKFLOW)
    assert out["reconciled"]["attempt_id"] == err.value.details["attempt_id"]
    assert out["next_command"] == "agent-task collect c1"
    assert live.collect()["qualification"]["qualified"] is True


def test_reconcile_change_finds_an_expired_attempt_by_itself(live):
    live.checkpoint()
    answer = qualification(live.client, change="c1", **WORKFLOW)
    task = answer["tasks"][0]
    live.client.workflow(
        "acme",
        "default",
        "collector_claim",
        json.dumps(
            {
                "version": 1,
                "request_id": "claim-died",
                "task_id": task["task_id"],
                "task_digest": task["task_digest"],
                "execution_operation_id": "exec-died",
                "requested_lease_ms": 1_000,
            }
        ).encode(),
    )
    with pytest.raises(TaskError) as live_err:
        reconcile_change(live.client, change="c1", **WORKFLOW)
    assert "pass --force" in live_err.value.message
    live.clock.advance(5_000)
    stuck = qualification(live.client, change="c1", **WORKFLOW)
    assert stuck["next"] == {"operation": "reconcile", "task_id": task["task_id"]}
    out = reconcile_change(live.client, change="c1", **WORKFLOW)
    assert out["reconciled"]["task_id"] == task["task_id"]
    assert out["reconciled"]["new_fence"] == 2
    assert out["qualification"]["next"]["operation"] == "collector_claim"
    assert live.collect()["qualification"]["qualified"] is True


def test_reconcile_with_nothing_to_reconcile_names_the_right_command(live):
    live.checkpoint()
    with pytest.raises(TaskError) as err:
        reconcile_change(live.client, change="c1", **WORKFLOW)
    assert err.value.code is ErrorCode.CONFLICT
    assert err.value.details["next_command"] == "agent-task collect c1"


def test_a_failed_run_is_retried_on_the_same_revision_with_checkpoint_retry(
    authority, state, tmp_path
):
    live = Live(
        authority, state, tmp_path, command=recipe("echo 'No module named pytest' >&2; exit 1")
    )
    try:
        first = live.checkpoint()
        out = live.collect()
        assert out["record_outcome"] == "failed"
        assert "No module named pytest" in out["run"]["stderr_tail"]
        q = out["qualification"]
        [run] = q["run_failures"]
        assert run["exit_status"] == 1
        assert "No module named pytest" in run["stderr_tail"]
        assert out["next_command"] == "agent-task checkpoint c1"
        # The operator fixes the profile; the same commit is checkpointed again as a retry.
        from taskcore.collector.runtime import detect_sandbox
        from taskcore.evidence.profiles import install_collector_profile

        fixed = authority.profile(recipe("echo ok"), profile_id="cp-2", sandbox=detect_sandbox())
        install_collector_profile(authority.storage, live.clock, profile=fixed)
        assert live.checkpoint()["created"] is False
        again = checkpoint(live.client, change="c1", commit=head(live.repo), retry=True, **WORKFLOW)
        assert again["created"] is True
        assert again["subject"]["revision"] == first["subject"]["revision"]
        assert again["subject"]["change_version"] == first["subject"]["change_version"] + 1
        assert again["tasks"][0]["task_id"] != first["tasks"][0]["task_id"]
        assert live.collect()["qualification"]["qualified"] is True
        with pytest.raises(TaskError) as err:
            checkpoint(live.client, change="c1", commit=head(live.repo), retry=True, **WORKFLOW)
        assert err.value.code is ErrorCode.CONFLICT
        assert "nothing to retry" in err.value.message
    finally:
        live.close()


def test_reconcile_change_reconciles_an_unresolved_attempt_of_an_older_subject(live):
    live.checkpoint()
    answer = qualification(live.client, change="c1", **WORKFLOW)
    old = answer["tasks"][0]
    live.client.workflow(
        "acme",
        "default",
        "collector_claim",
        json.dumps(
            {
                "version": 1,
                "request_id": "claim-old",
                "task_id": old["task_id"],
                "task_digest": old["task_digest"],
                "execution_operation_id": "exec-old",
                "requested_lease_ms": 1_000,
            }
        ).encode(),
    )
    commit_file(live.repo, "more.txt", "more\n")
    live.checkpoint()
    live.clock.advance(5_000)
    stuck = qualification(live.client, change="c1", **WORKFLOW)
    assert stuck["next"] == {"operation": "reconcile", "task_id": old["task_id"]}
    assert {f["code"] for f in stuck["failures"]} == {"prior_subject_unresolved"}
    out = reconcile_change(live.client, change="c1", **WORKFLOW)
    assert out["reconciled"]["task_id"] == old["task_id"]
    assert out["reconciled"]["change_version"] == 1
    assert out["next_command"] == "agent-task collect c1"
    assert live.collect()["qualification"]["qualified"] is True


# -- remote mode: a clone, a pinned authority key, no data dir ------------------------------------


def _clone(live, tmp_path):
    target = tmp_path / "elsewhere" / "clone"
    target.parent.mkdir()
    git(target.parent, "clone", "-q", str(live.repo), str(target))
    return target


def _audience(live):
    with live.service.storage.read() as tx:
        return tx.collector.audience()


def test_remote_collection_without_a_pinned_authority_claims_nothing(live, tmp_path):
    live.checkpoint()
    with pytest.raises(TaskError) as err:
        live.collect(data_dir=None, clone=_clone(live, tmp_path))
    assert err.value.code is ErrorCode.NOT_FOUND
    assert "pin-authority" in err.value.message
    assert "collector_claim" not in live.client.calls


def test_remote_collection_verifies_the_descriptor_and_runs_on_the_clone(live, tmp_path):
    from taskcore.evidence.authority_key import load_authority_key

    live.state.pin_authority(
        public_key=load_authority_key(live.data_dir).public_key, audience=_audience(live)
    )
    live.checkpoint()
    out = live.collect(data_dir=None, clone=_clone(live, tmp_path))
    assert out["record_outcome"] == "passed"
    assert out["qualification"]["qualified"] is True


def test_a_descriptor_not_signed_by_the_pinned_key_is_refused_and_released(live, tmp_path):
    from taskcore.evidence.authority_key import ensure_authority_key

    impostor = ensure_authority_key(tmp_path / "impostor")
    live.state.pin_authority(public_key=impostor.public_key, audience=_audience(live))
    live.checkpoint()
    with pytest.raises(TaskError) as err:
        live.collect(data_dir=None, clone=_clone(live, tmp_path))
    assert err.value.code is ErrorCode.INVALID_SIGNATURE
    assert "was released" in err.value.message
    assert all(not a.has_reservation() for a in live.state.attempts())
    assert _collectable(live)
