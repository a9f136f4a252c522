"""The pure core of the task-stop hooks: strict answer validation, decision and feedback.

``agent-task task-stop`` (Claude Code) and ``task-codex-stop`` (Codex) ask ``qualification``
for the Change's current subject and pass only if the answer is qualified and current, the
workspace is clean and unchanged during the call, and its base is the qualified revision.
Everything else blocks with the typed failures, a fixed ``next_action`` sentence chosen from
``next.operation`` and ``next`` itself. This module holds the parts with no I/O:

* :func:`validate_answer` checks a qualification answer strictly (the seed's rules);
* :func:`decide` turns the answer and the two local reads into a :class:`StopDecision`;
* :class:`Category` names the fixed error categories (no paths, no server text).

>>> answer = {"qualified": True, "subject_current": True, "receipt_digest": "a" * 64,
...     "revision": "b" * 64, "tasks": [], "failures": [], "next": {"operation": "none"}}
>>> validate_answer(answer, local_revision="b" * 64).qualified
True
>>> validate_answer(dict(answer, next={"operation": "reconcile"}), local_revision="b" * 64)
Traceback (most recent call last):
taskcore.errors.TaskError: next.task_id is required for collector_claim and reconcile and absent otherwise
"""

from __future__ import annotations

import enum
import json
from typing import Any, Final

import attrs

from taskcore.collector.nextstep import ADVICE, advise
from taskcore.collector.stopanswer import AnswerError, check_answer
from taskcore.errors import ErrorCode, TaskError

__all__ = [
    "NEXT_ACTIONS",
    "Answer",
    "Category",
    "LocalRead",
    "StopDecision",
    "decide",
    "error_decision",
    "validate_answer",
]

NEXT_ACTIONS: Final = {
    "collector_claim": ADVICE["collect"],
    "reconcile": ADVICE["reconcile"],
    "collector_finalize": ADVICE["finalize"],
    "checkpoint": ADVICE["checkpoint"],
    "none": ADVICE["none"],
}
"""The fixed next_action sentence for each ``next.operation`` (with no failure that says more).

For ``none`` the failures choose among a few more fixed sentences
(:data:`taskcore.collector.nextstep.ADVICE`): a failed run says fix, commit, checkpoint,
collect; a run that no longer counts says checkpoint ``--retry``; a live attempt says wait.
"""


class Category(enum.Enum):
    """Fixed categories of local and remote errors (never paths or server text)."""

    LOCAL_STORE_UNAVAILABLE = "local_store_unavailable"
    WORKSPACE_UNAVAILABLE = "workspace_unavailable"
    TOKEN_UNAVAILABLE = "token_unavailable"  # noqa: S105 - a category name, not a secret
    SERVICE_REQUEST_FAILED = "service_request_failed"
    TOKEN_REJECTED = "token_rejected"  # noqa: S105 - a category name, not a secret
    MALFORMED_RESPONSE = "malformed_response"
    CHANGED_DURING_RUN = "changed_during_run"


@attrs.frozen(kw_only=True)
class Answer:
    """A strictly validated qualification answer."""

    qualified: bool
    subject_current: bool
    receipt_digest: str | None
    revision: str | None
    failures: tuple[tuple[str, str], ...]
    next: dict[str, str]
    run_failures: tuple[dict[str, Any], ...] = ()


