"""Two replicas race to claim one workflow task, round after round, on PostgreSQL.

Each replica is a process with its own storage (its own connection pool) on the shared
database, as two ``agent-task serve`` processes are; both are released by one barrier and
send a claim for the same task with their own identity. Every round has exactly one winner;
once both claims are answered the winner reconciles (gives the task back) and the next round
starts. The fences the
winners got are strictly increasing, 1, 2, 3, ...: no fence is handed out twice however the
claims interleave.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from taskcore.clock import SystemClock
from taskcore.codec import Codec
from taskcore.contract import MutationAction, WorkflowTask
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage
from taskcore.workflow import ActorGuard, Caller, WorkflowJournal

from tests.taskcore.workflow.support import (
    PROFILE,
    REPO,
    actor,
    claim_request,
    make_world,
    mutation,
    parse,
)

ROUNDS = 25


def _replica(data_dir: str, task_json: str, me: int, barrier, done, out_path: str) -> None:
    task = Codec().decode(WorkflowTask, task_json)
    storage = open_storage(data_dir)
    journal = WorkflowJournal(storage, clock=SystemClock())
    who = actor(f"agent{me}")
    caller = Caller(actor=who, repository_id=REPO, profile_id=PROFILE, guard=ActorGuard(who))
    results: list[dict[str, object]] = []
    for rnd in range(ROUNDS):
        barrier.wait()
        tag = f"{me}-{rnd}"
        try:
            claimed = parse(
                journal.claim(caller, claim_request(task, f"claim-{tag}", op=f"op-{tag}"))
            )
        except TaskError as err:
            results.append({"round": rnd, "refused": err.code.value})
            claimed = None
        else:
            results.append({"round": rnd, "fence": claimed["attempt"]["fence"]})
        # Both claims are answered before the winner gives the task back: a claim that the
        # journal serialized after the winner's reconcile would rightly win again (the task
        # is free then), which is not the race this test is about.
        done.wait()
        if claimed is not None:
            release = mutation(claimed, MutationAction.RECONCILE, f"rec-{tag}", reason="race")
            journal.reconcile(caller, release)
        # The next round's barrier is passed only once the winner has given the task back.
    storage.close()
    Path(out_path).write_text(json.dumps(results))


def test_two_replicas_racing_a_workflow_claim_have_one_winner_and_rising_fences(
    tmp_path, postgres_url, monkeypatch
):
    monkeypatch.setenv("AGENT_TASK_DATABASE", postgres_url)
    world = make_world(tmp_path)
    task = world.task(world.checkpoint("race"), "implement")
    world.close()
    ctx = multiprocessing.get_context("spawn")
    barrier, done = ctx.Barrier(2), ctx.Barrier(2)
    outs = [tmp_path / f"replica-{n}.json" for n in range(2)]
    procs = [
        ctx.Process(
            target=_replica,
            args=(
                str(world.data_dir),
                Codec().dumps(task).decode(),
                n,
                barrier,
                done,
                str(outs[n]),
            ),
        )
        for n in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(240)
    assert [p.exitcode for p in procs] == [0, 0]
    a, b = (json.loads(o.read_text()) for o in outs)
    fences = []
    for ra, rb in zip(a, b, strict=True):
        winners = [r for r in (ra, rb) if "fence" in r]
        assert len(winners) == 1, (ra, rb)  # one winner per round
        loser = ra if winners[0] is rb else rb
        assert loser["refused"] == ErrorCode.ILLEGAL_TRANSITION.value
        fences.append(winners[0]["fence"])
    assert fences == list(range(1, ROUNDS + 1))  # strictly increasing, none handed out twice
