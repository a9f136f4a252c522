"""What a transcript left behind, kept as a small resumable state.

A reader (:mod:`taskcore.donegate.claude`, :mod:`taskcore.donegate.codex`) feeds one transcript line at
a time into an :class:`Evidence`; the state is plain data, serializes to JSON, and is stored in
the local index with the byte offset it covers, so the next read starts where the last one
stopped. Every event gets a position ``(timestamp_ms, sequence)``; "after the last change" is
a comparison of positions, so evidence from a session and its subagents can be merged.

A shell call is recorded when it is issued (pending) and resolved when its result arrives:
``passed`` (exit 0 and the line proves it), ``masked`` (exit 0 but a pipe or ``||`` could have
hidden a failure), ``failed`` (non-zero), ``interrupted``, or it stays ``pending`` (a
background run, or a long-running Codex command whose exit code arrives later). Denied calls
never ran and leave nothing.

>>> ev = Evidence(harness="claude-code")
>>> ev.issue_shell("t1", "uv run pytest -q", ev.next_pos(1000))
>>> ev.resolve_shell("t1", exit_code=0)
>>> [(c.kind, c.status) for c in ev.checks]
[('test', 'passed')]
"""

from __future__ import annotations

import json
import re

from taskcore.donegate.kinds import Kind
from taskcore.limits import (
    GATE_CHECKS_KEPT,
    GATE_FILES_KEPT,
    GATE_PENDING_MAX,
    GATE_TEXT_KEPT_CHARS,
)

TYPE_CHECKING = False  # not typing's: the Stop hook's fast path reads transcripts without it
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["STATE_VERSION", "Check", "Evidence", "Pos", "is_artifact_path"]

STATE_VERSION = 1
"""Bumped when the stored state's meaning changes; an older state is rebuilt from offset 0."""

Pos = tuple[int, int]
"""A position: (timestamp in ms, sequence within the transcript)."""

# Paths that belong to the harness itself, not to the work (plans, memory, todo lists).
# Compiled by ``re`` on first use: most writes are inside the working directory.
_TOOL_STATE = r"/\.(claude|codex)/(plans|todos|projects|sessions|memories)/"
# Recognised to *ignore* writes there (scratch files are not the work); nothing is created.
_TEMP_ROOTS = tuple(
    f"/{d}/" for d in ("tmp", "var/tmp", "private/tmp", "private/var/folders", "var/folders")
)


def is_artifact_path(path: str, cwd: str) -> bool:
    """Whether a write to ``path`` changes the work (not a temp file or the harness's state).

    Writes inside the session's working directory always count, even when that directory
    is itself under ``/tmp``.

    >>> is_artifact_path("src/app.py", "/home/u/repo")
    True
    >>> is_artifact_path("/tmp/scratch.txt", "/home/u/repo")
    False
    >>> is_artifact_path("/tmp/w/repo/app.py", "/tmp/w/repo")
    True
    >>> is_artifact_path("/home/u/.claude/plans/p.md", "/home/u/repo")
    False
    """
    if not path:
        return False
    if path.startswith("(") or not path.startswith("/"):
        return True  # labels and relative paths are inside the work tree
    if cwd and (path == cwd or path.startswith(cwd.rstrip("/") + "/")):
        return True
    if re.search(_TOOL_STATE, path):
        return False
    return not path.startswith(_TEMP_ROOTS)


class Check:
    """One classified command run: its kind, outcome and where it happened.

    Plain classes here (no dataclasses, no attrs): the Stop hook's fast path
    (:mod:`taskcore.donegate.quickhook`) reads transcripts without loading either.
    """

    __slots__ = ("cmd", "exit", "kind", "pos", "ref", "status")

    def __init__(
        self,
        kind: str,
        status: str,
        pos: Pos,
        cmd: str,
        exit: int | None = None,
        ref: str = "",
    ) -> None:
        self.kind = kind
        self.status = status  # passed | masked | failed | interrupted | pending
        self.pos = pos
        self.cmd = cmd
        self.exit = exit
        self.ref = ref

    def _key(self) -> tuple[Any, ...]:
        return (self.kind, self.status, self.pos, self.cmd, self.exit, self.ref)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Check):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return (
            f"Check(kind={self.kind!r}, status={self.status!r}, pos={self.pos!r}, "
            f"cmd={self.cmd!r}, exit={self.exit!r}, ref={self.ref!r})"
        )

    def to_json(self) -> list[Any]:
        """Compact list form for the stored state."""
        return [self.kind, self.status, list(self.pos), self.cmd, self.exit, self.ref]

    @classmethod
    def from_json(cls, raw: Any) -> Check:
        """Inverse of :meth:`to_json`."""
        kind, status, pos, cmd, exit_code, ref = raw
        return cls(
            kind=str(kind),
            status=str(status),
            pos=(int(pos[0]), int(pos[1])),
            cmd=str(cmd),
            exit=None if exit_code is None else int(exit_code),
            ref=str(ref),
        )


