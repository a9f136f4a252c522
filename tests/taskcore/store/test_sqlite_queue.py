"""The SQLite queue store: constraints, compare-and-set, workspace predicates, query plans."""

from __future__ import annotations

import apsw
import attrs
import pytest
from taskcore import ErrorCode, TaskError
from taskcore.store import open_storage
from taskcore.store.queue_api import (
    ExtPatch,
    ExtRecord,
    MatterReaderRecord,
    MatterRecord,
    PhaseRecord,
    TaskRecord,
)


@pytest.fixture
def storage(tmp_path):
    s = open_storage(tmp_path / "data", create=True)
    yield s
    s.close()


def _task(task_id: str, workspace: str = "w", **over) -> TaskRecord:
    base = {
        "task_id": task_id,
        "workspace": workspace,
        "verb": "agent.run",
        "payload_json": None,
        "status": "QUEUED",
        "priority": 0,
        "autonomy_ceiling": 1,
        "depth": 0,
        "parent_task_id": None,
        "run_id": None,
        "matter_id": None,
        "matter_step_id": None,
        "created_by": "c",
        "created_at_ms": 100,
        "updated_at_ms": 100,
    }
    return TaskRecord(**{**base, **over})


def _leased(task: TaskRecord, owner: str, expires: int) -> TaskRecord:
    return attrs.evolve(
        task,
        status="LEASED",
        lease_owner=owner,
        lease_expires_at_ms=expires,
        heartbeat_at_ms=0,
        first_leased_at_ms=0,
        fence=task.fence + 1,
    )


def _phase(task_id: str, index: int, at: int, workspace: str = "w") -> PhaseRecord:
    return PhaseRecord(
        workspace=workspace,
        task_id=task_id,
        phase_index=index,
        phase_key="k",
        state_json="{}",
        outputs_json="[]",
        written_by="x",
        created_at_ms=at,
    )


def _ext(task_id: str, workspace: str = "w") -> ExtRecord:
    return ExtRecord(
        agent_task_id=task_id,
        workspace=workspace,
        title="t",
        prompt="p",
        source_type="s",
        source_id=None,
        source_matter_id=None,
        source_step_id=None,
        child_key=None,
        priority=0,
        requires_human_review=False,
        created_at_ms=1,
        updated_at_ms=1,
    )


# -- constraints ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "over",
    [
        {"status": "DONE"},  # terminal without finished_at
        {"status": "QUEUED", "finished_at_ms": 5},  # finished_at without a terminal status
        {"status": "LEASED"},  # leased without an owner
        {"lease_owner": "x", "lease_expires_at_ms": 1, "first_leased_at_ms": 1},  # owner, QUEUED
        {"status": "NOPE"},
        {"depth": 6},
    ],
)
def test_the_database_refuses_rows_that_break_the_invariants(storage, over):
    with pytest.raises(apsw.ConstraintError), storage.write() as tx:
        tx.queue.insert_task(_task("t1", **over))


def test_insert_assigns_seq_and_get_is_workspace_scoped(storage):
    with storage.write() as tx:
        first = tx.queue.insert_task(_task("t1"))
        second = tx.queue.insert_task(_task("t2"))
        assert second.seq > first.seq
        assert tx.queue.get_task("w", "t1") == first
        assert tx.queue.get_task("other", "t1") is None


def test_a_duplicate_task_id_is_already_exists(storage):
    with storage.write() as tx:
        tx.queue.insert_task(_task("t1"))
        with pytest.raises(TaskError) as info:
            tx.queue.insert_task(_task("t1", workspace="other"))
    assert info.value.code is ErrorCode.ALREADY_EXISTS


def test_update_is_a_compare_and_set_on_the_version(storage):
    with storage.write() as tx:
        stored = tx.queue.insert_task(_task("t1"))
        assert tx.queue.update_task(attrs.evolve(stored, priority=5))
        assert not tx.queue.update_task(attrs.evolve(stored, priority=9))  # stale version
        assert not tx.queue.update_task(attrs.evolve(stored, workspace="other", version=1))
        row = tx.queue.get_task("w", "t1")
    assert (row.priority, row.version) == (5, 1)


