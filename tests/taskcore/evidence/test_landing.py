"""workflow.landing_check in process: admission's checks, now, for a pushed revision."""

from __future__ import annotations

import json
import subprocess

import pytest
from taskcore.actors import Tier
from taskcore.auth import issue_token, parse_token, revoke_token
from taskcore.authority import install_requirement, register_profile, revoke_executor
from taskcore.authority.gitrev import git_revision
from taskcore.authority.operator import collector_test_requirement
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.landing import (
    LANDING_CODES,
    LandingCheckRequest,
    LandingCheckResponse,
    normalize_target,
)
from taskcore.service import Route

from tests.taskcore.collector.conftest import commit_file, git, head

ROUTE = Route(repository="acme", profile="default")


def check(live, commit, *, revision=None, ref="refs/heads/main", token=None):
    body = {
        "operation": "landing_check",
        "request": {
            "version": 1,
            "ref": ref,
            "commit": commit,
            "revision": revision or git_revision(live.repo, commit),
        },
    }
    answer = live.service.call_workflow(
        token or live.token, json.dumps(body).encode(), route=ROUTE
    ).json()
    assert answer["operation"] == "landing_check"
    return answer["result"]


@pytest.fixture
def qualified(live):
    live.checkpoint()
    out = live.collect()
    assert out["qualification"]["qualified"] is True
    return head(live.repo), out["qualification"]["receipt_digest"]


def test_a_qualified_revision_is_admitted_with_its_receipt(live, qualified):
    commit, receipt = qualified
    answer = check(live, commit)
    assert answer["admitted"] is True
    assert answer["code"] == "admitted"
    assert answer["receipt_digest"] == receipt
    assert answer["change_id"] == "c1"
    assert answer["failures"] == []
    assert answer["next"] == {"operation": "none"}
    assert answer["message"] == LANDING_CODES["admitted"]


def test_an_uncollected_subject_is_refused_with_qualifications_next(live):
    live.checkpoint()
    answer = check(live, head(live.repo))
    assert answer["admitted"] is False
    assert answer["code"] == "not_qualified"
    assert answer["receipt_digest"] is None
    assert {f["code"] for f in answer["failures"]} == {"not_collected"}
    assert answer["next"]["operation"] == "collector_claim"


def test_a_revision_nobody_checkpointed_is_refused_with_next_checkpoint(live, qualified):
    other = commit_file(live.repo, "new.txt", "not checkpointed\n")
    answer = check(live, other)
    assert (answer["admitted"], answer["code"]) == (False, "revision_not_checkpointed")
    assert answer["change_id"] is None
    assert answer["next"] == {"operation": "checkpoint"}


def test_revoking_the_executor_after_the_receipt_refuses_the_same_revision(live, qualified):
    commit, _ = qualified
    assert check(live, commit)["admitted"] is True
    revoke_executor(live.authority.storage, live.clock, registration_id="reg-1", reason="lost")
    answer = check(live, commit)
    assert (answer["admitted"], answer["code"]) == (False, "not_qualified")
    assert {f["code"] for f in answer["failures"]} == {"executor_revoked"}


def test_revoking_the_originating_token_refuses_the_revision(live, qualified):
    commit, _ = qualified
    hook_token = issue_token(live.service.storage, live.clock, workspace="w1", tier=Tier.AGENT)
    revoke_token(live.service.storage, live.clock, parse_token(live.token)[0])
    answer = check(live, commit, token=hook_token.token)
    assert answer["admitted"] is False
    assert {f["code"] for f in answer["failures"]} == {"authorization_changed"}


def test_a_changed_requirement_makes_the_subject_not_current(live, qualified):
    commit, _ = qualified
    changed = install_requirement(
        live.authority.storage,
        live.clock,
        repository_id="acme",
        requirement=collector_test_requirement("tests", "a stricter bar"),
    )
    register_profile(
        live.authority.storage,
        live.clock,
        repository_id="acme",
        profile_id="default",
        target="main",
        requirement_digest=changed.requirement_digest,
    )
    answer = check(live, commit)
    assert (answer["admitted"], answer["code"]) == (False, "subject_not_current")
    assert answer["change_id"] == "c1"
    assert answer["next"] == {"operation": "checkpoint"}


