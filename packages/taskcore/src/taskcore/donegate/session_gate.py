"""``session_gate``: where one session stands on the ladder, right now.

The answer is exactly the seed's object::

    {"rung": 2, "rung_name": "artifact_changed", "below_line": true,
     "missing": "no test, build, or lint command ran in this session",
     "receipt_lines": ["...", "..."], "budget_left": 2, "stale": false, "indexed": true}

``stale`` is true when a check passed but a change came after it; ``indexed`` is true when
the answer came through the local index (it was brought up to date for this session first);
``budget_left`` is what remains of the Stop hook's three re-entries for the session's current
user prompt. The session is named by exactly one of: a transcript path, a session id, or a
working directory (the most recent indexed session of that repository).

A path from a remote caller (``remote=True``) must resolve inside the transcript roots; a
local user may name any transcript they can read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import attrs

from taskcore.donegate.config import GateConfig, checked_transcript, harness_of, repository_of
from taskcore.donegate.evidence import Evidence
from taskcore.donegate.index import GateIndex, ReadResult, read_transcript, session_key_for
from taskcore.donegate.ladder import Verdict, evaluate
from taskcore.donegate.receipt import RepoHistory, render
from taskcore.donegate.transcript import with_tail
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import DONE_GATE_BUDGET, DONE_GATE_RECEIPT_MAX_LINES
from taskcore.wirefield import wire_field

__all__ = ["GateAnswer", "SessionGateIn", "SessionGateResult", "answer", "session_gate"]

_SESSION_ID = r"[A-Za-z0-9._:/-]{1,256}"


@attrs.frozen(kw_only=True)
class SessionGateIn:
    """Which session: exactly one of ``session_id``, ``transcript_path`` or ``cwd``."""

    session_id: str | None = wire_field(
        default=None, pattern=_SESSION_ID, doc="A Claude Code or Codex session id."
    )
    transcript_path: str | None = wire_field(
        default=None, min_len=1, max_len=4096, doc="A transcript under the session roots."
    )
    cwd: str | None = wire_field(
        default=None,
        min_len=1,
        max_len=4096,
        doc="A directory; its repository's latest indexed session.",
    )


@attrs.frozen(kw_only=True)
class SessionGateResult:
    """The seed's ``session_gate`` object."""

    rung: int = wire_field(lo=0, hi=5)
    rung_name: str = wire_field()
    below_line: bool = wire_field()
    missing: str = wire_field()
    receipt_lines: tuple[str, ...] = wire_field(max_len=DONE_GATE_RECEIPT_MAX_LINES)
    budget_left: int = wire_field(lo=0, hi=DONE_GATE_BUDGET)
    stale: bool = wire_field()
    indexed: bool = wire_field()


@attrs.frozen(kw_only=True)
class GateAnswer:
    """The result plus what the Stop hook needs to spend the budget."""

    result: SessionGateResult
    verdict: Verdict
    session_key: str
    prompt_key: str
    repository: str


def _prompt_key(ev: Evidence) -> str:
    return f"p{ev.prompts}"


def _direct(path: Path, config: GateConfig, last_message: str | None) -> GateAnswer:
    """Answer without the index (it could not be opened): read the whole transcript."""
    harness = harness_of(path, config)
    try:
        size = os.stat(path).st_size
        ev, _offset, tail = read_transcript(path, harness, None, 0, size)
    except OSError:
        raise TaskError(
            ErrorCode.NOT_FOUND, "the transcript cannot be read; check the path and its permissions"
        ) from None
    ev = with_tail(ev, harness, tail)
    verdict = evaluate([ev], last_message=last_message)
    key, _parent = session_key_for(ev, path)
    result = SessionGateResult(
        rung=verdict.rung,
        rung_name=verdict.rung_name,
        below_line=verdict.below_line,
        missing=verdict.missing,
        receipt_lines=render(verdict, None),
        budget_left=DONE_GATE_BUDGET,
        stale=verdict.stale,
        indexed=False,
    )
    return GateAnswer(
        result=result,
        verdict=verdict,
        session_key=key,
        prompt_key=_prompt_key(ev),
        repository=repository_of(ev.cwd),
    )