_CHANGES = [
    {},  # nothing but the version
    {"priority": 4, "updated_at_ms": 7},
    {
        "status": "LEASED",
        "lease_owner": "o",
        "lease_expires_at_ms": 90,
        "heartbeat_at_ms": 7,
        "first_leased_at_ms": 7,
        "fence": 1,
        "exercised_autonomy": 1,
        "updated_at_ms": 7,
    },
    {"status": "CANCELLED", "finished_at_ms": 7, "last_error": "x", "checkpoint_json": "{}"},
    {"payload_json": '{"a":1}', "escalation_gate_id": "g", "status": "ESCALATED"},
    {"priority": 0, "updated_at_ms": 100},  # the values it already has
]


@pytest.mark.parametrize("changes", _CHANGES)
def test_an_update_of_the_changed_columns_stores_what_a_full_update_stores(storage, changes):
    """``update_task(next, before=read)`` writes the changed columns only, same row as a full write."""
    with storage.write() as tx:
        q = tx.queue
        full = q.insert_task(_task("full"))
        lean = q.insert_task(_task("lean"))
        assert q.update_task(attrs.evolve(full, **changes))
        assert q.update_task(attrs.evolve(lean, version=1, **changes), before=lean)
        a, b = q.get_task("w", "full"), q.get_task("w", "lean")
    assert attrs.evolve(a, task_id="lean", seq=b.seq) == b
    assert b.version == 1


@pytest.mark.backend_only("sqlite", reason="reads the statement with apsw's exec trace")
def test_an_update_with_before_sets_only_the_changed_columns(storage):
    seen: list[str] = []
    with storage.write() as tx:
        stored = tx.queue.insert_task(_task("t"))
        tx.conn.exec_trace = lambda _c, sql, _b: seen.append(sql) or True
        try:
            tx.queue.update_task(attrs.evolve(stored, priority=3, version=1), before=stored)
        finally:
            tx.conn.exec_trace = None
    assert seen == [
        "UPDATE queue_task SET priority = ?, version = version + 1 "
        "WHERE workspace = ? AND task_id = ? AND version = ?"
    ]


def test_an_update_with_before_is_a_compare_and_set_on_the_version_read(storage):
    with storage.write() as tx:
        q = tx.queue
        read = q.insert_task(_task("t"))
        assert q.update_task(attrs.evolve(read, priority=5, version=1), before=read)
        assert not q.update_task(attrs.evolve(read, priority=9, version=1), before=read)  # stale
        with pytest.raises(TaskError) as info:  # not the next version of what was read
            q.update_task(attrs.evolve(read, priority=9), before=read)
        assert info.value.code is ErrorCode.INTERNAL
        with pytest.raises(TaskError):
            q.update_task(attrs.evolve(read, task_id="other", version=1), before=read)
        row = q.get_task("w", "t")
    assert (row.priority, row.version) == (5, 1)


# -- claimNext selection ----------------------------------------------------------------------------


def test_best_claimable_orders_by_priority_then_age_then_insertion(storage):
    with storage.write() as tx:
        q = tx.queue
        q.insert_task(_task("old", created_at_ms=1))
        q.insert_task(_task("tie-a", created_at_ms=2))
        q.insert_task(_task("tie-b", created_at_ms=2))
        q.insert_task(_task("urgent", created_at_ms=9, priority=3))
        order = []
        for _ in range(4):
            best = q.best_claimable("w", max_autonomy=3, autonomy=1, verb=None, now_ms=0)
            order.append(best.task_id)
            q.update_task(_leased(best, "x", 10**15))
        assert q.best_claimable("w", max_autonomy=3, autonomy=1, verb=None, now_ms=0) is None
    assert order == ["urgent", "old", "tie-a", "tie-b"]


