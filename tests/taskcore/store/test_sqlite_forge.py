"""The forge store on SQLite: settings, the outbox key, leases and the published successes."""

from __future__ import annotations

import attrs
import pytest
from taskcore.store import open_storage
from taskcore.store.forge_api import ForgeSettingsRecord, OutboxRecord


@pytest.fixture
def storage(tmp_path):
    s = open_storage(tmp_path / "data", create=True)
    yield s
    s.close()


def row(commit="a" * 40, state="success", at=0, **changes):
    fields = dict(
        seq=0,
        repository_id="acme",
        profile_id="default",
        subject_seq=1,
        change_id="c1",
        commit=commit,
        revision="b" * 64,
        context="agent-task/default",
        state=state,
        cause="receipt",
        description="d",
        target_url=None,
        receipt_digest=None,
        kind="github",
        api_url="https://api.github.com",
        project="o/r",
        token_file="/t",
        token_header="bearer",
        status="queued",
        attempts=0,
        next_attempt_at_ms=at,
        last_error=None,
        created_at_ms=at,
        updated_at_ms=at,
    )
    fields.update(changes)
    return OutboxRecord(**fields)


def test_settings_are_put_replaced_and_deleted(storage):
    record = ForgeSettingsRecord(
        repository_id="acme",
        profile_id="default",
        kind="gitlab",
        api_url="https://gitlab.example/api/v4",
        project="42",
        token_file="/t",
        token_header="private-token",
        target_url=None,
        updated_at_ms=1,
    )
    with storage.write() as tx:
        tx.forge.put_settings(record)
        tx.forge.put_settings(attrs.evolve(record, project="43"))
        assert tx.forge.get_settings("acme", "default").project == "43"
        assert tx.forge.delete_settings("acme", "default") is True
        assert tx.forge.delete_settings("acme", "default") is False
        assert tx.forge.get_settings("acme", "default") is None


def test_a_newer_status_supersedes_queued_rows_of_its_key_only(storage):
    with storage.write() as tx:
        first = tx.forge.enqueue(row(state="pending"))
        other = tx.forge.enqueue(row(commit="c" * 40, state="pending"))
        newer = tx.forge.enqueue(row(state="success", at=5))
        assert tx.forge.get(first).status == "superseded"
        assert tx.forge.get(other).status == "queued"
        assert tx.forge.latest("acme", "default", "a" * 40, "agent-task/default").seq == newer


def test_due_rows_come_oldest_first_and_a_lease_hides_them(storage):
    with storage.write() as tx:
        a = tx.forge.enqueue(row(commit="1" * 40, at=10))
        b = tx.forge.enqueue(row(commit="2" * 40, at=20))
        assert [r.seq for r in tx.forge.due(100, 10)] == [a, b]
        assert [r.seq for r in tx.forge.due(15, 10)] == [a]
        tx.forge.update_delivery(
            a, status="queued", attempts=0, next_attempt_at_ms=1000, last_error=None, now_ms=50
        )
        assert [r.seq for r in tx.forge.due(100, 10)] == [b]
        assert tx.forge.next_due_at() == 20


def test_published_successes_are_the_latest_success_of_each_key(storage):
    with storage.write() as tx:
        kept = tx.forge.enqueue(row(commit="1" * 40))
        tx.forge.enqueue(row(commit="2" * 40))
        tx.forge.enqueue(row(commit="2" * 40, state="error"))
        refused = tx.forge.enqueue(row(commit="3" * 40, status="refused"))
        assert [r.seq for r in tx.forge.published_successes("acme", 10)] == [kept]
        assert tx.forge.published_successes("other", 10) == ()
        assert refused not in [r.seq for r in tx.forge.published_successes(None, 10)]
        assert len(tx.forge.rows(None, 10)) == 4