_FIELDS = (
    "harness",
    "version",
    "session_id",
    "cwd",
    "subagent",
    "agent_id",
    "parent_session_id",
    "seq",
    "ts",
    "first_ts",
    "lines",
    "bad_lines",
    "skipped_lines",
    "prompts",
    "last_prompt",
    "last_prompt_seq",
    "compactions",
    "files",
    "files_more",
    "writes",
    "last_change",
    "checks",
    "check_counts",
    "commits",
    "last_commit",
    "ships",
    "last_ship",
    "pending",
    "background",
    "last_text",
    "last_text_pos",
)
"""The state's fields, in the order of its stored JSON object."""

_POS_FIELDS = ("last_change", "last_commit", "last_ship", "last_text_pos")


class Evidence:
    """The resumable evidence state of one transcript."""

    __slots__ = _FIELDS

    def __init__(
        self,
        harness: str,
        version: int = STATE_VERSION,
        session_id: str = "",
        cwd: str = "",
        subagent: bool = False,
        agent_id: str = "",
        parent_session_id: str = "",
        seq: int = 0,
        ts: int = 0,
        first_ts: int = 0,
        lines: int = 0,
        bad_lines: int = 0,
        skipped_lines: int = 0,
        prompts: int = 0,
        last_prompt: str = "",
        last_prompt_seq: int = 0,
        compactions: int = 0,
        files: list[str] | None = None,
        files_more: int = 0,
        writes: int = 0,
        last_change: Pos | None = None,
        checks: list[Check] | None = None,
        check_counts: dict[str, int] | None = None,
        commits: int = 0,
        last_commit: Pos | None = None,
        ships: int = 0,
        last_ship: Pos | None = None,
        pending: dict[str, dict[str, Any]] | None = None,
        background: dict[str, str] | None = None,
        last_text: str = "",
        last_text_pos: Pos | None = None,
    ) -> None:
        self.harness = harness
        self.version = version
        self.session_id = session_id
        self.cwd = cwd
        self.subagent = subagent
        self.agent_id = agent_id
        self.parent_session_id = parent_session_id
        self.seq = seq
        self.ts = ts
        self.first_ts = first_ts
        self.lines = lines
        self.bad_lines = bad_lines
        self.skipped_lines = skipped_lines
        self.prompts = prompts
        self.last_prompt = last_prompt
        self.last_prompt_seq = last_prompt_seq
        self.compactions = compactions
        self.files: list[str] = [] if files is None else files
        self.files_more = files_more
        self.writes = writes
        self.last_change = last_change
        self.checks: list[Check] = [] if checks is None else checks
        self.check_counts: dict[str, int] = {} if check_counts is None else check_counts
        self.commits = commits
        self.last_commit = last_commit
        self.ships = ships
        self.last_ship = last_ship
        self.pending: dict[str, dict[str, Any]] = {} if pending is None else pending
        self.background: dict[str, str] = {} if background is None else background
        self.last_text = last_text
        self.last_text_pos = last_text_pos

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Evidence):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in _FIELDS)
        return f"Evidence({inner})"

    # -- positions ------------------------------------------------------------------------
    def next_pos(self, ts_ms: int | None) -> Pos:
        """Advance the sequence; the timestamp never goes backwards within one transcript."""
        self.seq += 1
        if ts_ms is not None and ts_ms > self.ts:
            self.ts = ts_ms
        if not self.first_ts and self.ts:
            self.first_ts = self.ts
        # Four slots per event: a check before a write of the same shell line (+1), the
        # write (+2), and a check after it (+3).
        return (self.ts, self.seq * 4)

    # -- events -----------------------------------------------------------------------------
    def change(self, pos: Pos, paths: Iterable[str]) -> None:
        """Record that ``paths`` were written at ``pos`` (non-artifact paths are ignored)."""
        counted = False
        for path in paths:
            if not is_artifact_path(path, self.cwd):
                continue
            counted = True
            if path in self.files:
                continue
            if len(self.files) < GATE_FILES_KEPT:
                self.files.append(path[:512])
            else:
                self.files_more += 1
        if counted:
            self.writes += 1
            if self.last_change is None or pos > self.last_change:
                self.last_change = pos

    def prompt(self, text: str, *, dedupe_within: int = 0) -> None:
        """Record a real user prompt (the budget is counted per prompt).

        ``dedupe_within`` drops a prompt with the same text recorded at most that many events
        ago (Codex writes each prompt twice: as a response item and as an event).
        """
        head = text.strip()[:200]
        if (
            dedupe_within
            and head == self.last_prompt
            and self.seq - self.last_prompt_seq <= (dedupe_within)
        ):
            return
        self.prompts += 1
        self.last_prompt = head
        self.last_prompt_seq = self.seq

    def assistant_text(self, text: str, pos: Pos) -> None:
        """Remember the last thing the agent said (the done-claim test reads it)."""
        text = text.strip()
        if text:
            self.last_text = text[-GATE_TEXT_KEPT_CHARS:]
            self.last_text_pos = pos

    def _add_pending(self, ref: str, entry: dict[str, Any]) -> None:
        if len(self.pending) >= GATE_PENDING_MAX:
            # Drop the oldest; its result, if it ever comes, is then ignored.
            oldest = next(iter(self.pending))
            del self.pending[oldest]
        self.pending[ref] = entry

    def issue_shell(self, ref: str, line: str, pos: Pos) -> None:
        """A shell command was issued; its checks and writes wait for the result."""
        from taskcore.donegate.commands import analyze  # on use: the classifier's tables

        a = analyze(line)
        if not a.hits and not a.writes:
            return
        self._add_pending(
            ref,
            {
                "t": "sh",
                "pos": list(pos),
                "cmd": line.strip()[:200],
                "hits": [[h.kind.value, h.proven, h.index, h.command[:120]] for h in a.hits],
                "writes": list(a.writes),
                "wi": a.last_write_index,
            },
        )

    def issue_edit(self, ref: str, paths: Iterable[str], pos: Pos) -> None:
        """A file-editing tool was called; the change counts once it succeeded."""
        self._add_pending(ref, {"t": "ed", "pos": list(pos), "paths": [p for p in paths if p]})

    def is_pending(self, ref: str) -> bool:
        """Whether a tool call with this id awaits its result."""
        return ref in self.pending

    def resolve_edit(self, ref: str, *, ok: bool) -> None:
        """The editing tool answered; a failed or refused edit changes nothing."""
        entry = self.pending.pop(ref, None)
        if entry is None or entry.get("t") != "ed" or not ok:
            return
        pos = (int(entry["pos"][0]), int(entry["pos"][1]) + 2)
        self.change(pos, entry["paths"] or ["(edit)"])

    def resolve_shell(
        self,
        ref: str,
        *,
        exit_code: int | None = None,
        denied: bool = False,
        interrupted: bool = False,
        background: str | None = None,
    ) -> None:
        """A shell call answered: an exit code, a refusal, an interruption or a background id."""
        entry = self.pending.pop(ref, None)
        if entry is None or entry.get("t") != "sh" or denied:
            return
        ts, base = int(entry["pos"][0]), int(entry["pos"][1])
        if entry["writes"]:
            self.change((ts, base + 2), entry["writes"])
        if background is not None:
            status = "pending"
        elif interrupted or exit_code is None:
            status = "interrupted"
        elif exit_code == 0:
            status = "passed"
        else:
            status = "failed"
        wi = int(entry.get("wi", -1))
        for kind_s, proven, index, cmd in entry["hits"]:
            kind = Kind(kind_s)
            # A check that ran before a write of the same line is before the change.
            cpos = (ts, base + (3 if int(index) >= wi else 1))
            st = "masked" if status == "passed" and not proven else status
            if kind.is_check or st == "pending":
                self.record_check(
                    Check(
                        kind=kind.value,
                        status=st,
                        pos=cpos,
                        cmd=str(cmd),
                        exit=exit_code,
                        ref=background or "",
                    )
                )
            elif st == "passed":
                self._ship_or_commit(kind, cpos)
        if background is not None:
            self.background[background] = ref
            if len(self.background) > GATE_PENDING_MAX:
                del self.background[next(iter(self.background))]

    def resolve_background(
        self, task_id: str, *, exit_code: int | None, interrupted: bool = False
    ) -> None:
        """A background run finished (Claude Code task notification, Codex poll)."""
        if task_id not in self.background:
            return
        del self.background[task_id]
        for c in self.checks:
            if c.ref != task_id or c.status != "pending":
                continue
            c.exit = exit_code
            if interrupted or exit_code is None:
                c.status = "interrupted"
            elif exit_code != 0:
                c.status = "failed"
            else:
                c.status = "passed"
                self._ship_or_commit(Kind(c.kind), c.pos)
            if Kind(c.kind).is_check:
                self.check_counts[c.kind] = self.check_counts.get(c.kind, 0) + 1
        self.checks = [c for c in self.checks if Kind(c.kind).is_check or c.status == "pending"]

    def _ship_or_commit(self, kind: Kind, pos: Pos) -> None:
        if kind is Kind.COMMIT:
            self.commits += 1
            self.last_commit = max(self.last_commit or pos, pos)
        elif kind.is_ship:
            self.ships += 1
            self.last_ship = max(self.last_ship or pos, pos)

    def record_check(self, check: Check) -> None:
        """Keep a check; old resolved ones are dropped first (pending ones are kept)."""
        self.checks.append(check)
        if check.status != "pending":
            self.check_counts[check.kind] = self.check_counts.get(check.kind, 0) + 1
        if len(self.checks) > GATE_CHECKS_KEPT:
            for i, c in enumerate(self.checks):
                if c.status != "pending":
                    del self.checks[i]
                    break
            else:
                del self.checks[0]

    def interrupt_pending(self) -> None:
        """A turn was aborted: every shell call still waiting is interrupted."""
        for ref in [r for r, e in self.pending.items() if e.get("t") == "sh"]:
            self.resolve_shell(ref, interrupted=True)

    # -- derived ----------------------------------------------------------------------------
    def checks_run(self) -> int:
        """How many test, build, lint or CI-watch commands ran (pending ones included)."""
        return sum(self.check_counts.values()) + sum(
            1 for c in self.checks if c.status == "pending"
        )

    def pending_checks(self) -> list[Check]:
        """Checks issued whose result has not arrived (a lagging transcript)."""
        out = []
        for entry in self.pending.values():
            if entry.get("t") != "sh":
                continue
            pos = (int(entry["pos"][0]), int(entry["pos"][1]) + 3)
            for kind_s, _proven, _index, cmd in entry["hits"]:
                if Kind(kind_s).is_check:
                    out.append(Check(kind=kind_s, status="pending", pos=pos, cmd=str(cmd)))
        return out

    def files_written(self) -> int:
        """Distinct artifact paths written (or labelled tool writes)."""
        return len(self.files) + self.files_more

    # -- storage ----------------------------------------------------------------------------
    def to_json(self) -> str:
        """Serialize for the index (compact, stable: the fields in their declared order)."""
        raw: dict[str, Any] = {f: getattr(self, f) for f in _FIELDS}
        raw["checks"] = [c.to_json() for c in self.checks]
        for key in _POS_FIELDS:
            if raw[key] is not None:
                raw[key] = list(raw[key])
        return json.dumps(raw, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Evidence:
        """Rebuild a stored state; raise ``ValueError`` when it is not one this code wrote."""
        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.get("version") != STATE_VERSION:
            raise ValueError("stored gate state has another version")
        raw["checks"] = [Check.from_json(c) for c in raw.get("checks", [])]
        for key in _POS_FIELDS:
            if raw.get(key) is not None:
                raw[key] = (int(raw[key][0]), int(raw[key][1]))
        return cls(**{k: v for k, v in raw.items() if k in _FIELDS})

    def copy(self) -> Evidence:
        """A deep copy (used to read a trailing partial line without storing it)."""
        return Evidence.from_json(self.to_json())
