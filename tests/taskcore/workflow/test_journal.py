"""Rules of the workflow journal, one test per rule, against real git and a real journal file."""

import attrs
import pytest
from taskcore.actors import Tier
from taskcore.authority import RepositoryPolicy, revoke_executor, set_policy
from taskcore.contract import (
    AssertionOutcome,
    CriterionOutcome,
    ExecutorBinding,
    MutationAction,
    TaskStatusRequest,
    WorkflowTask,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import LEASE_MAX_MS
from taskcore.workflow import ActorGuard, Caller
from taskcore.workflow.types import NextRequest, RequirementsRequest

from tests.taskcore.workflow.support import (
    OTHER_SEED,
    actor,
    claim_request,
    commit,
    mutation,
    parse,
    result_for,
)


def _code(fn, *args, **kwargs) -> ErrorCode:
    with pytest.raises(TaskError) as info:
        fn(*args, **kwargs)
    return info.value.code


def _claim(world, task: WorkflowTask, request_id="claim-1", who=None, **kw):
    return parse(world.journal.claim(world.caller(who), claim_request(task, request_id, **kw)))


def _complete_by_observation(world, cp, step="implement", registration="reg-1"):
    """Claim ``step`` with an enrolled executor and retain a passing signed observation."""
    binding = world.enroll(step, registration)
    task = world.task(cp, step)
    claimed = _claim(world, task, f"claim-{step}", executor=binding)
    world.journal.result(world.caller(), result_for(claimed, task, f"result-{step}"))
    return claimed, binding


# -- claims -----------------------------------------------------------------------------------


def test_claim_returns_attempt_bound_to_the_exact_claim_request(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = _claim(world, task, "claim-7", op="exec-42", lease_ms=30_000)
    attempt = claimed["attempt"]
    assert attempt["claim_request_id"] == "claim-7"
    assert attempt["execution_operation_id"] == "exec-42"
    assert attempt["task_digest"] == task.digest
    assert attempt["agent"] == {"owner_id": "acme", "agent_id": "agent1"}
    assert attempt["fence"] == 1
    assert attempt["lease_ms"] == 30_000
    assert claimed["lease_expires_at_ms"] == world.clock.now_ms() + 30_000


def test_claim_lease_is_capped_by_the_configured_maximum_and_policy(world):
    cp = world.checkpoint()
    world.journal.lease_max_ms = 20_000
    claimed = _claim(world, world.task(cp, "implement"), lease_ms=LEASE_MAX_MS)
    assert claimed["attempt"]["lease_ms"] == 20_000
    set_policy(
        world.storage,
        world.clock,
        repository_id="widgets",
        policy=RepositoryPolicy(version=1, lease_max_ms=5_000, agent_assertions=True),
    )
    cp2 = world.checkpoint()
    # The older subject's attempt is unresolved: reconcile it, then claim under the new policy.
    world.journal.reconcile(
        world.caller(), mutation(claimed, MutationAction.RECONCILE, "rec-1", reason="policy")
    )
    fresh = _claim(world, world.task(cp2, "implement"), "claim-2", lease_ms=LEASE_MAX_MS)
    assert fresh["attempt"]["lease_ms"] == 5_000


def test_claimed_task_cannot_be_claimed_again(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    _claim(world, task)
    assert (
        _code(_claim, world, task, "claim-2", who=actor("agent2")) is ErrorCode.ILLEGAL_TRANSITION
    )


def test_claim_checks_dependencies_inside_the_transaction(world):
    cp = world.checkpoint()
    tests_task = world.task(cp, "tests")
    assert _code(_claim, world, tests_task) is ErrorCode.DEPENDENCY_INCOMPLETE


def test_agent_assertion_never_completes_a_dependency(world):
    cp = world.checkpoint()
    impl = world.task(cp, "implement")
    claimed = _claim(world, impl)
    outcome = parse(world.journal.result(world.caller(), result_for(claimed, impl)))
    assert outcome["admission"] == "nonpassing"
    assert outcome["completes_dependency"] is False
    assert (
        _code(_claim, world, world.task(cp, "tests"), "claim-2") is ErrorCode.DEPENDENCY_INCOMPLETE
    )


def test_verified_passing_observation_completes_the_dependency(world):
    cp = world.checkpoint()
    _complete_by_observation(world, cp)
    claimed = _claim(world, world.task(cp, "tests"), "claim-tests")
    assert claimed["attempt"]["fence"] == 1


def test_revocation_invalidates_a_dependency_completed_earlier(world):
    cp = world.checkpoint()
    _complete_by_observation(world, cp)
    revoke_executor(world.storage, world.clock, registration_id="reg-1", reason="key leaked")
    assert _code(_claim, world, world.task(cp, "tests")) is ErrorCode.DEPENDENCY_INCOMPLETE


def test_reenrollment_does_not_rehabilitate_old_evidence(world):
    cp = world.checkpoint()
    _complete_by_observation(world, cp)
    revoke_executor(world.storage, world.clock, registration_id="reg-1", reason="rotate")
    world.enroll("implement", "reg-1", seed=OTHER_SEED)  # epoch 2
    assert _code(_claim, world, world.task(cp, "tests")) is ErrorCode.DEPENDENCY_INCOMPLETE


def test_failed_observation_does_not_complete_the_dependency(world):
    cp = world.checkpoint()
    binding = world.enroll()
    impl = world.task(cp, "implement")
    claimed = _claim(world, impl, executor=binding)
    out = parse(
        world.journal.result(
            world.caller(), result_for(claimed, impl, outcome=AssertionOutcome.FAILED)
        )
    )
    assert out["completes_dependency"] is False


def test_controller_steps_cannot_be_claimed_by_an_ordinary_claim(world):
    cp = world.checkpoint()
    assert _code(_claim, world, world.task(cp, "review")) is ErrorCode.ILLEGAL_TRANSITION


def test_claim_with_an_unenrolled_executor_is_refused(world):
    cp = world.checkpoint()
    ghost = ExecutorBinding(
        registration_id="nobody", executor_id="x", registration_epoch=1, verification_key_id="k"
    )
    assert (
        _code(_claim, world, world.task(cp, "implement"), executor=ghost)
        is ErrorCode.EXECUTOR_NOT_ENROLLED
    )


def test_claim_with_a_revoked_executor_is_refused(world):
    cp = world.checkpoint()
    binding = world.enroll()
    revoke_executor(world.storage, world.clock, registration_id="reg-1", reason="gone")
    assert (
        _code(_claim, world, world.task(cp, "implement"), executor=binding)
        is ErrorCode.EXECUTOR_REVOKED
    )


def test_claim_of_a_superseded_subject_is_refused(world):
    cp = world.checkpoint()
    world.checkpoint(commit_name=commit(world.repo, {"src/app.py": "print(2)\n"}))
    assert _code(_claim, world, world.task(cp, "implement")) is ErrorCode.SUBJECT_STALE


def test_claim_with_a_wrong_task_digest_is_refused(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    request = attrs.evolve(claim_request(task), task_digest="0" * 64)
    assert _code(world.journal.claim, world.caller(), request) is ErrorCode.BINDING_MISMATCH


# -- fences and leases ------------------------------------------------------------------------


def test_fences_increase_and_only_reconciliation_supersedes(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    first = _claim(world, task)
    world.clock.advance(120_000)  # the lease expired: an observation, not a supersession
    assert _code(_claim, world, task, "claim-2") is ErrorCode.ILLEGAL_TRANSITION
    rec = parse(
        world.journal.reconcile(
            world.caller(), mutation(first, MutationAction.RECONCILE, "rec-1", reason="stuck")
        )
    )
    assert rec["fence_supersession"] == {"old_fence": 1, "new_fence": 2}
    second = _claim(world, task, "claim-2", op="op-2")
    assert second["attempt"]["fence"] == 2
    assert second["attempt"]["attempt_id"] != first["attempt"]["attempt_id"]


def test_old_fence_heartbeat_is_refused_and_stays_with_the_old_attempt(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    first = _claim(world, task)
    world.journal.reconcile(
        world.caller(), mutation(first, MutationAction.RECONCILE, "rec-1", reason="stuck")
    )
    second = _claim(world, task, "claim-2", op="op-2")
    late = mutation(first, MutationAction.HEARTBEAT, "hb-late")
    assert _code(world.journal.heartbeat, world.caller(), late) is ErrorCode.STALE_FENCE
    view = world.journal.status(
        world.caller(),
        TaskStatusRequest(
            version=1,
            task_id=task.task_id,
            task_digest=task.digest,
            attempt_id=second["attempt"]["attempt_id"],
        ),
    )
    assert view.state.value == "leased"
    assert view.lease_expires_at_ms == second["lease_expires_at_ms"]


def test_old_fence_result_cannot_finish_the_replacement(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    first = _claim(world, task)
    world.journal.reconcile(
        world.caller(), mutation(first, MutationAction.RECONCILE, "rec-1", reason="stuck")
    )
    second = _claim(world, task, "claim-2", op="op-2")
    late = result_for(first, task, "late-result")
    assert _code(world.journal.result, world.caller(), late) is ErrorCode.STALE_FENCE
    forged = result_for(second, task, "forged", fence=1)
    assert _code(world.journal.result, world.caller(), forged) is ErrorCode.STALE_FENCE
    with world.storage.read() as tx:
        assert tx.journal.get_task(task.task_id).state == "claimed"


def test_heartbeat_renews_the_lease_from_now(world):
    cp = world.checkpoint()
    claimed = _claim(world, world.task(cp, "implement"), lease_ms=10_000)
    world.clock.advance(7_000)
    out = parse(
        world.journal.heartbeat(world.caller(), mutation(claimed, MutationAction.HEARTBEAT, "hb"))
    )
    assert out["lease_expires_at_ms"] == world.clock.now_ms() + 10_000


def test_heartbeat_by_another_agent_is_refused(world):
    cp = world.checkpoint()
    claimed = _claim(world, world.task(cp, "implement"))
    hb = mutation(claimed, MutationAction.HEARTBEAT, "hb")
    assert _code(world.journal.heartbeat, world.caller(actor("agent2")), hb) is ErrorCode.FORBIDDEN


def test_heartbeat_needs_the_current_subject(world):
    cp = world.checkpoint()
    claimed = _claim(world, world.task(cp, "implement"))
    world.checkpoint(commit_name=commit(world.repo, {"src/app.py": "print(3)\n"}))
    hb = mutation(claimed, MutationAction.HEARTBEAT, "hb")
    assert _code(world.journal.heartbeat, world.caller(), hb) is ErrorCode.SUBJECT_STALE


def test_cancel_and_reconcile_may_fence_a_stale_attempt_after_revocation(world):
    cp = world.checkpoint()
    binding = world.enroll()
    claimed = _claim(world, world.task(cp, "implement"), executor=binding)
    revoke_executor(world.storage, world.clock, registration_id="reg-1", reason="gone")
    world.checkpoint(commit_name=commit(world.repo, {"src/app.py": "print(4)\n"}))
    world.journal.cancel(world.caller(), mutation(claimed, MutationAction.CANCEL, "c", reason="x"))
    out = parse(
        world.journal.reconcile(
            world.caller(), mutation(claimed, MutationAction.RECONCILE, "r", reason="x")
        )
    )
    assert out["attempt_state"] == "replaced"


def test_cancelled_task_stays_blocked_until_reconciled(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = _claim(world, task)
    world.journal.cancel(world.caller(), mutation(claimed, MutationAction.CANCEL, "c", reason="x"))
    assert _code(_claim, world, task, "claim-2") is ErrorCode.ILLEGAL_TRANSITION
    late = result_for(claimed, task)
    assert _code(world.journal.result, world.caller(), late) is ErrorCode.ILLEGAL_TRANSITION
    assert world.next_task().reason == "reconcile_required"


def test_finished_attempt_cannot_be_reconciled_or_cancelled(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = _claim(world, task)
    world.journal.result(world.caller(), result_for(claimed, task))
    rec = mutation(claimed, MutationAction.RECONCILE, "r", reason="x")
    assert _code(world.journal.reconcile, world.caller(), rec) is ErrorCode.ILLEGAL_TRANSITION
    can = mutation(claimed, MutationAction.CANCEL, "c", reason="x")
    assert _code(world.journal.cancel, world.caller(), can) is ErrorCode.ILLEGAL_TRANSITION


def test_illegal_transition_writes_nothing(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = _claim(world, task)
    world.journal.result(world.caller(), result_for(claimed, task))
    with world.storage.read() as tx:
        before = tx.journal.transitions_of_task(task.task_id)
    rec = mutation(claimed, MutationAction.RECONCILE, "r", reason="x")
    _code(world.journal.reconcile, world.caller(), rec)
    with world.storage.read() as tx:
        assert tx.journal.transitions_of_task(task.task_id) == before
        assert tx.journal.get_request("acme", "agent1", "r") is None


def test_mutation_operation_refuses_another_action(world):
    cp = world.checkpoint()
    claimed = _claim(world, world.task(cp, "implement"))
    cancel = mutation(claimed, MutationAction.CANCEL, "c", reason="x")
    assert _code(world.journal.heartbeat, world.caller(), cancel) is ErrorCode.BAD_INPUT


def test_another_agent_cannot_reconcile_a_live_lease_but_may_after_expiry(world):
    cp = world.checkpoint()
    claimed = _claim(world, world.task(cp, "implement"), lease_ms=10_000)
    rec = mutation(claimed, MutationAction.RECONCILE, "r", reason="x")
    assert _code(world.journal.reconcile, world.caller(actor("agent2")), rec) is ErrorCode.FORBIDDEN
    world.clock.advance(10_000)
    out = parse(world.journal.reconcile(world.caller(actor("agent2")), rec))
    assert out["attempt_state"] == "replaced"


def test_a_member_may_cancel_another_agents_live_attempt(world):
    cp = world.checkpoint()
    claimed = _claim(world, world.task(cp, "implement"))
    lead = actor("lead", tier=Tier.MEMBER)
    out = parse(
        world.journal.cancel(
            world.caller(lead), mutation(claimed, MutationAction.CANCEL, "c", reason="stop")
        )
    )
    assert out["attempt_state"] == "cancelled"


# -- prior subjects ---------------------------------------------------------------------------


def test_fresh_claim_refused_while_an_older_subject_attempt_is_unresolved(world):
    cp1 = world.checkpoint()
    old = _claim(world, world.task(cp1, "implement"))
    cp2 = world.checkpoint(commit_name=commit(world.repo, {"src/app.py": "print(5)\n"}))
    new_task = world.task(cp2, "implement")
    with pytest.raises(TaskError) as info:
        _claim(world, new_task, "claim-2")
    assert info.value.code is ErrorCode.PRIOR_SUBJECT_UNRESOLVED
    assert info.value.details["task_id"] == old["attempt"]["task_id"]
    assert world.next_task().reason == "prior_subject_unresolved"
    world.journal.reconcile(
        world.caller(), mutation(old, MutationAction.RECONCILE, "r", reason="superseded")
    )
    assert _claim(world, new_task, "claim-2")["attempt"]["fence"] == 1


def test_finished_older_subject_does_not_block_a_fresh_claim(world):
    cp1 = world.checkpoint()
    impl = world.task(cp1, "implement")
    old = _claim(world, impl)
    world.journal.result(world.caller(), result_for(old, impl))
    cp2 = world.checkpoint(commit_name=commit(world.repo, {"src/app.py": "print(6)\n"}))
    assert _claim(world, world.task(cp2, "implement"), "claim-2")["attempt"]["fence"] == 1


# -- idempotency --------------------------------------------------------------------------------


def test_identical_retry_returns_the_retained_outcome_byte_for_byte(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    first = world.journal.claim(world.caller(), claim_request(task))
    world.clock.advance(5_000)
    assert world.journal.claim(world.caller(), claim_request(task)) == first
    claimed = parse(first)
    hb = mutation(claimed, MutationAction.HEARTBEAT, "hb")
    once = world.journal.heartbeat(world.caller(), hb)
    world.clock.advance(5_000)
    assert world.journal.heartbeat(world.caller(), hb) == once


def test_retry_returns_retained_outcome_even_after_the_subject_went_stale(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    first = world.journal.claim(world.caller(), claim_request(task))
    world.checkpoint(commit_name=commit(world.repo, {"src/app.py": "print(7)\n"}))
    assert world.journal.claim(world.caller(), claim_request(task)) == first


def test_same_request_id_with_changed_bytes_conflicts(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    world.journal.claim(world.caller(), claim_request(task))
    changed = claim_request(task, lease_ms=61_000)
    assert _code(world.journal.claim, world.caller(), changed) is ErrorCode.IDEMPOTENCY_CONFLICT


def test_same_request_id_across_kinds_conflicts(world):
    cp = world.checkpoint()
    claimed = _claim(world, world.task(cp, "implement"), "shared-id")
    hb = mutation(claimed, MutationAction.HEARTBEAT, "shared-id")
    assert _code(world.journal.heartbeat, world.caller(), hb) is ErrorCode.IDEMPOTENCY_CONFLICT


def test_request_ids_are_scoped_to_owner_and_agent(world):
    cp = world.checkpoint()
    impl = world.task(cp, "implement")
    _claim(world, impl, "same-id")
    other = world.task(world.checkpoint("c2"), "implement")
    claimed = _claim(world, other, "same-id", who=actor("agent2"))
    assert claimed["attempt"]["agent"]["agent_id"] == "agent2"


def test_refused_request_binds_no_id_and_a_retry_is_reevaluated(world):
    cp = world.checkpoint()
    tests_task = world.task(cp, "tests")
    assert _code(_claim, world, tests_task, "claim-t") is ErrorCode.DEPENDENCY_INCOMPLETE
    _complete_by_observation(world, cp)
    assert _claim(world, tests_task, "claim-t")["attempt"]["fence"] == 1


def test_status_reads_consume_no_request_id(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = _claim(world, task)
    request = TaskStatusRequest(
        version=1,
        task_id=task.task_id,
        task_digest=task.digest,
        attempt_id=claimed["attempt"]["attempt_id"],
    )
    for _ in range(3):
        world.journal.status(world.caller(), request)
    with world.storage.read() as tx:
        assert len(tx.journal.transitions_of_task(task.task_id)) == 2  # derive + claim


# -- results ----------------------------------------------------------------------------------


def test_result_agent_must_be_the_authenticated_actor(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = _claim(world, task)
    foreign = result_for(claimed, task, who=actor("agent2"))
    assert _code(world.journal.result, world.caller(), foreign) is ErrorCode.BINDING_MISMATCH


def test_result_must_carry_one_row_per_criterion(world):
    cp = world.checkpoint()
    task = world.task(cp, "tests")
    _complete_by_observation(world, cp)
    claimed = _claim(world, task, "claim-tests")
    full = result_for(claimed, task)
    missing = attrs.evolve(full, criteria=full.criteria[:1])
    assert _code(world.journal.result, world.caller(), missing) is ErrorCode.INVALID_CRITERIA


def test_controller_only_rows_cannot_be_claimed_by_a_result(world):
    cp = world.checkpoint()
    _complete_by_observation(world, cp)
    task = world.task(cp, "tests")
    claimed = _claim(world, task, "claim-tests")
    bad = result_for(claimed, task)
    rows = tuple(
        attrs.evolve(r, outcome=CriterionOutcome.PASSED) if r.criterion == "notes" else r
        for r in bad.criteria
    )
    bad = attrs.evolve(bad, criteria=rows)
    assert _code(world.journal.result, world.caller(), bad) is ErrorCode.INVALID_CRITERIA


def test_observation_signed_by_another_key_is_refused(world):
    cp = world.checkpoint()
    binding = world.enroll()
    task = world.task(cp, "implement")
    claimed = _claim(world, task, executor=binding)
    forged = result_for(claimed, task, seed=OTHER_SEED)
    assert _code(world.journal.result, world.caller(), forged) is ErrorCode.INVALID_SIGNATURE


def test_observation_with_a_revoked_registration_is_refused(world):
    cp = world.checkpoint()
    binding = world.enroll()
    task = world.task(cp, "implement")
    claimed = _claim(world, task, executor=binding)
    revoke_executor(world.storage, world.clock, registration_id="reg-1", reason="gone")
    observed = result_for(claimed, task)
    assert _code(world.journal.result, world.caller(), observed) is ErrorCode.EXECUTOR_REVOKED


def test_tampered_observation_fails_verification(world):
    cp = world.checkpoint()
    binding = world.enroll()
    task = world.task(cp, "implement")
    claimed = _claim(world, task, executor=binding)
    signed = result_for(claimed, task, outcome=AssertionOutcome.FAILED)
    tampered = attrs.evolve(
        signed,
        outcome=AssertionOutcome.PASSED,
        criteria=tuple(attrs.evolve(r, outcome=CriterionOutcome.PASSED) for r in signed.criteria),
    )
    assert _code(world.journal.result, world.caller(), tampered) is ErrorCode.INVALID_SIGNATURE


def test_policy_can_refuse_plain_agent_assertions(world):
    set_policy(
        world.storage,
        world.clock,
        repository_id="widgets",
        policy=RepositoryPolicy(version=1, lease_max_ms=LEASE_MAX_MS, agent_assertions=False),
    )
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = _claim(world, task)
    assert (
        _code(world.journal.result, world.caller(), result_for(claimed, task))
        is ErrorCode.FORBIDDEN
    )


def test_result_for_a_stale_subject_is_refused(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = _claim(world, task)
    world.checkpoint(commit_name=commit(world.repo, {"src/app.py": "print(8)\n"}))
    assert (
        _code(world.journal.result, world.caller(), result_for(claimed, task))
        is ErrorCode.SUBJECT_STALE
    )


def test_result_after_lease_expiry_is_retained_because_expiry_proves_nothing(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = _claim(world, task, lease_ms=1_000)
    world.clock.advance(60_000)
    out = parse(world.journal.result(world.caller(), result_for(claimed, task)))
    assert out["admission"] == "nonpassing"


# -- next, requirements, status -------------------------------------------------------------------


def test_next_offers_tasks_in_plan_order_and_explains_none(world):
    assert world.next_task().reason == "no_subject"
    cp = world.checkpoint()
    offered = world.next_task()
    assert offered.status == "task"
    assert offered.task.subject.step_id == "implement"
    assert offered.task_digest == offered.task.digest
    claimed = _claim(world, offered.task)
    assert world.next_task().reason == "attempt_in_progress"
    world.clock.advance(3_600_000)
    assert world.next_task().reason == "reconcile_required"
    assert world.next_task().blocking_task_id == claimed["attempt"]["task_id"]
    assert cp.created


def test_next_reports_a_stale_subject(world):
    world.checkpoint()
    set_policy(
        world.storage,
        world.clock,
        repository_id="widgets",
        policy=RepositoryPolicy(version=1, lease_max_ms=9_000, agent_assertions=True),
    )
    answer = world.next_task()
    assert (answer.status, answer.reason, answer.subject.current) == (
        "none",
        "subject_stale",
        False,
    )


def test_status_reports_currently_applicable_separately_from_the_retained_attempt(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    claimed = _claim(world, task, lease_ms=10_000)
    request = TaskStatusRequest(
        version=1,
        task_id=task.task_id,
        task_digest=task.digest,
        attempt_id=claimed["attempt"]["attempt_id"],
    )
    live = world.journal.status(world.caller(), request)
    assert (live.state.value, live.currently_applicable) == ("leased", True)
    world.clock.advance(10_000)
    expired = world.journal.status(world.caller(), request)
    assert (expired.state.value, expired.currently_applicable) == ("expired", False)
    assert expired.lease_expires_at_ms == live.lease_expires_at_ms
    world.checkpoint(commit_name=commit(world.repo, {"src/app.py": "print(9)\n"}))
    stale = world.journal.status(world.caller(), request)
    assert (stale.subject_current, stale.attempt.attempt_id) == (False, live.attempt.attempt_id)


def test_status_shows_a_retained_observation_stops_completing_after_revocation(world):
    cp = world.checkpoint()
    claimed, _ = _complete_by_observation(world, cp)
    task = world.task(cp, "implement")
    request = TaskStatusRequest(
        version=1,
        task_id=task.task_id,
        task_digest=task.digest,
        attempt_id=claimed["attempt"]["attempt_id"],
    )
    assert world.journal.status(world.caller(), request).retained_result.completes_dependency
    revoke_executor(world.storage, world.clock, registration_id="reg-1", reason="gone")
    view = world.journal.status(world.caller(), request)
    assert view.retained_result.completes_dependency is False
    assert view.retained_result.admission == "nonpassing"


def test_requirements_lists_the_plan_and_the_change_tasks(world):
    plan_only = world.journal.requirements(
        world.caller(), RequirementsRequest(version=1, change_id=None)
    )
    assert [s.step_id for s in plan_only.steps] == ["implement", "tests", "review"]
    assert plan_only.subject is None
    cp = world.checkpoint()
    with_change = world.journal.requirements(
        world.caller(), RequirementsRequest(version=1, change_id="c1")
    )
    assert [t.task_id for t in with_change.tasks] == [t.task_id for t in cp.tasks]


# -- workspace scoping --------------------------------------------------------------------------


def test_a_repository_of_another_workspace_is_not_found(world):
    world.checkpoint()
    stranger = actor("agent9", workspace="elsewhere")
    with pytest.raises(TaskError) as info:
        world.next_task(who=stranger)
    assert info.value.code is ErrorCode.NOT_FOUND
    ghost = Caller(
        actor=actor(), repository_id="nope", profile_id="default", guard=ActorGuard(actor())
    )
    with pytest.raises(TaskError) as again:
        world.journal.next(ghost, NextRequest(version=1, change_id="c1"))
    assert (again.value.code, again.value.message) == (info.value.code, info.value.message)


# -- reading one task by ID (what 'agent-task reconcile CHANGE' needs) -------------------------


def test_the_task_read_names_the_newest_attempt_without_consuming_an_id(world):
    from taskcore.workflow.types import TaskReadRequest

    cp = world.checkpoint()
    task = world.task(cp, "implement")
    before = world.journal.task(world.caller(), TaskReadRequest(version=1, task_id=task.task_id))
    assert before.current_attempt is None
    assert before.state == "pending"
    assert (before.change_id, before.change_version) == ("c1", 1)
    claimed = _claim(world, task)
    view = world.journal.task(world.caller(), TaskReadRequest(version=1, task_id=task.task_id))
    assert view.state == "claimed"
    assert view.subject_current is True
    assert view.current_attempt.attempt.attempt_id == claimed["attempt"]["attempt_id"]
    assert view.current_attempt.attempt_digest == claimed["attempt_digest"]
    with world.storage.read() as tx:
        assert len(tx.journal.transitions_of_task(task.task_id)) == 2  # derive + claim


def test_the_task_read_of_an_unknown_or_foreign_task_is_not_found(world):
    from taskcore.workflow.types import TaskReadRequest

    assert (
        _code(world.journal.task, world.caller(), TaskReadRequest(version=1, task_id="t-nope"))
        is ErrorCode.NOT_FOUND
    )
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    from tests.taskcore.workflow.support import PROFILE, REPO

    stranger = actor("agent9", workspace="elsewhere")
    outsider = Caller(
        actor=stranger, repository_id=REPO, profile_id=PROFILE, guard=ActorGuard(stranger)
    )
    assert (
        _code(world.journal.task, outsider, TaskReadRequest(version=1, task_id=task.task_id))
        is ErrorCode.NOT_FOUND
    )


def test_a_retry_checkpoint_is_refused_while_an_attempt_is_unresolved(world):
    from taskcore.workflow.types import CheckpointRequest

    cp = world.checkpoint()
    _claim(world, world.task(cp, "implement"))
    request = CheckpointRequest(
        version=1,
        change_id="c1",
        commit=cp.subject.commit,
        context="",
        retry=True,
    )
    with pytest.raises(TaskError) as err:
        world.journal.checkpoint(world.caller(), request)
    assert err.value.code is ErrorCode.CONFLICT
    assert "agent-task reconcile c1" in err.value.message
