"""The strict check of a qualification answer, standard library only.

:func:`check_answer` holds the seed's rules for the answer a task-stop hook reads; both the full
hook (:func:`taskcore.collector.stop.validate_answer`, which turns a refusal into
``MALFORMED_RESPONSE``) and the slim pass path (:mod:`taskcore.collector.quickstop`) call it,
so the two cannot disagree about what a valid answer is. It imports no attrs, enum or typing:
a Stop hook that passes loads only this, the limits and the standard library.

>>> answer = {"qualified": True, "subject_current": True, "receipt_digest": "a" * 64,
...     "revision": "b" * 64, "tasks": [], "failures": [], "next": {"operation": "none"}}
>>> check_answer(answer, local_revision="b" * 64)["qualified"]
True
>>> check_answer(dict(answer, next={"operation": "reconcile"}), local_revision="b" * 64)
Traceback (most recent call last):
taskcore.collector.stopanswer.AnswerError: next.task_id is required for collector_claim and reconcile and absent otherwise
"""

from __future__ import annotations

from taskcore.limits import (
    QUALIFICATION_FAILURES_MAX,
    RUN_ARGV0_MAX_CHARS,
    RUN_FAILURES_MAX,
    RUN_TAIL_MAX_CHARS,
    STEPS_MAX,
)

TYPE_CHECKING = False  # not typing's: importing typing alone costs a Stop hook ~5 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = ["OPERATIONS", "AnswerError", "check_answer"]

_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
"""``[A-Za-z0-9._-]``, an identifier's characters (1 to 128 of them)."""
_HEX_CHARS = frozenset("0123456789abcdef")
"""``[0-9a-f]``, a digest's characters (64 of them)."""
OPERATIONS = ("collector_claim", "reconcile", "collector_finalize", "checkpoint", "none")
"""The five values of ``next.operation``."""
_STATES = ("pending", "claimed", "succeeded", "failed", "uncertain", "blocked")
_FIELDS = frozenset(
    {"qualified", "subject_current", "receipt_digest", "revision", "tasks", "failures", "next"}
)
_TASK_FIELDS = frozenset({"task_id", "task_digest", "step_id", "required", "state"})
_RUN_FIELDS = frozenset(
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


class AnswerError(ValueError):
    """The answer breaks a rule; the message says which (no server text)."""


def _hex_or_none(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) != 64 or not _HEX_CHARS.issuperset(value):
        raise AnswerError(f"{what} is not 64 lowercase hex")
    return value


def _id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= 128 or not _ID_CHARS.issuperset(value):
        raise AnswerError(f"{what} is not an identifier")
    return value


def check_answer(raw: Any, *, local_revision: str | None) -> dict[str, Any]:
    """Check a qualification answer strictly; raise :class:`AnswerError` on the first break.

    ``next.operation`` is one of the five values, ``task_id`` present exactly for
    collector_claim and reconcile; ids and codes match ``[A-Za-z0-9._-]{1,128}``; at most 32
    failures; ``receipt_digest`` and ``revision`` are 64 lowercase hex (``receipt_digest``
    null unless qualified); ``revision`` must equal the local subject's revision.

    Returns the checked fields: ``qualified``, ``subject_current``, ``receipt_digest``,
    ``revision``, ``failures`` (``(task_id, code)`` pairs), ``next`` (string values) and
    ``run_failures`` (copies of the rows).
    """
    if not isinstance(raw, dict) or set(raw) - {"run_failures"} != _FIELDS:
        raise AnswerError("the answer does not have exactly the qualification fields")
    runs = _run_failures(raw.get("run_failures", []))
    qualified, current = raw["qualified"], raw["subject_current"]
    if type(qualified) is not bool or type(current) is not bool:
        raise AnswerError("qualified and subject_current are booleans")
    receipt = _hex_or_none(raw["receipt_digest"], "receipt_digest")
    revision = _hex_or_none(raw["revision"], "revision")
    if qualified != (receipt is not None):
        raise AnswerError("receipt_digest is present exactly when qualified")
    if qualified and not current:
        raise AnswerError("a qualified answer must be about the current subject")
    if revision is not None and revision != local_revision:
        raise AnswerError("the answer's revision is not the local subject's revision")
    if qualified and revision is None:
        raise AnswerError("a qualified answer names its revision")
    tasks, failures = raw["tasks"], raw["failures"]
    if not isinstance(tasks, list) or len(tasks) > STEPS_MAX:
        raise AnswerError("tasks is a bounded list")
    for task in tasks:
        if not isinstance(task, dict) or set(task) != _TASK_FIELDS:
            raise AnswerError("a task row does not have exactly its fields")
        _id(task["task_id"], "task_id")
        _id(task["step_id"], "step_id")
        _hex_or_none(task["task_digest"], "task_digest")
        if type(task["required"]) is not bool or task["state"] not in _STATES:
            raise AnswerError("a task row has a bad required flag or state")
    if not isinstance(failures, list) or len(failures) > QUALIFICATION_FAILURES_MAX:
        raise AnswerError(f"failures is a list of at most {QUALIFICATION_FAILURES_MAX}")
    typed: list[tuple[str, str]] = []
    for failure in failures:
        if not isinstance(failure, dict) or set(failure) != {"task_id", "code"}:
            raise AnswerError("a failure is exactly {task_id, code}")
        typed.append((_id(failure["task_id"], "task_id"), _id(failure["code"], "code")))
    step = raw["next"]
    if not isinstance(step, dict) or step.get("operation") not in OPERATIONS:
        raise AnswerError("next.operation is not one of the five operations")
    needs = step["operation"] in ("collector_claim", "reconcile")
    if set(step) != ({"operation", "task_id"} if needs else {"operation"}):
        raise AnswerError(
            "next.task_id is required for collector_claim and reconcile and absent otherwise"
        )
    if needs:
        _id(step["task_id"], "next.task_id")
    return {
        "qualified": qualified,
        "subject_current": current,
        "receipt_digest": receipt,
        "revision": revision,
        "failures": tuple(typed),
        "next": {k: str(v) for k, v in step.items()},
        "run_failures": runs,
    }


def _run_failures(raw: Any) -> tuple[dict[str, Any], ...]:
    """Check the additive ``run_failures`` rows strictly (bounded, exactly their fields)."""
    if not isinstance(raw, list) or len(raw) > RUN_FAILURES_MAX:
        raise AnswerError(f"run_failures is a list of at most {RUN_FAILURES_MAX}")
    out = []
    for row in raw:
        if not isinstance(row, dict) or set(row) != _RUN_FIELDS:
            raise AnswerError("a run_failures row does not have exactly its fields")
        _id(row["task_id"], "task_id")
        _id(row["step_id"], "step_id")
        _id(row["outcome"], "outcome")
        for name, hi in (("exit_status", 255), ("signal", 128)):
            value = row[name]
            if value is not None and (type(value) is not int or not 0 <= value <= hi):
                raise AnswerError(f"{name} is a small integer or null")
        for name, limit in (
            ("argv0", RUN_ARGV0_MAX_CHARS),
            ("stdout_tail", RUN_TAIL_MAX_CHARS),
            ("stderr_tail", RUN_TAIL_MAX_CHARS),
        ):
            if not isinstance(row[name], str) or len(row[name]) > limit:
                raise AnswerError(f"{name} is a bounded string")
        out.append(dict(row))
    return tuple(out)
