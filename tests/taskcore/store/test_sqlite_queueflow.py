"""The queueflow store (both backends): flow rows, unique keys, dependencies, limits, the gate."""

from __future__ import annotations

import pytest
from taskcore.store import open_storage
from taskcore.store.queue_api import TaskRecord
from taskcore.store.queueflow_api import FlowRecord, LimitRecord
from taskcore.store.sqlite_queueflow import CLAIM_GATE

NOW = 1_700_000_000_000


@pytest.fixture
def storage(tmp_path):
    s = open_storage(tmp_path / "data", create=True)
    yield s
    s.close()


def _task(task_id: str, status: str = "QUEUED", **over) -> TaskRecord:
    base = {
        "task_id": task_id,
        "workspace": "w",
        "verb": "agent.run",
        "payload_json": None,
        "status": status,
        "priority": 0,
        "autonomy_ceiling": 1,
        "depth": 0,
        "parent_task_id": None,
        "run_id": None,
        "matter_id": None,
        "matter_step_id": None,
        "created_by": "tok",
        "created_at_ms": NOW,
        "updated_at_ms": NOW,
    }
    return TaskRecord(**{**base, **over})


def _leased(task_id: str, expires: int = NOW + 1000) -> TaskRecord:
    return _task(
        task_id,
        "LEASED",
        lease_owner="worker",
        lease_expires_at_ms=expires,
        first_leased_at_ms=NOW,
        heartbeat_at_ms=NOW,
        fence=1,
    )


def _claim(tx, *, gated: bool = True) -> str | None:
    best = tx.queue.best_claimable(
        "w", max_autonomy=3, autonomy=1, verb=None, now_ms=NOW, gated=gated
    )
    return None if best is None else best.task_id


def test_flow_rows_round_trip_per_workspace(storage):
    with storage.write() as tx:
        tx.queueflow.insert_flow(
            FlowRecord(workspace="w", task_id="a", unique_key="u", concurrency_key="k", gated=True)
        )
        assert tx.queueflow.flows("w", ("a", "b")) == {
            "a": FlowRecord(
                workspace="w", task_id="a", unique_key="u", concurrency_key="k", gated=True
            )
        }
        assert tx.queueflow.flows("other", ("a",)) == {}
        assert tx.queueflow.flows("w", ()) == {}


def test_set_gated_keeps_the_gate_for_live_tasks_with_a_key_or_parents(storage):
    with storage.write() as tx:
        tx.queueflow.insert_flow(
            FlowRecord(workspace="w", task_id="k", concurrency_key="x", gated=True)
        )
        tx.queueflow.insert_flow(FlowRecord(workspace="w", task_id="u", unique_key="u"))
        assert tx.queueflow.gates_claims("w")
        assert not tx.queueflow.set_gated("w", "k", terminal=True).gated
        assert not tx.queueflow.gates_claims("w")
        assert tx.queueflow.set_gated("w", "k", terminal=False).gated  # requeued
        assert not tx.queueflow.set_gated("w", "u", terminal=False).gated  # a unique key only
        assert tx.queueflow.set_gated("w", "none", terminal=True) is None


def test_a_unique_key_is_taken_once_and_handed_over_by_compare_and_set(storage):
    with storage.write() as tx:
        assert tx.queueflow.claim_unique("w", "u", "a", 0)
        assert not tx.queueflow.claim_unique("w", "u", "b", 5)
        assert tx.queueflow.claim_unique("other", "u", "c", 0)
        holder = tx.queueflow.unique_holder("w", "u")
        assert (holder.task_id, holder.unique_for_ms) == ("a", 0)
        assert not tx.queueflow.replace_unique("w", "u", "stale", "b", 5)
        assert tx.queueflow.replace_unique("w", "u", "a", "b", 5)
        assert tx.queueflow.unique_holder("w", "u").task_id == "b"
        assert tx.queueflow.unique_holder("w", "nope") is None


def test_dependencies_read_back_in_order_with_the_open_and_waiting_ones(storage):
    with storage.write() as tx:
        for task in (
            _task("p1", "DONE", finished_at_ms=NOW),
            _task("p2"),
            _task("c1"),
            _task("c2", "FAILED", finished_at_ms=NOW),
        ):
            tx.queue.insert_task(task)
        tx.queueflow.insert_deps("w", "c1", ("p2", "p1"))
        tx.queueflow.insert_deps("w", "c2", ("p2",))
        assert tx.queueflow.parents("w", ("c1", "c2", "x")) == {"c1": ("p2", "p1"), "c2": ("p2",)}
        assert tx.queueflow.waiting_on("w", "c1") == ("p2",)
        assert tx.queueflow.open_children("w", "p2") == ("c1",)
        assert tx.queueflow.has_children("w", "p2")
        assert not tx.queueflow.has_children("w", "c1")
        assert tx.queueflow.parent_statuses("w", ("p1", "p2", "gone")) == {
            "p1": "DONE",
            "p2": "QUEUED",
        }


