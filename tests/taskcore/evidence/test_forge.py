"""The status outbox: written in the transaction of the event it reports, idempotently."""

from __future__ import annotations

import pytest
from taskcore.auth import parse_token, revoke_token
from taskcore.authority import enroll_executor, revoke_executor
from taskcore.collector.state import key_id_for
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.forge import (
    ForgeStatusConfig,
    apply_forge_settings,
    check_target_url,
    context_of,
    render_target_url,
    status_for_receipt,
)
from taskcore.evidence.profiles import install_collector_profile
from taskcore.evidence.withdrawal import withdraw_published
from taskcore.signing import generate_seed, public_key_hex
from taskcore.store.sqlite_forge import SqliteForgeStore

from tests.taskcore.collector.conftest import Live, commit_file, head, recipe


def publish(live, **changes):
    fields = {
        "repository_id": "acme",
        "kind": "github",
        "api_url": "https://api.github.com",
        "project": "octo/acme",
        "token_file": "/etc/agent-task/github.token",
        "target_url": "https://board.example/{repository_id}/{change_id}/{receipt_digest}",
    }
    fields.update(changes)
    apply_forge_settings(
        live.service.storage,
        live.clock,
        workspace="w1",
        repository_id="acme",
        profile_id="default",
        config=ForgeStatusConfig(**fields),
    )


def rows(live):
    with live.service.storage.read() as tx:
        return list(reversed(tx.forge.rows("acme", 100)))


def summary(live):
    return [(r.state, r.status, r.cause) for r in rows(live)]


@pytest.fixture
def published(live):
    publish(live)
    return live


def qualify(live, change="c1"):
    live.checkpoint(change)
    out = live.collect(change)
    assert out["qualification"]["qualified"] is True
    return out["qualification"]["receipt_digest"]


def test_nothing_is_written_for_a_profile_that_does_not_publish(live):
    qualify(live)
    assert rows(live) == []


def test_a_claim_writes_pending_and_the_receipt_writes_success(published):
    receipt = qualify(published)
    assert summary(published) == [
        ("pending", "superseded", "task_started"),
        ("success", "queued", "receipt"),
    ]
    success = rows(published)[-1]
    assert success.commit == head(published.repo)
    assert success.context == context_of("default") == "agent-task/default"
    assert success.receipt_digest == receipt
    assert success.target_url == f"https://board.example/acme/c1/{receipt}"
    assert success.description.startswith("agent-task: qualified, receipt ")
    assert len(success.description) <= 140


def test_a_required_task_that_did_not_pass_writes_failure(authority, state, tmp_path):
    failing = Live(authority, state, tmp_path, command=recipe("exit 3"))
    try:
        publish(failing)
        failing.checkpoint()
        out = failing.collect()
        assert out["record_outcome"] == "failed"
        assert [r.state for r in rows(failing)][-1] == "failure"
        assert "did not pass (failed)" in rows(failing)[-1].description
    finally:
        failing.close()


def test_revoking_the_executor_writes_error_for_the_withdrawn_receipt(published):
    qualify(published)
    revoke_executor(
        published.authority.storage, published.clock, registration_id="reg-1", reason="lost"
    )
    last = rows(published)[-1]
    assert (last.state, last.cause) == ("error", "receipt_withdrawn")
    assert last.description == "agent-task: receipt withdrawn (executor_revoked)"


def test_revoking_the_originating_token_writes_error(published):
    qualify(published)
    revoke_token(published.service.storage, published.clock, parse_token(published.token)[0])
    assert (
        rows(published)[-1].description == "agent-task: receipt withdrawn (authorization_changed)"
    )


def test_re_enrollment_and_a_new_collector_profile_withdraw_too(published):
    qualify(published)
    enroll_executor(
        published.authority.storage,
        published.clock,
        registration_id="reg-1",
        executor_id="collector-1",
        repository_id="acme",
        step_id="tests",
        verification_key_id=key_id_for(public_key_hex(generate_seed())),
        public_key=public_key_hex(generate_seed()),
    )
    assert rows(published)[-1].state == "error"


def test_a_superseding_collector_profile_withdraws(published):
    qualify(published)
    install_collector_profile(
        published.authority.storage,
        published.clock,
        profile=published.authority.profile(recipe("echo other"), profile_id="cp-2"),
    )
    assert rows(published)[-1].description == (
        "agent-task: receipt withdrawn (collector_profile_changed)"
    )


def test_statuses_are_idempotent_per_commit_context_and_state(published):
    receipt = qualify(published)
    count = len(rows(published))
    with published.service.storage.write() as tx:
        subject = tx.authority.latest_subject("acme", "default", "c1")
        assert status_for_receipt(tx, published.clock.now_ms(), subject, receipt) is None
    assert len(rows(published)) == count
    revoke_executor(
        published.authority.storage, published.clock, registration_id="reg-1", reason="lost"
    )
    errors = [r for r in rows(published) if r.state == "error"]
    assert len(errors) == 1
    with published.service.storage.write() as tx:
        assert withdraw_published(tx, published.clock.now_ms()) == 0
    assert [r for r in rows(published) if r.state == "error"] == errors


def test_a_status_refused_by_the_forge_is_written_again_on_the_next_event(published):
    receipt = qualify(published)
    success = rows(published)[-1]
    with published.service.storage.write() as tx:
        tx.forge.update_delivery(
            success.seq,
            status="refused",
            attempts=1,
            next_attempt_at_ms=0,
            last_error="http_422",
            now_ms=published.clock.now_ms(),
        )
        subject = tx.authority.latest_subject("acme", "default", "c1")
        assert status_for_receipt(tx, published.clock.now_ms(), subject, receipt) is not None


def test_a_new_commit_gets_its_own_statuses(published):
    first = qualify(published)
    commit_file(published.repo, "more.txt", "more\n")
    second = qualify(published)
    commits = {r.commit for r in rows(published) if r.state == "success"}
    assert len(commits) == 2
    assert first != second


def test_a_status_that_cannot_be_written_rolls_back_the_receipt(published, monkeypatch):
    published.checkpoint()

    def broken(self, record):
        if record.state == "success":
            raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, "the outbox is gone")
        return real(self, record)

    real = SqliteForgeStore.enqueue
    monkeypatch.setattr(SqliteForgeStore, "enqueue", broken)
    with pytest.raises(TaskError):
        published.collect()
    with published.service.storage.read() as tx:
        subject = tx.authority.latest_subject("acme", "default", "c1")
        assert tx.collector.receipt_of_subject(subject.subject_seq) is None
    monkeypatch.setattr(SqliteForgeStore, "enqueue", real)
    out = published.collect()
    assert out["qualification"]["qualified"] is True
    assert rows(published)[-1].state == "success"


def test_settings_name_the_token_file_and_never_hold_a_token(published):
    with published.service.storage.read() as tx:
        stored = tx.forge.get_settings("acme", "default")
    assert stored.token_file == "/etc/agent-task/github.token"
    assert not hasattr(stored, "token")


def test_target_url_templates_are_checked_and_quoted():
    assert check_target_url("https://x.example/{commit}") == "https://x.example/{commit}"
    for bad in ("https://x.example/{secret}", "https://x.example/{", "ftp://x/{commit}"):
        with pytest.raises(TaskError):
            check_target_url(bad)
    assert render_target_url("https://x.example/{change_id}", {"change_id": "a b"}) == (
        "https://x.example/a%20b"
    )
    assert render_target_url("https://x.example/" + "y" * 300, {}) is None
    assert render_target_url(None, {}) is None