def test_best_claimable_respects_the_ceiling_band_verb_and_workspace(storage):
    with storage.write() as tx:
        q = tx.queue
        q.insert_task(_task("c0", autonomy_ceiling=0))
        q.insert_task(_task("c2", autonomy_ceiling=2, verb="repo.review"))
        q.insert_task(_task("elsewhere", workspace="other", autonomy_ceiling=3))

        def best(autonomy, verb=None):
            t = q.best_claimable("w", max_autonomy=3, autonomy=autonomy, verb=verb, now_ms=0)
            return None if t is None else t.task_id

        assert best(0) == "c0"
        assert best(1) == "c2"
        assert best(3) is None
        assert best(0, "agent.run") == "c0"
        assert best(0, "repo.review") == "c2"


def test_a_claim_for_any_verb_takes_the_best_of_every_ready_verb(storage):
    # The best across verbs and ceilings wins (the same priority and creation time: the one
    # inserted first); a paused verb's never.
    with storage.write() as tx:
        q = tx.queue
        for i, (verb, priority, ceiling, created) in enumerate(
            (
                ("a.one", 1, 1, 0),
                ("b.two", 5, 2, 3),
                ("b.two", 5, 1, 2),
                ("c.three", 5, 1, 2),
                ("d.four", 9, 0, 0),
                ("e.five", 7, 3, 0),
            )
        ):
            q.insert_task(
                _task(
                    f"t{i}",
                    verb=verb,
                    priority=priority,
                    autonomy_ceiling=ceiling,
                    created_at_ms=created,
                )
            )
        q.insert_task(_task("far", workspace="x", verb="a.one", priority=99))

        def best(autonomy, max_autonomy=3, paused=()):
            t = q.best_claimable(
                "w",
                max_autonomy=max_autonomy,
                autonomy=autonomy,
                verb=None,
                now_ms=0,
                paused=paused,
            )
            return None if t is None else t.task_id

        assert best(0) == "t4"
        assert best(1) == "t5"
        assert best(1, max_autonomy=2) == "t2"  # same key as t3: inserted first
        assert best(1, max_autonomy=2, paused=("b.two",)) == "t3"
        assert best(1, max_autonomy=2, paused=("b.two", "c.three")) == "t0"
        assert best(2, max_autonomy=1) is None
        assert best(1, paused=("a.one", "b.two", "c.three", "e.five")) is None


def test_best_claimable_merges_expired_leases_by_priority(storage):
    with storage.write() as tx:
        q = tx.queue
        q.insert_task(_task("queued", created_at_ms=5))
        stale = q.insert_task(_task("stale", created_at_ms=1, priority=1))
        q.update_task(_leased(stale, "gone", expires=50))
        live = q.insert_task(_task("live", created_at_ms=0, priority=9))
        q.update_task(_leased(live, "busy", expires=500))
        pick = q.best_claimable("w", max_autonomy=3, autonomy=1, verb=None, now_ms=50)
        assert pick.task_id == "stale"
        pick = q.best_claimable("w", max_autonomy=3, autonomy=1, verb=None, now_ms=49)
        assert pick.task_id == "queued"


def _plans(storage, sql: str, args: tuple) -> list[str]:
    with storage.read() as tx:
        return [str(r[3]) for r in tx.conn.execute("EXPLAIN QUERY PLAN " + sql, args)]