def test_another_ref_than_the_profiles_target_is_refused(live, qualified):
    commit, _ = qualified
    answer = check(live, commit, ref="refs/heads/release")
    assert (answer["admitted"], answer["code"]) == (False, "target_mismatch")


def test_a_revision_that_is_not_the_commits_content_is_refused(live, qualified):
    commit, _ = qualified
    answer = check(live, commit, revision="0" * 64)
    assert (answer["admitted"], answer["code"]) == (False, "revision_mismatch")


def test_a_commit_the_authority_lacks_is_judged_by_the_revision_sent(live, qualified):
    commit, receipt = qualified
    # Same content, another commit object (another message): the revision is the same.
    git(live.repo, "commit", "-q", "--amend", "-m", "same tree, other message")
    twin = head(live.repo)
    git(live.repo, "reset", "-q", "--hard", commit)
    git(live.repo, "reflog", "expire", "--expire=now", "--all")
    git(live.repo, "gc", "-q", "--prune=now")
    with pytest.raises(subprocess.CalledProcessError):
        git(live.repo, "cat-file", "-t", twin)
    answer = check(live, twin, revision=git_revision(live.repo, commit))
    assert (answer["admitted"], answer["receipt_digest"]) == (True, receipt)


def test_a_superseded_subject_still_admits_when_the_newer_subject_has_the_same_revision(
    live, qualified
):
    commit, _ = qualified
    # A second Change at the same commit, not collected: the first Change still admits.
    live.checkpoint("c2")
    assert check(live, commit)["admitted"] is True


def test_every_check_is_audited_once(live, qualified):
    commit, _ = qualified
    before = live.service.audit_count(operation="workflow.landing_check")
    check(live, commit)
    check(live, commit, ref="refs/heads/other")
    assert live.service.audit_count(operation="workflow.landing_check") == before + 2


def test_a_malformed_request_is_a_typed_error_and_audited(live):
    body = {
        "operation": "landing_check",
        "request": {"version": 1, "ref": "refs/heads/../x", "commit": "HEAD", "revision": "x"},
    }
    before = live.service.audit_count(operation="workflow.landing_check")
    with pytest.raises(TaskError) as err:
        live.service.call_workflow(live.token, json.dumps(body).encode(), route=ROUTE)
    assert err.value.code in (ErrorCode.INVALID_VALUE, ErrorCode.BAD_INPUT)
    assert live.service.audit_count(operation="workflow.landing_check") == before + 1


def test_the_response_type_names_every_wire_field():
    import attrs
    from taskcore.codec import wire_name

    assert [wire_name(f) for f in attrs.fields(LandingCheckResponse)] == [
        "admitted",
        "code",
        "message",
        "ref",
        "commit",
        "revision",
        "change_id",
        "receipt_digest",
        "failures",
        "next",
    ]
    assert [wire_name(f) for f in attrs.fields(LandingCheckRequest)] == [
        "version",
        "ref",
        "commit",
        "revision",
    ]
    assert normalize_target("refs/tags/v1") == "refs/tags/v1"


def test_a_failed_run_is_refused_with_qualifications_failure_code(authority, state, tmp_path):
    from tests.taskcore.collector.conftest import Live, recipe

    failing = Live(authority, state, tmp_path, command=recipe("exit 2"))
    try:
        failing.checkpoint()
        failing.collect()
        answer = check(failing, head(failing.repo))
        assert (answer["admitted"], answer["code"]) == (False, "not_qualified")
        assert [f["code"] for f in answer["failures"]] == ["collector_not_passed"]
        assert answer["next"] == {"operation": "none"}
    finally:
        failing.close()
