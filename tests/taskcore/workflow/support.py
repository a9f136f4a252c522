"""Shared builders for the authority and workflow tests: real git repositories, a real journal.

Everything here goes through the public functions (operator acts, the journal); nothing
writes rows behind the journal's back.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import attrs
from taskcore.actors import Actor, Tier
from taskcore.authority import (
    ReferenceSpec,
    RequirementStep,
    WorkflowRequirement,
    enroll_executor,
    install_requirement,
    register_profile,
    register_repository,
)
from taskcore.clock import FakeClock
from taskcore.contract import (
    ActionClass,
    AgentIdentity,
    AssertionOutcome,
    CriterionMode,
    CriterionOutcome,
    CriterionResult,
    ExecutorBinding,
    GraphStatus,
    MutationAction,
    TaskClaimRequest,
    TaskCriterion,
    TaskMutationRequest,
    TaskResultAssertion,
    TrustClass,
    WorkflowProgression,
    WorkflowTask,
    sign_observation,
)
from taskcore.signing import public_key_hex
from taskcore.store import open_storage
from taskcore.store.storage import SqliteStorage
from taskcore.testing import OTHER_SEED as OTHER_SEED  # RFC 8032 test keys, re-exported
from taskcore.testing import SEED as SEED
from taskcore.workflow import ActorGuard, Caller, WorkflowJournal
from taskcore.workflow.types import CheckpointRequest, CheckpointResponse, NextRequest

WORKSPACE = "acme"
REPO = "widgets"
PROFILE = "default"
TARGET = "refs/heads/main"

_GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` and return its stdout."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, env=_GIT_ENV, check=True
    )
    return done.stdout.decode().strip()


def init_repo(path: Path) -> Path:
    """A fresh git repository at ``path``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


def commit(repo: Path, files: dict[str, str | bytes | None], message: str = "change") -> str:
    """Write (or delete, for None) ``files``, commit everything, return the commit name."""
    for name, body in files.items():
        target = repo / name
        if body is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            target.write_bytes(body)
        else:
            target.write_text(body)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def criterion(name: str, mode: CriterionMode, required: bool = True) -> TaskCriterion:
    return TaskCriterion(criterion=name, description=f"{name} holds", mode=mode, required=required)


ELIGIBLE = CriterionMode.OBSERVATION_ELIGIBLE
CONTROLLER = CriterionMode.CONTROLLER_ONLY


def requirement(**overrides: Any) -> WorkflowRequirement:
    """implement -> tests -> review, with one named reference on implement."""
    steps = (
        RequirementStep(
            step_id="implement",
            summary="Implement the change.",
            action_class=ActionClass.IMPLEMENT,
            graph_status=GraphStatus.REQUIRED,
            progression=WorkflowProgression.AGENT_RESULT,
            depends_on=(),
            criteria=(criterion("builds", ELIGIBLE),),
            references=(ReferenceSpec(name="guide", path="docs/guide.md"),),
        ),
        RequirementStep(
            step_id="tests",
            summary="Run the tests.",
            action_class=ActionClass.TEST,
            graph_status=GraphStatus.REQUIRED,
            progression=WorkflowProgression.AGENT_RESULT,
            depends_on=("implement",),
            criteria=(criterion("pass", ELIGIBLE), criterion("notes", CONTROLLER, False)),
            references=(),
        ),
        RequirementStep(
            step_id="review",
            summary="Independent review.",
            action_class=ActionClass.REVIEW,
            graph_status=GraphStatus.REQUIRED,
            progression=WorkflowProgression.CONTROLLER,
            depends_on=("tests",),
            criteria=(criterion("approved", CONTROLLER),),
            references=(),
        ),
    )
    base = WorkflowRequirement(version=1, requirement_id="ci", summary="CI", steps=steps)
    return attrs.evolve(base, **overrides)


def actor(
    token_id: str = "agent1", *, tier: Tier = Tier.AGENT, workspace: str = WORKSPACE
) -> Actor:
    return Actor(token_id=token_id, workspace=workspace, tier=tier, autonomy=1)


@attrs.define
class World:
    """A data dir with a registered repository, profile and requirement, and a journal."""

    root: Path
    repo: Path
    data_dir: Path
    storage: SqliteStorage
    clock: FakeClock
    journal: WorkflowJournal
    requirement_digest: str
    head: str

    def caller(self, who: Actor | None = None) -> Caller:
        who = who or actor()
        return Caller(actor=who, repository_id=REPO, profile_id=PROFILE, guard=ActorGuard(who))

    def checkpoint(
        self,
        change_id: str = "c1",
        commit_name: str | None = None,
        context: str = "",
        who: Actor | None = None,
    ) -> CheckpointResponse:
        return self.journal.checkpoint(
            self.caller(who),
            CheckpointRequest(
                version=1, change_id=change_id, commit=commit_name or self.head, context=context
            ),
        )

    def task(self, response: CheckpointResponse, step: str) -> WorkflowTask:
        """The stored WorkflowTask of ``step`` in a checkpoint response."""
        summary = next(t for t in response.tasks if t.step_id == step)
        with self.storage.read() as tx:
            record = tx.journal.get_task(summary.task_id)
        assert record is not None
        from taskcore.codec import decode

        return decode(WorkflowTask, record.body)

    def next_task(self, change_id: str = "c1", who: Actor | None = None) -> Any:
        return self.journal.next(self.caller(who), NextRequest(version=1, change_id=change_id))

    def enroll(
        self, step: str = "implement", registration: str = "reg-1", seed: str = SEED
    ) -> ExecutorBinding:
        enrollment = enroll_executor(
            self.storage,
            self.clock,
            registration_id=registration,
            executor_id="exec-1",
            repository_id=REPO,
            step_id=step,
            verification_key_id="key-1",
            public_key=public_key_hex(seed),
        )
        return enrollment.binding

    def close(self) -> None:
        self.storage.close()