@pytest.mark.backend_only(
    "sqlite",
    reason="SQLite query plans (EXPLAIN QUERY PLAN); PostgreSQL's claim is one SKIP LOCKED statement",
)
def test_claim_next_probes_are_index_searches_with_no_sort(storage):
    from taskcore.store import sqlite_queue
    from taskcore.store.sqlite_queue_sched import DUE, not_paused

    # The probes as the claim runs them, with the due check: run_at_ms ends the ready indexes,
    # so it is covered. A paused verb left out reads the row too (ready has no verb column).
    tail = f"{DUE}{sqlite_queue._ORDER}"
    ready = _plans(storage, sqlite_queue._READY_PROBE + tail, ("w", 1, 0))
    by_verb = _plans(storage, sqlite_queue._READY_VERB_PROBE + tail, ("w", "agent.run", 1, 0))
    for plan in (ready, by_verb):
        assert len(plan) == 1
        assert plan[0].startswith("SEARCH queue_task USING COVERING INDEX queue_task_ready")
        assert "TEMP B-TREE" not in plan[0]
    skip = f"{DUE}{not_paused(('x',))}{sqlite_queue._ORDER}"
    paused = _plans(storage, sqlite_queue._READY_PROBE + skip, ("w", 1, 0, "x"))
    assert len(paused) == 1
    assert paused[0].startswith("SEARCH queue_task USING INDEX queue_task_ready")
    assert "TEMP B-TREE" not in paused[0]


@pytest.mark.backend_only("sqlite", reason="reads the statements with apsw's exec trace")
def test_the_statements_of_a_queue_cycle_inside_the_write_lock(tmp_path):
    """What runs between BEGIN IMMEDIATE and COMMIT holds SQLite's one write lock: claimNext
    reads the workspace's claim context in one statement, the probes in one, and the task
    with its flow row in one; a DONE checkpoint reads its flow row and children in one."""
    from taskcore import Actor, FakeClock, Service, Tier

    member = Actor(token_id="m", workspace="w", tier=Tier.MEMBER, autonomy=1)
    worker = Actor(token_id="k", workspace="w", tier=Tier.AGENT, autonomy=1)
    service = Service.open(tmp_path / "data", clock=FakeClock(1_700_000_000_000))
    seen: list[str] = []
    try:
        with service.write():
            pass  # the writer's connection exists from here on
        conn = service.storage.writer._conn
        conn.exec_trace = lambda _c, sql, _b: seen.append(" ".join(sql.split()[:2])) or True

        answers: list[dict] = []

        def inside(name: str, body: object) -> list[str]:
            seen.clear()
            actor = member if name == "agenttask.create" else worker
            answers.append(service.dispatch(actor, name, body).json())
            assert seen[0] == "BEGIN IMMEDIATE"
            assert seen[-1] == "COMMIT"
            return [s.split()[0] for s in seen[1:-1]]

        assert inside("agenttask.create", b'{"verb":"agent.run"}') == [
            "SELECT",  # the token, still live
            "INSERT",  # the task
            "INSERT",  # the audit event
            "INSERT",  # the workspace's wake-up counter
        ]
        assert inside("agenttask.claimNext", b"{}") == [
            "SELECT",  # the token
            "SELECT",  # paused verbs and the flow gate
            "SELECT",  # the probes: the best key of each
            "SELECT",  # the best task, with its flow row
            "UPDATE",  # the lease
            "INSERT",  # the audit event
        ]
        lease = answers[-1]["lease"]
        done = {"taskId": lease["taskId"], "status": "DONE", "fence": lease["fence"]}
        assert inside("agenttask.checkpoint", done) == [
            "SELECT",  # the token
            "SELECT",  # the task
            "UPDATE",  # DONE
            "SELECT",  # its flow row and whether tasks wait on it
            "INSERT",  # the audit event
        ]
    finally:
        service.close()


# -- listing --------------------------------------------------------------------------------------


def test_list_filters_effective_status_matter_and_pages(storage):
    with storage.write() as tx:
        q = tx.queue
        q.insert_task(_task("a", matter_id="m"))
        b = q.insert_task(_task("b"))
        q.update_task(_leased(b, "x", expires=10))
        q.insert_task(_task("c", workspace="other"))

        def ids(**kw):
            args = {
                "status": None,
                "matter_id": None,
                "non_matter_only": False,
                "after_seq": None,
                "limit": 10,
                "now_ms": 5,
                **kw,
            }
            return [t.task_id for t in q.list_tasks("w", **args)]

        assert ids() == ["a", "b"]
        assert ids(status="LEASED") == ["b"]
        assert ids(status="QUEUED", now_ms=10) == ["a", "b"]
        assert ids(matter_id="m") == ["a"]
        assert ids(non_matter_only=True) == ["b"]
        assert ids(limit=1) == ["a"]
        assert ids(after_seq=q.get_task("w", "a").seq) == ["b"]


