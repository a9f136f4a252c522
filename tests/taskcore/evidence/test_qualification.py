"""The advisory qualification view (evidence.qualification)."""

from __future__ import annotations

from taskcore.actors import Tier
from taskcore.auth import issue_token, revoke_token
from taskcore.authority.gitrev import git_revision
from taskcore.errors import ErrorCode

from tests.taskcore.collector.conftest import commit_file, head
from tests.taskcore.evidence.flow import refused


def test_qualification_is_false_before_collection_and_names_collector_claim(flow):
    flow.checkpoint()
    q = flow.qualification()
    assert q["qualified"] is False
    assert q["subject_current"] is True
    assert q["receipt_digest"] is None
    assert q["revision"] == git_revision(flow.authority.repo, head(flow.authority.repo))
    assert [t["state"] for t in q["tasks"]] == ["pending"]
    assert q["next"] == {"operation": "collector_claim", "task_id": q["tasks"][0]["task_id"]}


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


def test_qualification_never_writes_journal_rows(flow):
    flow.run_to_receipt()
    with flow.service.storage.read() as tx:
        before = tx.collector.receipt_of_subject(1)
    flow.qualification()
    with flow.service.storage.read() as tx:
        assert tx.collector.receipt_of_subject(1) == before is None