def test_limits_are_set_replaced_and_listed_with_their_live_leases(storage):
    with storage.write() as tx:
        tx.queue.insert_task(_leased("live"))
        tx.queue.insert_task(_leased("lapsed", expires=NOW))
        for task_id in ("live", "lapsed"):
            tx.queueflow.insert_flow(
                FlowRecord(workspace="w", task_id=task_id, concurrency_key="k", gated=True)
            )
        tx.queueflow.set_limit(
            LimitRecord(workspace="w", key="k", max_leased=3, set_by="a", set_at_ms=1)
        )
        tx.queueflow.set_limit(
            LimitRecord(workspace="w", key="k", max_leased=2, set_by="b", set_at_ms=2)
        )
        assert tx.queueflow.key_leased("w", "k", NOW) == 1
        assert tx.queueflow.get_limit("w", "k").max_leased == 2
        assert tx.queueflow.get_limit("w", "none") is None
        assert tx.queueflow.list_limits("w", NOW) == (
            LimitRecord(workspace="w", key="k", max_leased=2, set_by="b", set_at_ms=2, leased=1),
        )
        tx.queueflow.serialize_limited_claims("w")  # a no-op on SQLite, a lock on PostgreSQL


def test_the_claim_gate_passes_over_blocked_children_and_full_keys(storage):
    with storage.write() as tx:
        tx.queue.insert_task(_task("parent", priority=1))
        tx.queue.insert_task(_task("child", priority=9))
        tx.queueflow.insert_flow(
            FlowRecord(workspace="w", task_id="child", has_parents=True, gated=True)
        )
        tx.queueflow.insert_deps("w", "child", ("parent",))
        assert _claim(tx, gated=False) == "child"  # the plain claim knows nothing of flow
        assert _claim(tx) == "parent"
        tx.queue.insert_task(_leased("holder"))
        tx.queue.insert_task(_task("keyed", priority=5))
        for task_id in ("holder", "keyed"):
            tx.queueflow.insert_flow(
                FlowRecord(workspace="w", task_id=task_id, concurrency_key="k", gated=True)
            )
        assert _claim(tx) == "parent"  # keyed waits: k has 1 lease, its default limit
        tx.queueflow.set_limit(
            LimitRecord(workspace="w", key="k", max_leased=2, set_by="a", set_at_ms=1)
        )
        assert _claim(tx) == "keyed"


def test_the_claim_gate_is_one_bound_parameter():
    assert CLAIM_GATE.count("?") == 1
    assert CLAIM_GATE.startswith("AND NOT EXISTS")


def test_waiting_reads_every_childs_open_parents_at_once(storage):
    with storage.write() as tx:
        for task in (
            _task("p1", "DONE", finished_at_ms=NOW),
            _task("p2"),
            _task("c1"),
            _task("c2"),
        ):
            tx.queue.insert_task(task)
        tx.queueflow.insert_deps("w", "c1", ("p2", "p1"))
        tx.queueflow.insert_deps("w", "c2", ("p1",))
        assert tx.queueflow.waiting("w", ("c1", "c2")) == {"c1": ("p2",)}
        assert tx.queueflow.waiting("w", ()) == {}


def test_the_claim_context_reads_paused_verbs_and_the_gate_in_one_statement(storage):
    from taskcore.store.queue_api import PausedVerbRecord

    with storage.write() as tx:
        assert tx.queueflow.claim_context("w").paused == ()
        assert not tx.queueflow.claim_context("w").gated
        for verb in ("zeta.run", "alpha.run"):
            tx.queue.pause_verb(
                PausedVerbRecord(workspace="w", verb=verb, paused_by="a", paused_at_ms=NOW)
            )
        tx.queueflow.insert_flow(
            FlowRecord(workspace="w", task_id="k", concurrency_key="x", gated=True)
        )
        context = tx.queueflow.claim_context("w")
        assert (context.paused, context.gated) == (("alpha.run", "zeta.run"), True)
        other = tx.queueflow.claim_context("other")
        assert (other.paused, other.gated) == ((), False)
        tx.queueflow.set_gated("w", "k", terminal=True)
        context = tx.queueflow.claim_context("w")
        assert (context.paused, context.gated) == (("alpha.run", "zeta.run"), False)


def test_settle_row_regates_and_tells_whether_children_wait(storage):
    with storage.write() as tx:
        tx.queueflow.insert_flow(
            FlowRecord(workspace="w", task_id="p", concurrency_key="x", gated=True)
        )
        tx.queueflow.insert_deps("w", "c", ("p",))
        tx.queueflow.insert_deps("w", "c2", ("bare",))
        flow, kids = tx.queueflow.settle_row("w", "p", terminal=True, children=True)
        assert (flow.gated, flow.concurrency_key, kids) == (False, "x", True)
        flow, kids = tx.queueflow.settle_row("w", "p", terminal=False, children=False)
        assert (flow.gated, kids) == (True, False)
        assert tx.queueflow.flows("w", ("p",))["p"].gated  # written, not only answered
        assert tx.queueflow.settle_row("w", "bare", terminal=True, children=True) == (None, True)
        assert tx.queueflow.settle_row("w", "none", terminal=True, children=True) == (None, False)
        assert tx.queueflow.settle_row("other", "p", terminal=True, children=True) == (None, False)


def test_the_claim_candidate_comes_with_its_flow_row(storage):
    def candidate(tx):
        return tx.queue.claim_candidate(
            "w", max_autonomy=3, autonomy=1, verb=None, now_ms=NOW, gated=True
        )

    with storage.write() as tx:
        assert candidate(tx) == (None, None)
        tx.queue.insert_task(_task("plain", priority=1))
        task, flow = candidate(tx)
        assert (task.task_id, flow) == ("plain", None)
        tx.queue.insert_task(_task("keyed", priority=5))
        row = FlowRecord(workspace="w", task_id="keyed", concurrency_key="k", gated=True)
        tx.queueflow.insert_flow(row)
        task, flow = candidate(tx)
        assert (task, flow) == (tx.queue.get_task("w", "keyed"), row)
