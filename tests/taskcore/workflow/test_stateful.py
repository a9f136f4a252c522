"""Random sequences of journal operations keep the invariants (hypothesis stateful).

Rules claim, heartbeat, return results, cancel, reconcile, resend earlier requests, let time
pass and checkpoint new commits, as several agents. Whatever happens, every refusal is a
typed, conclusive error and after every step:

* per task, attempt fences are 1, 2, 3... with one attempt per fence, every older attempt
  replaced by exactly the next fence, and ``next_fence`` one past the newest;
* the task's state agrees with its newest attempt (pending: none or replaced; claimed:
  leased; finished: finished with a retained result; cancelled: cancelled);
* a finished or replaced attempt never changes again;
* every resent request answers exactly the bytes it answered first.
"""

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from taskcore.contract import AssertionOutcome, MutationAction
from taskcore.errors import ErrorCode, TaskError

from tests.taskcore.workflow.support import (
    actor,
    claim_request,
    commit,
    make_world,
    mutation,
    parse,
    result_for,
)

CONCLUSIVE = {
    ErrorCode.ILLEGAL_TRANSITION,
    ErrorCode.STALE_FENCE,
    ErrorCode.FORBIDDEN,
    ErrorCode.SUBJECT_STALE,
    ErrorCode.DEPENDENCY_INCOMPLETE,
    ErrorCode.PRIOR_SUBJECT_UNRESOLVED,
    ErrorCode.IDEMPOTENCY_CONFLICT,
}
AGENTS = ("agent1", "agent2")


class JournalMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.world = make_world(Path(self.tmp.name))
        self.tasks = {}
        self.subject_tasks: list[str] = []
        self._checkpoint()
        self.claims: list[tuple[str, dict]] = []  # (agent, parsed claim outcome)
        self.answers: dict[tuple[str, str], tuple[str, object, bytes]] = {}
        self.frozen: dict[str, tuple[str, int | None]] = {}
        self.counter = 0

    def teardown(self) -> None:
        if hasattr(self, "world"):
            self.world.close()
            self.tmp.cleanup()

    def _checkpoint(self, files=None) -> None:
        head = commit(self.world.repo, files) if files else self.world.head
        response = self.world.checkpoint("c1", commit_name=head)
        for summary in response.tasks:
            self.tasks[summary.task_id] = self.world.task(response, summary.step_id)

    def _id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"

    def _send(self, agent: str, kind: str, request, request_id: str) -> bytes | None:
        call = {
            "claim": self.world.journal.claim,
            "heartbeat": self.world.journal.heartbeat,
            "cancel": self.world.journal.cancel,
            "reconcile": self.world.journal.reconcile,
            "result": self.world.journal.result,
        }[kind]
        refused: ErrorCode | None = None
        try:
            raw = call(self.world.caller(actor(agent)), request)
        except TaskError as err:
            refused = err.code
        if refused is not None:
            assert refused in CONCLUSIVE
            return None
        first = self.answers.setdefault((agent, request_id), (kind, request, raw))
        assert first[2] == raw
        return raw

    @rule(task=st.integers(0, 50), agent=st.sampled_from(AGENTS), lease=st.integers(1_000, 20_000))
    def claim(self, task, agent, lease):
        task_obj = list(self.tasks.values())[task % len(self.tasks)]
        request_id = self._id("claim")
        raw = self._send(
            agent,
            "claim",
            claim_request(task_obj, request_id, op=request_id, lease_ms=lease),
            request_id,
        )
        if raw is not None:
            self.claims.append((agent, parse(raw)))

    @precondition(lambda self: self.claims)
    @rule(pick=st.integers(0, 1000), agent=st.sampled_from(AGENTS))
    def heartbeat(self, pick, agent):
        _, claimed = self.claims[pick % len(self.claims)]
        request_id = self._id("hb")
        self._send(
            agent, "heartbeat", mutation(claimed, MutationAction.HEARTBEAT, request_id), request_id
        )

    @precondition(lambda self: self.claims)
    @rule(pick=st.integers(0, 1000), passed=st.booleans())
    def result(self, pick, passed):
        agent, claimed = self.claims[pick % len(self.claims)]
        task = self.tasks.get(claimed["task_id"])
        request_id = self._id("res")
        outcome = AssertionOutcome.PASSED if passed else AssertionOutcome.FAILED
        self._send(
            agent,
            "result",
            result_for(claimed, task, request_id, outcome=outcome, who=actor(agent)),
            request_id,
        )

    @precondition(lambda self: self.claims)
    @rule(pick=st.integers(0, 1000), agent=st.sampled_from(AGENTS), reconcile=st.booleans())
    def fence(self, pick, agent, reconcile):
        _, claimed = self.claims[pick % len(self.claims)]
        action = MutationAction.RECONCILE if reconcile else MutationAction.CANCEL
        request_id = self._id(action.value)
        self._send(
            agent, action.value, mutation(claimed, action, request_id, reason="test"), request_id
        )

    @precondition(lambda self: self.answers)
    @rule(pick=st.integers(0, 1000))
    def resend(self, pick):
        keys = sorted(self.answers)
        agent, request_id = keys[pick % len(keys)]
        kind, request, first = self.answers[(agent, request_id)]
        assert self._send(agent, kind, request, request_id) == first

    @rule(ms=st.integers(0, 30_000))
    def time_passes(self, ms):
        self.world.clock.advance(ms)

    @precondition(lambda self: self.counter < 40)
    @rule(body=st.text(alphabet="abc", min_size=1, max_size=5))
    def new_checkpoint(self, body):
        self._checkpoint({"src/app.py": body + "\n"})

    @invariant()
    def fences_and_states_agree(self):
        if not hasattr(self, "world"):
            return
        with self.world.storage.read() as tx:
            for task_id in self.tasks:
                task = tx.journal.get_task(task_id)
                attempts = tx.journal.attempts_of_task(task_id)
                assert [a.fence for a in attempts] == list(range(1, len(attempts) + 1))
                assert task.next_fence == len(attempts) + 1
                for older, newer in itertools.pairwise(attempts):
                    assert older.state == "replaced"
                    assert older.superseded_by_fence == newer.fence
                newest = attempts[-1] if attempts else None
                expected = {
                    None: "pending",
                    "replaced": "pending",
                    "leased": "claimed",
                    "finished": "finished",
                    "cancelled": "cancelled",
                }[None if newest is None else newest.state]
                assert task.state == expected
                if newest is not None and newest.state == "finished":
                    assert tx.journal.get_assertion(newest.attempt_id) is not None
                for a in attempts:
                    if a.state in ("finished", "replaced"):
                        seen = self.frozen.setdefault(
                            a.attempt_id, (a.state, a.superseded_by_fence)
                        )
                        assert seen == (a.state, a.superseded_by_fence)


_MACHINE_SETTINGS = settings(
    max_examples=10,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# A plain test function, not hypothesis' unittest TestCase: the directory's autouse backend
# fixture cannot reach a TestCase.
@pytest.mark.backend_only(
    "sqlite",
    reason="each example opens a fresh journal in its own temp dir; the PostgreSQL test database "
    "is emptied once per test, not per example (the journal's operations run on PostgreSQL in "
    "the other workflow tests)",
)
def test_journal_invariants() -> None:
    run_state_machine_as_test(JournalMachine, settings=_MACHINE_SETTINGS)
