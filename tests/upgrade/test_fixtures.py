"""Every journal an earlier release wrote opens with this release, keeps every row, and works.

For each fixture under ``tests/fixtures/journals/`` (one per release; a new release only adds a
folder) and each backend: the SQLite data dir is copied and opened, the PostgreSQL dump is
restored into a new database and opened; the migrations run forward. Then:

* every table the manifest counts still holds that many rows, and the audit events keep their
  sequence numbers and per-operation counts;
* the schema is this release's, and the same as a fresh journal's (tables, columns, indexes,
  constraints);
* every row the manifest names reads back through the public reads (``observe.whoami`` per
  token, ``agenttask.get/list``, ``agenttask.gate.get``, ``workflow.task``,
  ``workflow.qualification``, ``observe.audit``) as the release left it;
* new work runs on it: a queue task created, claimed and finished ``DONE``, a reconciled
  workflow task claimed again, a qualification.

The service reads with a clock at the fixture's ``read_at_ms`` (the end of its run), so the
live leases it held read as they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from taskcore.clock import FakeClock
from taskcore.dbadmin import verify_journal
from taskcore.service import Service
from taskcore.store.postgres.migrations import COMPONENTS as PG_COMPONENTS
from taskcore.store.storage import DATABASE_ENV, journal_components, open_storage
from taskhttp.app import create_app
from taskhttp.server import BackgroundServer

from tests.conftest import BACKENDS, PostgresServer, _need_server
from tests.upgrade.support import (
    Client,
    ScratchDatabase,
    copy_data_dir,
    fixture_dirs,
    manifest,
    postgres_counts,
    postgres_schema,
    restore_dump,
    sqlite_counts,
    sqlite_schema,
)

FIXTURES = fixture_dirs()
WORKSPACE = "acme"  # generate.py's constants for the fixtures that predate them in the manifest
REPOSITORY = "calc"


def test_there_is_a_fixture_for_the_first_release() -> None:
    assert "0.1.0-f3fac1f" in [f.name for f in FIXTURES]


@attrs.define
class Upgraded:
    """One fixture, upgraded and served."""

    fixture: Path
    backend: str
    facts: dict[str, Any]  # the manifest's section for this backend
    stored: dict[str, Any]  # counts as restored, before this release opened it
    opened: dict[str, Any]  # counts after this release opened (and migrated) it
    schema: Any
    fresh_schema: Any
    versions: dict[str, int]
    client: Client
    clock: FakeClock
    data: Path
    database: str | None

    @property
    def repository(self) -> str:
        return str(self.facts.get("repository", REPOSITORY))


def _fresh_schema(backend: str, tmp: Path, scratch: ScratchDatabase | None) -> Any:
    if backend == "sqlite":
        open_storage(tmp / "fresh", create=True, database="").close()
        return sqlite_schema(tmp / "fresh" / "journal.sqlite")
    assert scratch is not None
    scratch.reset_schema()
    open_storage(tmp / "fresh", create=True, database=scratch.url).close()
    return postgres_schema(scratch.url)


@pytest.fixture(
    scope="module",
    params=[(f, b) for f in FIXTURES for b in BACKENDS],
    ids=[f"{f.name}-{b}" for f in FIXTURES for b in BACKENDS],
)
def upgraded(
    request: pytest.FixtureRequest,
    postgres_server: PostgresServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Upgraded]:
    fixture, backend = request.param
    facts = manifest(fixture)["backends"][backend]
    tmp = tmp_path_factory.mktemp(f"{fixture.name}-{backend}")
    created: list[ScratchDatabase] = []
    with pytest.MonkeyPatch.context() as patch:
        if backend == "postgresql":
            _need_server(request.config, postgres_server)
            stem = f"{postgres_server.name}_up_{fixture.name.replace('.', '_').replace('-', '_')}"
            db = ScratchDatabase(postgres_server.admin_url, stem[:60]).create()
            fresh = ScratchDatabase(postgres_server.admin_url, stem[:56] + "_new").create()
            created += [db, fresh]
            restore_dump(fixture / "postgresql" / "dump.sql", db.url)
            patch.setenv(DATABASE_ENV, db.url)
            data = copy_data_dir(fixture / "postgresql" / "data", tmp / "data")
            stored = postgres_counts(db.url)
            fresh_schema = _fresh_schema(backend, tmp, fresh)
        else:
            patch.delenv(DATABASE_ENV, raising=False)
            data = copy_data_dir(fixture / "sqlite" / "data", tmp / "data")
            stored = sqlite_counts(data / "journal.sqlite")
            fresh_schema = _fresh_schema(backend, tmp, None)
        clock = FakeClock(int(facts["read_at_ms"]))
        service = Service.open(data, clock=clock)
        versions = service.storage.schema()
        if backend == "postgresql":
            opened, schema = postgres_counts(db.url), postgres_schema(db.url)
        else:
            opened = sqlite_counts(data / "journal.sqlite")
            schema = sqlite_schema(data / "journal.sqlite")
        server = BackgroundServer(create_app(service))
        url = server.start()
        try:
            yield Upgraded(
                fixture=fixture,
                backend=backend,
                facts=facts,
                stored=stored,
                opened=opened,
                schema=schema,
                fresh_schema=fresh_schema,
                versions=versions,
                client=Client(url, facts["tokens"]),
                clock=clock,
                data=data,
                database=db.url if backend == "postgresql" else None,
            )
        finally:
            server.stop()
            service.close()
            for scratch in created:
                scratch.drop()


# -- nothing lost --------------------------------------------------------------------------


def test_the_fixture_restores_as_its_manifest_says(upgraded: Upgraded) -> None:
    assert upgraded.stored["counts"] == upgraded.facts["counts"]
    assert upgraded.stored["audit_operations"] == upgraded.facts["audit_operations"]


def test_every_row_is_still_there_after_the_upgrade(upgraded: Upgraded) -> None:
    for table, count in upgraded.facts["counts"].items():
        assert table in upgraded.opened["counts"], f"table {table} is gone"
        if table == "schema_versions":  # one row per component: a release may add components
            assert upgraded.opened["counts"][table] >= count, table
            continue
        assert upgraded.opened["counts"][table] == count, table
    assert upgraded.opened["audit_seq"] == upgraded.facts["audit_seq"]
    assert upgraded.opened["audit_operations"] == upgraded.facts["audit_operations"]


def test_the_schema_is_this_releases_and_a_fresh_journals(upgraded: Upgraded) -> None:
    components = journal_components() if upgraded.backend == "sqlite" else PG_COMPONENTS
    assert upgraded.versions == {c.name: c.latest for c in components}
    for name, version in upgraded.facts["schema"].items():
        assert upgraded.versions[name] >= version, name  # forward only
    assert upgraded.schema
    assert upgraded.schema == upgraded.fresh_schema


def test_the_upgraded_journal_passes_db_verify(upgraded: Upgraded) -> None:
    report = verify_journal(upgraded.data, database=upgraded.database or "")
    assert report["ok"] is True, report["checks"]
    assert report["backend"] == upgraded.backend
    assert report["audit"]["events"] >= upgraded.facts["counts"]["audit_event"]


# -- every row reads back ------------------------------------------------------------------


def test_every_token_still_authenticates_and_the_revoked_one_does_not(
    upgraded: Upgraded,
) -> None:
    for name, token in upgraded.facts["tokens"].items():
        status, answer = upgraded.client.post("/v/observe.whoami", {}, name)
        if token["revoked"]:
            assert status == 401, (name, answer)
            assert answer["code"] == "TOKEN_REVOKED"
            continue
        assert status == 200, (name, answer)
        assert answer["tokenId"] == token["token_id"]
        assert (answer["tier"], answer["autonomy"]) == (token["tier"], token["autonomy"])
        assert answer["workspace"] == upgraded.facts.get("workspace", WORKSPACE)


def test_every_queue_task_reads_back_in_its_status(upgraded: Upgraded) -> None:
    client = upgraded.client
    tasks = upgraded.facts["queue"]
    statuses = set()
    for name, entry in tasks.items():
        got = client.verb("agenttask.get", {"taskId": entry["taskId"]}, "admin")
        assert got["status"] == entry["status"], name
        statuses.add(got["status"])
    assert statuses == {"QUEUED", "LEASED", "ESCALATED", "DONE", "FAILED", "CANCELLED"}
    listed: set[str] = set()
    cursor = None
    while True:
        page = client.verb("agenttask.list", {"cursor": cursor, "limit": 5}, "admin")
        listed |= {t["taskId"] for t in page["tasks"]}
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert listed == {e["taskId"] for e in tasks.values()}
    assert upgraded.facts["counts"]["queue_task"] == len(listed)


def test_every_approval_gate_reads_back_in_its_status(upgraded: Upgraded) -> None:
    gates = upgraded.facts["gates"]
    assert {g["status"] for g in gates.values()} == {
        "PENDING",
        "APPROVED",
        "REJECTED",
        "CONSUMED",
        "VOIDED",
    }
    for name, gate in gates.items():
        got = upgraded.client.verb("agenttask.gate.get", {"gateId": gate["gateId"]}, "admin")
        assert (got["status"], got["taskId"]) == (gate["status"], gate["taskId"]), name


def test_every_workflow_task_and_attempt_reads_back_in_its_state(upgraded: Upgraded) -> None:
    task_states, attempt_states = set(), set()
    for change, steps in upgraded.facts["workflow"].items():
        profile = upgraded.facts["subjects"][change]["profile"]
        revision = upgraded.facts["subjects"][change]["revision"]
        for step, entry in steps.items():
            got = upgraded.client.workflow(
                upgraded.repository,
                profile,
                "task",
                {"version": 1, "task_id": entry["task_id"]},
                "agent",
            )
            assert (got["step_id"], got["change_id"], got["state"]) == (
                step,
                change,
                entry["state"],
            )
            attempt = got["current_attempt"]
            if entry["attempt_id"] is None:
                assert attempt is None
                continue
            assert attempt["attempt"]["attempt_id"] == entry["attempt_id"]
            assert attempt["state"] == entry["attempt_state"]
            task_states.add(got["state"])
            attempt_states.add(attempt["state"])
        assert revision
    assert task_states >= {"claimed", "finished", "cancelled", "pending"}
    assert attempt_states == {"leased", "finished", "cancelled", "replaced"}


def test_the_receipt_still_qualifies_its_subject(upgraded: Upgraded) -> None:
    for receipt in upgraded.facts["receipts"]:
        got = upgraded.client.workflow(
            upgraded.repository,
            receipt["profile"],
            "qualification",
            {"version": 1, "change_id": receipt["change_id"]},
            "agent",
        )
        assert got["qualified"] is True, got
        assert got["receipt_digest"] == receipt["receipt_digest"]
        assert got["revision"] == upgraded.facts["subjects"][receipt["change_id"]]["revision"]


def test_the_audit_feed_reads_every_event_of_the_workspace(upgraded: Upgraded) -> None:
    first, last = upgraded.facts["audit_seq"]
    seen: list[int] = []
    cursor = None
    while True:
        page = upgraded.client.verb("observe.audit", {"cursor": cursor, "limit": 50}, "admin")
        seen += [e["seq"] for e in page["events"] if e["seq"] <= last]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == sorted(seen, reverse=True)
    assert len(set(seen)) == len(seen)
    assert all(first <= s <= last for s in seen)
    # The workspace's events: every queue call of the run was made with a workspace token.
    assert len(seen) >= sum(
        n for op, n in upgraded.facts["audit_operations"].items() if op.startswith("agenttask.")
    )
    for entry in upgraded.facts["queue"].values():
        trail = upgraded.client.verb("observe.audit", {"taskId": entry["taskId"]}, "admin")
        assert trail["events"], entry
        assert all(e["taskId"] == entry["taskId"] for e in trail["events"])


# -- and it still works --------------------------------------------------------------------


def test_a_new_task_is_created_claimed_and_done(upgraded: Upgraded) -> None:
    client = upgraded.client
    task = client.verb("agenttask.create", {"verb": "agent.run", "payload": {"n": 1}}, "member")
    claimed = client.verb("agenttask.claim", {"taskId": task["taskId"]}, "agent")
    assert claimed["task"]["status"] == "LEASED"
    done = client.verb(
        "agenttask.checkpoint",
        {
            "taskId": task["taskId"],
            "fence": claimed["lease"]["fence"],
            "status": "DONE",
            "checkpoint": {"output": "after the upgrade"},
        },
        "agent",
    )
    assert done["status"] == "DONE"
    assert client.verb("agenttask.get", {"taskId": task["taskId"]}, "admin")["status"] == "DONE"


def test_a_reconciled_workflow_task_is_claimed_again(upgraded: Upgraded) -> None:
    entry = next(
        (change, step, e)
        for change, steps in upgraded.facts["workflow"].items()
        for step, e in steps.items()
        if e["attempt_state"] == "replaced"
    )
    change, _, task = entry
    profile = upgraded.facts["subjects"][change]["profile"]
    client = upgraded.client
    view = client.workflow(
        upgraded.repository, profile, "task", {"version": 1, "task_id": task["task_id"]}, "agent"
    )
    claimed = client.workflow(
        upgraded.repository,
        profile,
        "claim",
        {
            "version": 1,
            "request_id": "after-upgrade-claim",
            "task_id": task["task_id"],
            "task_digest": view["task_digest"],
            "execution_operation_id": "after-upgrade-op",
            "requested_lease_ms": 60_000,
            "executor": None,
        },
        "agent",
    )
    assert claimed["attempt"]["fence"] > 1
    again = client.workflow(
        upgraded.repository, profile, "task", {"version": 1, "task_id": task["task_id"]}, "agent"
    )
    assert again["state"] == "claimed"
    assert again["current_attempt"]["state"] == "leased"
