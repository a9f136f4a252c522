"""The evidence ladder: where one session stands, and the one condition it is missing.

======  ====================  ===========================================================
rung    name                  the session left ...
======  ====================  ===========================================================
0       ``none``              no claim and no written file (a question answered, a look
                              around); never below the line, the gate stays silent
1       ``done_claimed``      a claim of completion, nothing written, nothing checked
2       ``artifact_changed``  files written, and no check passed after the last change
3       ``verified``          a test, build, lint or CI-watch command exited 0 after the
                              last change (and none failed after it)
4       ``committed``         rung 3, and a ``git commit`` succeeded after the last change
5       ``shipped``           rung 4, and a push or deploy succeeded after that commit
======  ====================  ===========================================================

Rungs 1 and 2 are *below the line*. The ladder is cumulative: a commit of unchecked work is
still rung 2 (the seed counts "a commit" below the line when nothing checked it). A check that
passed before the last change is *stale*; a check that is still running (a background run, a
long Codex command) is *pending*, never passed; a check whose exit status a pipe or ``||``
could hide is *masked*, never passed.

Whether the agent claimed completion is read from its last message with a fixed word list
(never a model): "done", "implemented", "fixed", "all set", "I've added" and the like, and
not when the message ends on a question.

>>> from taskcore.donegate.evidence import Evidence
>>> ev = Evidence(harness="claude-code")
>>> ev.issue_edit("e1", ["src/app.py"], ev.next_pos(1))
>>> ev.resolve_edit("e1", ok=True)
>>> v = evaluate([ev], last_message="Done - the parser now handles tabs.")
>>> (v.rung, v.rung_name, v.below_line, v.missing)
(2, 'artifact_changed', True, 'no test, build, or lint command ran in this session')
"""

from __future__ import annotations

import collections
import json
import re

from taskcore.limits import DONE_GATE_RUNGS

TYPE_CHECKING = False  # not typing's: the Stop hook's fast path places sessions without it
if TYPE_CHECKING:
    from collections.abc import Sequence

    from taskcore.donegate.evidence import Check, Evidence, Pos

__all__ = ["RUNG_NAMES", "Verdict", "claims_done", "evaluate"]

RUNG_NAMES = ("none", "done_claimed", "artifact_changed", "verified", "committed", "shipped")
"""Rung names by number (0 to 5)."""

_CLAIM = re.compile(
    r"\b(done|completed?|finished|implemented|fixed|resolved|all set|ready|in place|"
    r"works now|now works|now passes|should (?:now )?work|successfully|refactored|"
    r"i(?:'ve| have) (?:added|updated|created|written|made|changed|removed|renamed|moved|"
    r"wired|replaced|rewritten|applied|fixed|implemented))\b",
    re.IGNORECASE,
)


def claims_done(text: str) -> bool:
    """Whether an agent message claims the work is complete (a fixed word list).

    >>> claims_done("I've updated the handler and added a test.")
    True
    >>> claims_done("Which database should I use?")
    False
    >>> claims_done("The file defines three classes.")
    False
    """
    stripped = text.strip()
    if not stripped or stripped.endswith("?"):
        return False
    return _CLAIM.search(stripped[-2000:]) is not None


class Verdict(
    collections.namedtuple(
        "Verdict",
        (
            "rung",
            "rung_name",
            "below_line",
            "missing",
            "stale",
            "ask",
            "files_written",
            "checks_run",
            "commits",
            "ships",
            "claimed",
        ),
    )
):
    """One session's place on the ladder and what the receipt says about it.

    A named tuple, not an attrs class: the Stop hook's fast path
    (:mod:`taskcore.donegate.quickhook`) places a grown transcript without loading attrs.
    Build it with keywords; :meth:`to_json` is the form the index stores.
    """

    __slots__ = ()
    rung: int
    rung_name: str
    below_line: bool
    missing: str
    stale: bool
    ask: str
    files_written: int
    checks_run: int
    commits: int
    ships: int
    claimed: bool

    def to_json(self) -> str:
        """The stored form (every field, in order; :mod:`taskcore.donegate.quickhook` reads it)."""
        return json.dumps(self._asdict(), ensure_ascii=False, separators=(",", ":"))


def _short(cmd: str, limit: int = 48) -> str:
    cmd = " ".join(cmd.split())
    return cmd if len(cmd) <= limit else cmd[: limit - 3] + "..."


def _latest_by_kind(checks: Sequence[Check]) -> dict[str, Check]:
    latest: dict[str, Check] = {}
    for c in sorted(checks, key=lambda c: c.pos):
        latest[c.kind] = c
    return latest