@attrs.frozen(kw_only=True)
class LocalRead:
    """One read of the local state: the Change's subject and the workspace.

    ``subject`` is ``(subject_seq, change_version, revision, commit, context_digest,
    requirement_digest)`` or ``None``; ``head`` the workspace's HEAD commit; ``clean`` means
    no change, no untracked file and no operation in progress (merge, rebase, cherry-pick,
    revert, bisect); ``base_revision`` is the revision of HEAD; ``dirty_paths`` the first
    uncommitted paths (bounded), for the block message.
    """

    subject: tuple[int, int, str, str, str, str] | None
    head: str | None
    clean: bool
    base_revision: str | None
    dirty_paths: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class StopDecision:
    """Pass, or block with failures, a next_action sentence and next."""

    passed: bool
    failures: tuple[tuple[str, str], ...] = ()
    next: dict[str, str] = attrs.field(factory=lambda: {"operation": "none"})
    error: Category | None = None
    run_failures: tuple[dict[str, Any], ...] = ()
    dirty_paths: tuple[str, ...] = ()
    command: str | None = None

    @property
    def next_action(self) -> str:
        """The fixed sentence chosen from ``next.operation`` (and, for none, the failures)."""
        if self.error is not None:
            return NEXT_ACTIONS[self.next["operation"]]
        return advise(self.next, self.failures, change="-", run_failures=self.run_failures).sentence

    def feedback(self) -> dict[str, Any]:
        """The block feedback as data the agent reads (never executed by the hook).

        ``command`` (the documented command for ``next``, values filled in), ``run_failures``
        (why the collected run failed) and ``dirty_paths`` (what is uncommitted) are added
        when there is something to say.
        """
        out: dict[str, Any] = {
            "status": "blocked",
            "failures": [{"task_id": t, "code": c} for t, c in self.failures],
            "next_action": self.next_action,
            "next": dict(self.next),
        }
        if self.error is not None:
            out["error"] = self.error.value
        if self.command is not None:
            out["command"] = self.command
        if self.run_failures:
            out["run_failures"] = [dict(r) for r in self.run_failures]
        if self.dirty_paths:
            out["dirty_paths"] = list(self.dirty_paths)
        return out

    def text(self) -> str:
        """The feedback as the text a harness shows the agent: sentence, details, then JSON."""
        lines = ["agent-task: this Change is not done yet. " + self.next_action]
        if self.dirty_paths:
            lines.append("Uncommitted: " + ", ".join(self.dirty_paths))
        for run in self.run_failures:
            status = (
                f"exit {run['exit_status']}"
                if run.get("exit_status") is not None
                else f"signal {run.get('signal')}"
            )
            lines.append(
                f"The pinned check {run['argv0']} {run['outcome']} ({status}); output tail:"
            )
            tails = [t.strip() for t in (run["stdout_tail"], run["stderr_tail"]) if t.strip()]
            lines.append("\n".join(tails) or "(no output)")
        if self.command is not None:
            lines.append("Run: " + self.command)
        return "\n".join(lines) + "\n" + json.dumps(self.feedback(), sort_keys=True)


def validate_answer(raw: Any, *, local_revision: str | None) -> Answer:
    """Validate a qualification answer strictly; raise ``MALFORMED_RESPONSE``.

    The rules are :func:`taskcore.collector.stopanswer.check_answer` (shared with the slim
    pass path): ``next.operation`` is one of the five values, ``task_id`` present exactly for
    collector_claim and reconcile; ids and codes match ``[A-Za-z0-9._-]{1,128}``; at most 32
    failures; ``receipt_digest`` and ``revision`` are 64 lowercase hex (``receipt_digest``
    null unless qualified); ``revision`` must equal the local subject's revision.
    """
    try:
        checked = check_answer(raw, local_revision=local_revision)
    except AnswerError as err:
        raise TaskError(ErrorCode.MALFORMED_RESPONSE, str(err)) from None
    return Answer(**checked)


def error_decision(category: Category, *, dirty: bool = False) -> StopDecision:
    """A block for an error category (next is checkpoint when the local bytes are dirty)."""
    step = {"operation": "checkpoint"} if dirty else {"operation": "none"}
    return StopDecision(passed=False, next=step, error=category)


def decide(answer: Answer, before: LocalRead, after: LocalRead) -> StopDecision:
    """Pass only if qualified, current, clean, unchanged and at the qualified revision."""
    if before != after:
        return StopDecision(
            passed=False,
            failures=answer.failures,
            next={"operation": "checkpoint"},
            error=Category.CHANGED_DURING_RUN,
            dirty_paths=after.dirty_paths,
        )
    local_ok = (
        after.clean
        and after.subject is not None
        and after.base_revision is not None
        and after.base_revision == after.subject[2]
    )
    if not local_ok:
        return StopDecision(
            passed=False,
            failures=answer.failures,
            next={"operation": "checkpoint"},
            dirty_paths=after.dirty_paths,
        )
    if (
        answer.qualified
        and answer.subject_current
        and answer.revision is not None
        and answer.revision == after.base_revision
    ):
        return StopDecision(passed=True)
    return StopDecision(
        passed=False,
        failures=answer.failures,
        next=dict(answer.next),
        run_failures=answer.run_failures,
    )