_SETTLED = {"ESCALATED": None, "DONE": 7, "FAILED": 7, "CANCELLED": 7}


def _listed(q, status):
    """``w``'s tasks of ``status`` at 5 ms (no matter filter, first page of 10)."""
    return q.list_tasks(
        "w",
        status=status,
        matter_id=None,
        non_matter_only=False,
        after_seq=None,
        limit=10,
        now_ms=5,
    )


def test_listing_and_backlog_by_every_status_after_every_transition(storage):
    """A row moving through the partial status index is listed under its status only."""
    with storage.write() as tx:
        q = tx.queue
        rows = {name: q.insert_task(_task(name)) for name in ("q", "l", "x", *_SETTLED)}
        q.update_task(_leased(rows["l"], "o", expires=10**15))
        q.update_task(_leased(rows["x"], "o", expires=1))  # expired: effectively QUEUED
        for name, finished in _SETTLED.items():
            q.update_task(attrs.evolve(rows[name], status=name, finished_at_ms=finished))
        q.insert_task(_task("elsewhere", workspace="other", status="DONE", finished_at_ms=1))
        expected = {"QUEUED": ["q", "x"], "LEASED": ["l"]} | {s: [s] for s in _SETTLED}
        for status, want in expected.items():
            listed = _listed(q, status)
            backlog = q.backlog(
                "w", status=status, verb=None, matter_id=None, after=None, limit=10, now_ms=5
            )
            assert [t.task_id for t in listed] == want, status
            assert sorted(t.task_id for t in backlog) == want, status
        # A settled task requeued (FAILED -> QUEUED) leaves the settled entries.
        failed = q.get_task("w", "FAILED")
        q.update_task(attrs.evolve(failed, status="QUEUED", finished_at_ms=None))
        for status, want in (("FAILED", []), ("QUEUED", ["q", "x", "FAILED"])):
            listed = _listed(q, status)
            assert [t.task_id for t in listed] == want, status


@pytest.mark.backend_only("sqlite", reason="SQLite query plans (EXPLAIN QUERY PLAN)")
@pytest.mark.parametrize("status", sorted(_SETTLED))
def test_a_listing_by_settled_status_searches_the_partial_status_index(storage, status):
    from taskcore.store import sqlite_queue

    sql = f"{sqlite_queue._TASK_SELECT} WHERE workspace = ? AND status = ? ORDER BY seq LIMIT ?"
    plan = _plans(storage, sql, ("w", status, 5))
    assert plan == ["SEARCH queue_task USING INDEX queue_task_status (workspace=? AND status=?)"]


@pytest.mark.backend_only("sqlite", reason="which b-trees a write touches is SQLite's")
def test_the_status_index_holds_settled_tasks_only(storage):
    with storage.write() as tx:
        q = tx.queue
        queued = q.insert_task(_task("q"))
        q.update_task(_leased(q.insert_task(_task("l")), "o", expires=10))
        q.update_task(attrs.evolve(queued, status="CANCELLED", finished_at_ms=1))
        entries = tx.conn.execute(
            "SELECT COUNT(*) FROM queue_task INDEXED BY queue_task_status "
            "WHERE workspace = 'w' AND status = 'CANCELLED'"
        ).fetchone()[0]
        partial, sql = tx.conn.execute(
            "SELECT l.partial, m.sql FROM pragma_index_list('queue_task') AS l "
            "JOIN sqlite_schema AS m ON m.name = l.name WHERE l.name = 'queue_task_status'"
        ).fetchone()
    assert entries == 1
    assert partial == 1
    where = " ".join(sql.split()).split(" WHERE ", 1)[1]
    assert sorted(s.strip("'") for s in where.replace("status = ", "").split(" OR ")) == sorted(
        _SETTLED
    )