def answer(
    index: GateIndex,
    read: ReadResult,
    *,
    last_message: str | None = None,
) -> GateAnswer:
    """Place an up-to-date transcript on the ladder with its history and budget."""
    states = index.states_of(read)
    verdict = evaluate(states, last_message=last_message)
    repository = repository_of(read.evidence.cwd)
    n, reached = index.repository_history(repository, read.session_key)
    prompt_key = _prompt_key(read.evidence)
    used, _shown = index.budget(read.session_key, prompt_key)
    result = SessionGateResult(
        rung=verdict.rung,
        rung_name=verdict.rung_name,
        below_line=verdict.below_line,
        missing=verdict.missing,
        receipt_lines=render(verdict, RepoHistory(n=n, reached=reached)),
        budget_left=max(0, DONE_GATE_BUDGET - used),
        stale=verdict.stale,
        indexed=True,
    )
    return GateAnswer(
        result=result,
        verdict=verdict,
        session_key=read.session_key,
        prompt_key=prompt_key,
        repository=repository,
    )


def _claude_subagent_files(path: Path) -> list[Path]:
    sub = path.parent / path.stem / "subagents"
    try:
        return sorted(p for p in sub.iterdir() if p.suffix == ".jsonl" and p.is_file())
    except OSError:
        return []


def refresh_session(index: GateIndex, path: Path, *, remote: bool = False) -> ReadResult:
    """Bring a transcript (and, for a Claude Code main session, its subagents) up to date.

    For a remote caller every subagent file must pass the same root check as the main one.
    """
    read = index.refresh(path)
    if read.harness == "claude-code" and not read.evidence.subagent:
        for sub in _claude_subagent_files(read.path):
            try:
                if remote:
                    sub = checked_transcript(str(sub), index.config)
                index.refresh(sub, "claude-code")
            except TaskError as err:
                if err.code not in (ErrorCode.NOT_FOUND, ErrorCode.INVALID_PATH):
                    raise
    return read


def session_gate(
    request: SessionGateIn,
    *,
    config: GateConfig | None = None,
    remote: bool = False,
    index: GateIndex | None = None,
    last_message: str | None = None,
) -> GateAnswer:
    """Answer ``session_gate`` for one session (see the module docstring)."""
    given = [v for v in (request.session_id, request.transcript_path, request.cwd) if v is not None]
    if len(given) != 1:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "name the session with exactly one of session_id, transcript_path or cwd",
        )
    config = config or GateConfig.from_env()
    path: Path | None = None
    if request.transcript_path is not None:
        if remote:
            path = checked_transcript(request.transcript_path, config)
        else:
            path = Path(os.path.expanduser(request.transcript_path))
            if not path.is_file():
                raise TaskError(
                    ErrorCode.NOT_FOUND,
                    "there is no transcript file at that path",
                    path="$.transcript_path",
                )
    if request.session_id is not None and re.fullmatch(_SESSION_ID, request.session_id) is None:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "session_id has characters a session id never has",
            path="$.session_id",
        )
    own = index is None
    try:
        if index is None:
            index = GateIndex(config)
    except TaskError:
        if path is None:
            raise
        return _direct(path, config, last_message)
    try:
        if path is None:
            path = _locate(index, request, remote=remote)
        read = refresh_session(index, path, remote=remote)
        return answer(index, read, last_message=last_message)
    finally:
        if own:
            index.close()


def _locate(index: GateIndex, request: SessionGateIn, *, remote: bool) -> Path:
    for attempt in range(2):
        if request.session_id is not None:
            rec = index.find_session(request.session_id)
        else:
            rec = index.latest_for(str(request.cwd), probe=not remote)
        if rec is not None:
            return Path(rec.path)
        if attempt == 0:
            index.scan()
    if request.session_id is not None:
        raise TaskError(
            ErrorCode.NOT_FOUND,
            "no indexed Claude Code or Codex session has "
            "that id; run 'agent-task gate index' first",
            path="$.session_id",
        )
    raise TaskError(
        ErrorCode.NOT_FOUND,
        "no indexed session belongs to that directory's "
        "repository; run 'agent-task gate index' first",
        path="$.cwd",
    )