def make_world(
    root: Path, *, req: WorkflowRequirement | None = None, lease_max_ms: int = 3_600_000
) -> World:
    repo = init_repo(root / "repo")
    head = commit(repo, {"docs/guide.md": "# Guide\nDo it well.\n", "src/app.py": "print('hi')\n"})
    data_dir = root / "data"
    storage = open_storage(data_dir, create=True)
    clock = FakeClock()
    register_repository(storage, clock, workspace=WORKSPACE, repository_id=REPO, work_tree=repo)
    installed = install_requirement(
        storage, clock, repository_id=REPO, requirement=req or requirement()
    )
    register_profile(
        storage,
        clock,
        repository_id=REPO,
        profile_id=PROFILE,
        target=TARGET,
        requirement_digest=installed.requirement_digest,
    )
    journal = WorkflowJournal(storage, clock=clock, lease_max_ms=lease_max_ms)
    return World(
        root=root,
        repo=repo,
        data_dir=data_dir,
        storage=storage,
        clock=clock,
        journal=journal,
        requirement_digest=installed.requirement_digest,
        head=head,
    )


def claim_request(
    task: WorkflowTask,
    request_id: str = "claim-1",
    *,
    op: str = "op-1",
    lease_ms: int = 60_000,
    executor: ExecutorBinding | None = None,
) -> TaskClaimRequest:
    return TaskClaimRequest(
        version=1,
        request_id=request_id,
        task_id=task.task_id,
        task_digest=task.digest,
        execution_operation_id=op,
        requested_lease_ms=lease_ms,
        executor=executor,
    )


def mutation(
    claimed: dict[str, Any],
    action: MutationAction,
    request_id: str,
    *,
    reason: str | None = None,
    fence: int | None = None,
) -> TaskMutationRequest:
    """A heartbeat/cancel/reconcile for the attempt in a parsed ClaimOutcome."""
    attempt = claimed["attempt"]
    executor = attempt["executor"]
    return TaskMutationRequest(
        version=1,
        request_id=request_id,
        action=action,
        task_id=attempt["task_id"],
        task_digest=attempt["task_digest"],
        attempt_id=attempt["attempt_id"],
        attempt_digest=claimed["attempt_digest"],
        execution_operation_id=attempt["execution_operation_id"],
        executor=None if executor is None else ExecutorBinding(**executor),
        fence=attempt["fence"] if fence is None else fence,
        reason=reason if action is not MutationAction.HEARTBEAT else None,
    )


def result_for(
    claimed: dict[str, Any],
    task: WorkflowTask,
    request_id: str = "result-1",
    *,
    outcome: AssertionOutcome = AssertionOutcome.PASSED,
    who: Actor | None = None,
    seed: str | None = None,
    rows: dict[str, CriterionOutcome] | None = None,
    fence: int | None = None,
) -> TaskResultAssertion:
    """An assertion (or, when the attempt has an executor, a signed observation)."""
    who = who or actor()
    attempt = claimed["attempt"]
    executor = None if attempt["executor"] is None else ExecutorBinding(**attempt["executor"])
    criteria = []
    for c in task.criteria:
        if c.mode is CriterionMode.CONTROLLER_ONLY:
            value = CriterionOutcome.NOT_CLAIMED
        elif rows and c.criterion in rows:
            value = rows[c.criterion]
        else:
            value = (
                CriterionOutcome.PASSED
                if outcome is AssertionOutcome.PASSED
                else CriterionOutcome.FAILED
            )
        criteria.append(
            CriterionResult(criterion=c.criterion, outcome=value, findings=(), evidence_digests=())
        )
    assertion = TaskResultAssertion(
        version=1,
        task_id=task.task_id,
        task_digest=task.digest,
        attempt_id=attempt["attempt_id"],
        attempt_digest=claimed["attempt_digest"],
        request_id=request_id,
        execution_operation_id=attempt["execution_operation_id"],
        agent=AgentIdentity(owner_id=who.owner_id, agent_id=who.agent_id),
        executor=executor,
        fence=attempt["fence"] if fence is None else fence,
        trust_class=TrustClass.AGENT_ASSERTION
        if executor is None
        else TrustClass.REGISTERED_EXECUTOR_OBSERVATION,
        outcome=outcome,
        criteria=tuple(criteria),
        executor_provenance=None,
    )
    if executor is not None:
        assertion = sign_observation(assertion, seed or SEED)
    return assertion


def parse(raw: bytes) -> Any:
    return json.loads(raw)