def evaluate(states: Sequence[Evidence], *, last_message: str | None = None) -> Verdict:
    """Place a session (its own state first, then any subagents' states) on the ladder.

    ``last_message`` is the harness's ``last_assistant_message`` when the transcript lags.
    """
    main = states[0]
    last_change: Pos | None = None
    checks: list[Check] = []
    last_commit: Pos | None = None
    last_ship: Pos | None = None
    files = commits = ships = runs = 0
    for ev in states:
        if ev.last_change is not None and (last_change is None or ev.last_change > last_change):
            last_change = ev.last_change
        checks.extend(ev.checks)
        checks.extend(ev.pending_checks())
        if ev.last_commit is not None and (last_commit is None or ev.last_commit > last_commit):
            last_commit = ev.last_commit
        if ev.last_ship is not None and (last_ship is None or ev.last_ship > last_ship):
            last_ship = ev.last_ship
        files += ev.files_written()
        commits += ev.commits
        ships += ev.ships
        runs += ev.checks_run() + len(ev.pending_checks())
    text = last_message if last_message is not None and last_message.strip() else main.last_text
    claimed = claims_done(text)

    after = [c for c in checks if last_change is None or c.pos > last_change]
    latest = _latest_by_kind(after)
    failed = [c for c in latest.values() if c.status == "failed"]
    passed = [c for c in latest.values() if c.status == "passed"]
    verified = bool(passed) and not failed
    stale = (
        not verified
        and last_change is not None
        and any(c.status == "passed" and c.pos < last_change for c in checks)
    )

    if verified:
        committed = last_commit is not None and (last_change is None or last_commit > last_change)
        shipped = (
            committed
            and last_ship is not None
            and last_commit is not None
            and (last_ship > last_commit)
        )
        rung = 5 if shipped else 4 if committed else 3
    elif last_change is not None:
        rung = 2
    elif claimed:
        rung = 1
    else:
        rung = 0
    missing, ask = _missing(rung, after, failed, stale, runs, last_change is not None)
    return Verdict(
        rung=rung,
        rung_name=RUNG_NAMES[rung],
        below_line=rung in (1, 2),
        missing=missing,
        stale=stale,
        ask=ask,
        files_written=files,
        checks_run=runs,
        commits=commits,
        ships=ships,
        claimed=claimed,
    )


_ASK_RUN = "→ could you run the check, or say in one line why there isn't one?"


def _missing(
    rung: int,
    after: Sequence[Check],
    failed: Sequence[Check],
    stale: bool,
    runs: int,
    changed: bool,
) -> tuple[str, str]:
    if rung == DONE_GATE_RUNGS:
        return (
            "nothing: the session reached the top rung",
            "→ anything else you would want checked before calling it done?",
        )
    if rung == 4:
        return (
            "the commit is not pushed or deployed",
            "→ is the commit meant to be pushed, or is it staying local?",
        )
    if rung == 3:
        return (
            "no commit followed the verified change",
            "→ is the change meant to be committed, or is it staying uncommitted?",
        )
    if rung == 0:
        return (
            "no completion was claimed and nothing was written",
            "→ is there work you meant to finish in this session?",
        )
    by_state = sorted(after, key=lambda c: c.pos)
    if failed:
        c = max(failed, key=lambda c: c.pos)
        code = "" if c.exit is None else f" {c.exit}"
        where = " after the last change" if changed else ""
        return (
            f"`{_short(c.cmd)}` exited{code}{where}",
            "→ could you fix what failed and run it again, or say in one line why it can't pass?",
        )
    pending = [c for c in by_state if c.status == "pending"]
    if pending:
        return (
            f"`{_short(pending[-1].cmd)}` has not reported an exit code yet",
            "→ could you wait for it to finish, or say in one line why it needn't?",
        )
    interrupted = [c for c in by_state if c.status == "interrupted"]
    if interrupted:
        return (
            f"`{_short(interrupted[-1].cmd)}` was interrupted before it exited",
            "→ could you run it to the end, or say in one line why it needn't run?",
        )
    masked = [c for c in by_state if c.status == "masked"]
    if masked:
        return (
            f"`{_short(masked[-1].cmd)}` ran, but a pipe or || hid its exit status",
            "→ could you rerun it so its exit status shows, or say in one line why not?",
        )
    if stale:
        return ("the last passing check ran before the last change", _ASK_RUN)
    if rung == 1:
        return ("nothing was written and no test, build, or lint command ran", _ASK_RUN)
    if runs and changed:
        return ("no test, build, or lint command passed after the last change", _ASK_RUN)
    return ("no test, build, or lint command ran in this session", _ASK_RUN)
