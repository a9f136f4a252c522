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
import re
from typing import Any, Final

import attrs

from taskcore.collector.nextstep import ADVICE, advise
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    QUALIFICATION_FAILURES_MAX,
    RUN_ARGV0_MAX_CHARS,
    RUN_FAILURES_MAX,
    RUN_TAIL_MAX_CHARS,
    STEPS_MAX,
)

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

_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_OPERATIONS: Final = ("collector_claim", "reconcile", "collector_finalize", "checkpoint", "none")
_STATES: Final = ("pending", "claimed", "succeeded", "failed", "uncertain", "blocked")

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

_RUN_FIELDS: Final = frozenset(
    {
        "task_id",
        "step_id",
        "outcome",
        "exit_status",
        "signal",
        "argv0",
        "stdout_tail",
        "stderr_tail",
    }
)


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
        return advise(self.next, self.failures, change="-").sentence

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


def _malformed(why: str) -> TaskError:
    return TaskError(ErrorCode.MALFORMED_RESPONSE, why)


def _hex_or_none(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or _HEX64.fullmatch(value) is None:
        raise _malformed(f"{what} is not 64 lowercase hex")
    return value


def _id(value: Any, what: str) -> str:
    if not isinstance(value, str) or _ID.fullmatch(value) is None:
        raise _malformed(f"{what} is not an identifier")
    return value


def validate_answer(raw: Any, *, local_revision: str | None) -> Answer:
    """Validate a qualification answer strictly; raise ``MALFORMED_RESPONSE`` or ``INVALID_VALUE``.

    ``next.operation`` is one of the five values, ``task_id`` present exactly for
    collector_claim and reconcile; ids and codes match ``[A-Za-z0-9._-]{1,128}``; at most 32
    failures; ``receipt_digest`` and ``revision`` are 64 lowercase hex (``receipt_digest``
    null unless qualified); ``revision`` must equal the local subject's revision.
    """
    expected = {
        "qualified",
        "subject_current",
        "receipt_digest",
        "revision",
        "tasks",
        "failures",
        "next",
    }
    if not isinstance(raw, dict) or set(raw) - {"run_failures"} != expected:
        raise _malformed("the answer does not have exactly the qualification fields")
    runs = _run_failures(raw.get("run_failures", []))
    qualified, current = raw["qualified"], raw["subject_current"]
    if type(qualified) is not bool or type(current) is not bool:
        raise _malformed("qualified and subject_current are booleans")
    receipt = _hex_or_none(raw["receipt_digest"], "receipt_digest")
    revision = _hex_or_none(raw["revision"], "revision")
    if qualified != (receipt is not None):
        raise _malformed("receipt_digest is present exactly when qualified")
    if qualified and not current:
        raise _malformed("a qualified answer must be about the current subject")
    if revision is not None and revision != local_revision:
        raise _malformed("the answer's revision is not the local subject's revision")
    if qualified and revision is None:
        raise _malformed("a qualified answer names its revision")
    tasks, failures = raw["tasks"], raw["failures"]
    if not isinstance(tasks, list) or len(tasks) > STEPS_MAX:
        raise _malformed("tasks is a bounded list")
    for task in tasks:
        if not isinstance(task, dict) or set(task) != {
            "task_id",
            "task_digest",
            "step_id",
            "required",
            "state",
        }:
            raise _malformed("a task row does not have exactly its fields")
        _id(task["task_id"], "task_id")
        _id(task["step_id"], "step_id")
        _hex_or_none(task["task_digest"], "task_digest")
        if type(task["required"]) is not bool or task["state"] not in _STATES:
            raise _malformed("a task row has a bad required flag or state")
    if not isinstance(failures, list) or len(failures) > QUALIFICATION_FAILURES_MAX:
        raise _malformed(f"failures is a list of at most {QUALIFICATION_FAILURES_MAX}")
    typed: list[tuple[str, str]] = []
    for failure in failures:
        if not isinstance(failure, dict) or set(failure) != {"task_id", "code"}:
            raise _malformed("a failure is exactly {task_id, code}")
        typed.append((_id(failure["task_id"], "task_id"), _id(failure["code"], "code")))
    step = raw["next"]
    if not isinstance(step, dict) or step.get("operation") not in _OPERATIONS:
        raise _malformed("next.operation is not one of the five operations")
    needs = step["operation"] in ("collector_claim", "reconcile")
    if set(step) != ({"operation", "task_id"} if needs else {"operation"}):
        raise TaskError(
            ErrorCode.MALFORMED_RESPONSE,
            "next.task_id is required for collector_claim and reconcile and absent otherwise",
        )
    if needs:
        _id(step["task_id"], "next.task_id")
    return Answer(
        qualified=qualified,
        subject_current=current,
        receipt_digest=receipt,
        revision=revision,
        failures=tuple(typed),
        next={k: str(v) for k, v in step.items()},
        run_failures=runs,
    )


def _run_failures(raw: Any) -> tuple[dict[str, Any], ...]:
    """Validate the additive ``run_failures`` rows strictly (bounded, exactly their fields)."""
    if not isinstance(raw, list) or len(raw) > RUN_FAILURES_MAX:
        raise _malformed(f"run_failures is a list of at most {RUN_FAILURES_MAX}")
    out = []
    for row in raw:
        if not isinstance(row, dict) or set(row) != _RUN_FIELDS:
            raise _malformed("a run_failures row does not have exactly its fields")
        _id(row["task_id"], "task_id")
        _id(row["step_id"], "step_id")
        _id(row["outcome"], "outcome")
        for name, hi in (("exit_status", 255), ("signal", 128)):
            value = row[name]
            if value is not None and (type(value) is not int or not 0 <= value <= hi):
                raise _malformed(f"{name} is a small integer or null")
        for name, limit in (
            ("argv0", RUN_ARGV0_MAX_CHARS),
            ("stdout_tail", RUN_TAIL_MAX_CHARS),
            ("stderr_tail", RUN_TAIL_MAX_CHARS),
        ):
            if not isinstance(row[name], str) or len(row[name]) > limit:
                raise _malformed(f"{name} is a bounded string")
        out.append(dict(row))
    return tuple(out)


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
