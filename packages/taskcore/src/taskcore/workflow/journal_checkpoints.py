"""The journal's checkpoints: capabilities, compiling a checkpoint and recording its subject."""

from __future__ import annotations

from taskcore.authority.subjects import (
    CompiledCheckpoint,
    compile_checkpoint,
    record_subject,
    subject_references,
)
from taskcore.canonical import canonical_json
from taskcore.contract import CAPABILITY, SUPPORTED_SCHEMA_VERSIONS
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.journal_api import TaskRecord
from taskcore.workflow.derive import derive_tasks
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.journal_base import JournalBase
from taskcore.workflow.lookups import Caller, retry_refusal, route_view, to_subject_view
from taskcore.workflow.states import TaskState
from taskcore.workflow.types import CapabilitiesResponse, CheckpointRequest, CheckpointResponse

__all__ = [
    "CheckpointsMixin",
]


class CheckpointsMixin(JournalBase):
    """Capabilities and checkpoints (compile outside the write, record inside it)."""

    # -- schema discovery ---------------------------------------------------------------
    @staticmethod
    def capabilities(operations: tuple[str, ...]) -> CapabilitiesResponse:
        """The capability, schema versions and ``operations`` (sorted): task-independent."""
        return CapabilitiesResponse(
            capability=CAPABILITY,
            supported_schema_versions=SUPPORTED_SCHEMA_VERSIONS,
            operations=tuple(sorted(operations)),
        )

    # -- checkpoint ---------------------------------------------------------------------
    def checkpoint(self, caller: Caller, request: CheckpointRequest) -> CheckpointResponse:
        """Record the subject of ``request.change_id`` at ``request.commit`` and derive tasks.

        The commit is read from the operator-registered repository of the route; compiling
        (revision, reference hashes) happens before the writer transaction, which rechecks
        that the authority did not change meanwhile.
        """
        compiled = self.compile_checkpoint(caller, request)
        return self.record_checkpoint(caller, compiled, retry=request.retry)

    def compile_checkpoint(self, caller: Caller, request: CheckpointRequest) -> CompiledCheckpoint:
        """Compile a checkpoint from git (read transaction for the route, git outside it)."""
        with self._read() as tx:
            view = route_view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.CHECKPOINT))
        return compile_checkpoint(
            view,
            change_id=request.change_id,
            commit=request.commit,
            context=request.context.encode("utf-8"),
        )

    def record_checkpoint(
        self, caller: Caller, compiled: CompiledCheckpoint, *, retry: bool = False
    ) -> CheckpointResponse:
        """Record a compiled checkpoint and derive its tasks in one writer transaction.

        Refuses (``CONFLICT``) if the authority changed since ``compiled`` was compiled. With
        ``retry``, the same inputs as the newest subject become a new Change version when
        :func:`retry_refusal` allows it (see :attr:`CheckpointRequest.retry`).
        """
        if (compiled.repository_id, compiled.profile_id) != (
            caller.repository_id,
            caller.profile_id,
        ):
            raise TaskError(ErrorCode.BAD_INPUT, "the checkpoint was compiled for another route")
        with self._write(caller, GuardAction.CHECKPOINT) as tx:
            view = route_view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.CHECKPOINT))
            now = self.clock.now_ms()
            previous = tx.authority.latest_subject(
                caller.repository_id, caller.profile_id, compiled.change_id
            )
            again = (
                retry
                and previous is not None
                and previous.binding_digest == compiled.binding_digest()
            )
            if again:
                assert previous is not None
                refusal = retry_refusal(tx, previous)
                if refusal is not None:
                    raise TaskError(ErrorCode.CONFLICT, refusal)
            subject, created = record_subject(tx, compiled, now_ms=now, new_version=again)
            if created:
                plan = view.plan()
                for index, task in enumerate(
                    derive_tasks(plan, subject, subject_references(subject))
                ):
                    inserted = tx.journal.insert_task(
                        TaskRecord(
                            task_id=task.task_id,
                            task_digest=task.digest,
                            subject_seq=subject.subject_seq,
                            repository_id=subject.repository_id,
                            profile_id=subject.profile_id,
                            change_id=subject.change_id,
                            step_id=task.subject.step_id,
                            plan_index=index,
                            body=canonical_json(task),
                            state=TaskState.PENDING.value,
                            next_fence=1,
                            current_attempt_id=None,
                            completion=None,
                            created_at_ms=now,
                            updated_at_ms=now,
                        )
                    )
                    if not inserted:
                        raise TaskError(ErrorCode.INTERNAL, "a derived task ID already exists")
                    self._log(
                        tx,
                        caller,
                        now=now,
                        task_id=task.task_id,
                        attempt_id=None,
                        event="derive",
                        before="none",
                        after=TaskState.PENDING.value,
                        fence=None,
                        request_id=None,
                    )
            tasks = tx.journal.tasks_of_subject(subject.subject_seq)
            return CheckpointResponse(
                created=created,
                subject=to_subject_view(subject, True),
                superseded_change_version=previous.change_version
                if created and previous is not None
                else None,
                tasks=self._summaries(tx, tasks, now),
            )