# -- phases, matters, ext ---------------------------------------------------------------------------


def test_phase_indexes_prune_and_clear(storage):
    with storage.write() as tx:
        q = tx.queue
        q.insert_task(_task("t"))
        q.insert_task(_task("u", workspace="other"))
        assert q.next_phase_index("w", "t") == 0
        q.insert_phase(_phase("t", 0, at=10))
        q.insert_phase(_phase("t", 1, at=20))
        q.insert_phase(_phase("u", 0, at=10, workspace="other"))
        with pytest.raises(TaskError) as info:
            q.insert_phase(_phase("t", 1, at=30))
        assert info.value.code is ErrorCode.CONFLICT
        assert q.next_phase_index("w", "t") == 2
        assert q.latest_phase("w", "t").phase_index == 1
        assert q.latest_phase("other", "t") is None
        assert q.prune_phases(before_ms=15, workspace="w") == 1  # this workspace's old row
        assert q.latest_phase("other", "u") is not None  # another workspace's row is kept
        assert q.prune_phases(before_ms=15, workspace=None) == 1  # the operator's sweep
        assert q.clear_phases("other", "t") == 0
        assert q.clear_phases("w", "t") == 1


def test_readers_are_idempotent_grants(storage):
    with storage.write() as tx:
        q = tx.queue
        q.insert_matter(
            MatterRecord(
                workspace="w", matter_id="m", objective=None, created_by="a", created_at_ms=1
            )
        )
        grant = MatterReaderRecord(
            workspace="w", matter_id="m", reader="r", granted_by="a", granted_at_ms=1
        )
        assert q.add_reader(grant) is True
        assert q.add_reader(grant) is False
        assert q.is_reader("w", "m", "r")
        assert not q.is_reader("other", "m", "r")
        assert q.remove_reader("w", "m", "r") is True
        assert q.remove_reader("w", "m", "r") is False


def test_ext_rows_need_their_task_and_are_one_per_task(storage):
    with storage.write() as tx:
        q = tx.queue
        with pytest.raises(TaskError) as info:
            q.insert_ext(_ext("ghost"))
        assert info.value.code is ErrorCode.NOT_FOUND
        q.insert_task(_task("t"))
        q.insert_ext(_ext("t"))
        with pytest.raises(TaskError) as info:
            q.insert_ext(_ext("t"))
        assert info.value.code is ErrorCode.ALREADY_EXISTS


def test_set_waiting_is_a_compare_and_set_and_patch_writes_only_given_fields(storage):
    with storage.write() as tx:
        q = tx.queue
        q.insert_task(_task("t"))
        q.insert_ext(_ext("t"))
        assert q.set_waiting("w", "t", waiting=True, declared_child_keys_json='["a"]', now_ms=2)
        assert not q.set_waiting("w", "t", waiting=True, declared_child_keys_json=None, now_ms=3)
        assert not q.set_waiting(
            "other", "t", waiting=False, declared_child_keys_json=None, now_ms=3
        )
        assert q.patch_ext("w", "t", ExtPatch(cost_usd=1.5), now_ms=4)
        assert q.patch_ext("w", "t", ExtPatch(tool_call_count=2), now_ms=5)
        assert not q.patch_ext("other", "t", ExtPatch(tool_call_count=9), now_ms=6)
        row = q.get_ext("w", "t")
    assert (row.waiting_for_children, row.declared_child_keys_json) == (True, '["a"]')
    assert (row.cost_usd, row.tool_call_count, row.updated_at_ms) == (1.5, 2, 5)


def test_the_database_refuses_a_plaintext_claim_token(storage):
    with storage.write() as tx:
        q = tx.queue
        q.insert_task(_task("t"))
        q.insert_ext(_ext("t"))
        with pytest.raises(apsw.ConstraintError):
            q.patch_ext("w", "t", ExtPatch(claim_token_hash="atk_secret"), now_ms=1)
