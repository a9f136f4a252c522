r"""The Claude Code transcript reader (``~/.claude/projects/<project>/<session>.jsonl``).

Each line is one record. What the gate reads from it:

* ``assistant`` records: ``text`` blocks (the last one is the claim the agent stops on) and
  ``tool_use`` blocks (``Bash`` commands; ``Edit``, ``Write``, ``MultiEdit`` and
  ``NotebookEdit`` file changes). ``isApiErrorMessage`` records are not the agent speaking.
* ``user`` records: ``tool_result`` blocks answer a ``tool_use`` by ``tool_use_id``, with the
  top-level ``toolUseResult`` as an object (``stdout``, ``interrupted``,
  ``backgroundTaskId``), as a string (``"Error: Exit code 2\n..."``) or absent; ``is_error``
  and ``"Exit code N"`` give the exit status. A denied call never ran. A background run has
  no exit code yet and stays pending until its ``<task-notification>`` arrives (as a user
  message, a ``queue-operation`` or a ``queued_command`` attachment). A string (or text
  block) user message is a prompt unless it is ``isMeta`` (stop-hook feedback, skill text),
  a compaction summary, an interruption marker or a notification.
* ``system`` records with ``subtype: compact_boundary`` mark a compaction; evidence from
  before it still counts (the file keeps every line).

In a main transcript, ``isSidechain`` records (older versions wrote subagents inline) belong to
subagents and are skipped; a subagent's own file (``<session>/subagents/agent-<id>.jsonl``) is
read whole.

>>> from taskcore.donegate.evidence import Evidence
>>> ev = Evidence(harness="claude-code")
>>> feed(ev, b'{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1",'
...          b'"name":"Bash","input":{"command":"pytest -q"}}]}}')
>>> feed(ev, b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1",'
...          b'"is_error":true,"content":"Exit code 1\\n1 failed"}]},'
...          b'"toolUseResult":"Error: Exit code 1\\n1 failed"}')
>>> [(c.status, c.exit) for c in ev.checks]
[('failed', 1)]
"""

from __future__ import annotations

import json
import re

from taskcore.donegate.evidence import Evidence

TYPE_CHECKING = False  # not typing's: the Stop hook's fast path reads transcripts without it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["feed", "parse_ts", "task_notification"]

_EDIT_TOOLS = {
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
_SHELL_TOOLS = frozenset({"Bash"})
# Patterns as text, compiled by ``re`` on first use (and cached there): a Stop hook reading a
# turn without tool results never compiles them.
_ID_RE = rb'"tool_use_id"\s*:\s*"([^"]{1,200})"'
_EXIT_RE = r"^\s*(?:Error:\s*)?Exit code (-?\d+)"
_BG_RE = r"[Rr]unning in (?:the )?background with ID:?\s*([A-Za-z0-9_-]+)"
_DENIED_RE = (
    r"doesn't want to proceed|don't want to proceed|[Uu]ser rejected|tool use was rejected|"
    r"has been denied|[Pp]ermission to use .{0,80} denied|blocked by (?:a )?hook|"
    r"[Hh]ook .{0,40}(?:denied|blocked)"
)
_INTERRUPT_RE = (
    r"\[Request interrupted by user|[Ii]nterrupted by user|"
    r"[Cc]ommand timed out|[Cc]ommand was (?:killed|aborted)"
)
_NOT_PROMPT = (
    "<task-notification",
    "<system-reminder",
    "<local-command",
    "<bash-input",
    "<bash-stdout",
    "<bash-stderr",
    "Stop hook feedback",
    "SubagentStop hook feedback",
    "[Request interrupted",
    "Caveat: The messages below",
    "<user-prompt-submit-hook",
)
_BIG_LINE = 2048


def parse_ts(value: Any) -> int | None:
    """ISO-8601 timestamp to epoch milliseconds; ``None`` when absent or unreadable.

    >>> parse_ts("2026-08-23T13:06:51.800Z")
    1787490411800
    >>> parse_ts("2026-08-23T15:06:51.8+02:00")
    1787490411800
    """
    if not isinstance(value, str) or len(value) > 64:
        return None
    ms = _utc_ms(value)
    if ms is not None:
        return ms
    from datetime import datetime  # only here: a Stop hook reading common stamps skips it

    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _utc_ms(value: str) -> int | None:
    """:func:`parse_ts` of the harnesses' own form (``YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z``).

    The same number ``datetime`` gives, without importing it: the microseconds since the
    epoch, divided and multiplied as ``datetime.timestamp() * 1000`` does. ``None`` for
    anything else (then ``datetime`` decides).
    """
    n = len(value)
    if n not in (20, 24, 27) or value[-1] != "Z" or not value.isascii():
        return None
    if value[4] != "-" or value[7] != "-" or value[10] != "T" or value[13] != ":":
        return None
    if value[16] != ":" or (n > 20 and value[19] != "."):
        return None
    digits = value[0:4] + value[5:7] + value[8:10] + value[11:13] + value[14:16] + value[17:19]
    frac = value[20:-1]
    if not digits.isdigit() or (frac and not frac.isdigit()):
        return None
    year, month, day = int(value[0:4]), int(value[5:7]), int(value[8:10])
    hour, minute, second = int(value[11:13]), int(value[14:16]), int(value[17:19])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not (year >= 1 and 1 <= month <= 12 and hour < 24 and minute < 60 and second < 60):
        return None
    if not 1 <= day <= _DAYS_IN_MONTH[month] + (1 if month == 2 and leap else 0):
        return None
    micro = int(frac.ljust(6, "0")) if frac else 0
    # Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    y = year - (1 if month <= 2 else 0)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    total_us = (days * 86400 + hour * 3600 + minute * 60 + second) * 1_000_000 + micro
    return int(total_us / 1_000_000 * 1000)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b.get("text", "")
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        return "\n".join(parts)
    return ""


def task_notification(text: str) -> tuple[str, int | None, bool] | None:
    r"""Parse a ``<task-notification>``: (task id, exit code, interrupted), or ``None``.

    >>> task_notification("<task-notification><task-id>b1</task-id><status>completed"
    ...     "</status><summary>Background command \"npm test\" completed (exit code 0)"
    ...     "</summary></task-notification>")
    ('b1', 0, False)
    """
    if "<task-notification" not in text:
        return None
    m = re.search(r"<task-id>\s*([^<\s]+)\s*</task-id>", text)
    if not m:
        return None
    status_m = re.search(r"<status>\s*([^<]+?)\s*</status>", text)
    status = status_m.group(1).lower() if status_m else ""
    code_m = re.search(r"exit code (-?\d+)", text)
    code = int(code_m.group(1)) if code_m else None
    if status in ("killed", "stopped", "cancelled", "canceled", "timeout", "timed_out"):
        return m.group(1), code, True
    if status == "completed":
        return m.group(1), 0 if code is None else code, False
    if status == "failed":
        return m.group(1), 1 if code is None or code == 0 else code, False
    return None  # running, or a status this reader does not know


def feed(ev: Evidence, line: bytes) -> None:
    """Read one Claude Code transcript line into ``ev``; never raises."""
    ev.lines += 1
    if len(line) > _BIG_LINE and b'"tool_result"' in line and b"<task-notification" not in line:
        ids = re.findall(_ID_RE, line)
        if not any(i.decode("utf-8", "replace") in ev.pending for i in ids):
            ev.skipped_lines += 1
            return
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        ev.bad_lines += 1
        return
    if not isinstance(rec, dict):
        ev.bad_lines += 1
        return
    try:
        _record(ev, rec)
    except (TypeError, KeyError, AttributeError, ValueError, IndexError):
        ev.bad_lines += 1


def _record(ev: Evidence, rec: dict[str, Any]) -> None:
    if not ev.session_id and isinstance(rec.get("sessionId"), str):
        ev.session_id = rec["sessionId"][:128]
    if not ev.cwd and isinstance(rec.get("cwd"), str):
        ev.cwd = rec["cwd"][:4096]
    if ev.subagent and not ev.agent_id and isinstance(rec.get("agentId"), str):
        ev.agent_id = rec["agentId"][:128]
    if rec.get("isSidechain") is True and not ev.subagent:
        return
    kind = rec.get("type")
    if kind == "assistant":
        _assistant(ev, rec)
    elif kind == "user":
        _user(ev, rec)
    elif kind == "system":
        if rec.get("subtype") == "compact_boundary":
            ev.compactions += 1
            ev.next_pos(parse_ts(rec.get("timestamp")))
    elif kind == "queue-operation":
        content = rec.get("content")
        if isinstance(content, str):
            _notification(ev, content)
    elif kind == "attachment":
        att = rec.get("attachment")
        if isinstance(att, dict) and isinstance(att.get("prompt"), str):
            _notification(ev, att["prompt"])


def _notification(ev: Evidence, text: str) -> None:
    parsed = task_notification(text)
    if parsed is not None:
        task_id, code, interrupted = parsed
        ev.resolve_background(task_id, exit_code=code, interrupted=interrupted)


def _assistant(ev: Evidence, rec: dict[str, Any]) -> None:
    if rec.get("isApiErrorMessage") is True:
        return
    msg = rec.get("message")
    if not isinstance(msg, dict):
        return
    content = msg.get("content")
    ts = parse_ts(rec.get("timestamp"))
    if isinstance(content, str):
        ev.assistant_text(content, ev.next_pos(ts))
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str):
            if block["text"].strip() not in ("", "(no content)"):
                ev.assistant_text(block["text"], ev.next_pos(ts))
        elif btype == "tool_use":
            ref, name, inp = block.get("id"), block.get("name"), block.get("input")
            if not isinstance(ref, str) or not isinstance(inp, dict):
                continue
            if name in _SHELL_TOOLS and isinstance(inp.get("command"), str):
                ev.issue_shell(ref, inp["command"], ev.next_pos(ts))
            elif name in _EDIT_TOOLS:
                path = inp.get(_EDIT_TOOLS[str(name)])
                ev.issue_edit(ref, [path] if isinstance(path, str) else [], ev.next_pos(ts))


def _user(ev: Evidence, rec: dict[str, Any]) -> None:
    msg = rec.get("message")
    if not isinstance(msg, dict):
        return
    content = msg.get("content")
    ts = parse_ts(rec.get("timestamp"))
    results = (
        [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        if isinstance(content, list)
        else []
    )
    if results:
        tur = rec.get("toolUseResult") if len(results) == 1 else None
        for block in results:
            ref = block.get("tool_use_id")
            if isinstance(ref, str) and ev.is_pending(ref):
                ev.next_pos(ts)
                _result(ev, ref, block, tur, rec)
        return
    text = _text_of(content)
    if not text:
        return
    if "<task-notification" in text:
        _notification(ev, text)
        return
    if (
        rec.get("isMeta") is True
        or rec.get("isCompactSummary") is True
        or rec.get("isVisibleInTranscriptOnly") is True
    ):
        return
    if text.lstrip().startswith(_NOT_PROMPT):
        return
    ev.next_pos(ts)
    ev.prompt(text)


def _result(ev: Evidence, ref: str, block: dict[str, Any], tur: Any, rec: dict[str, Any]) -> None:
    text = _text_of(block.get("content"))
    tur_text = tur if isinstance(tur, str) else ""
    is_error = block.get("is_error") is True
    entry = ev.pending[ref]
    denied = isinstance(rec.get("toolDenialKind"), str) or (
        is_error and (re.search(_DENIED_RE, text[:600]) is not None or "<tool_use_error>" in text)
    )
    if entry.get("t") == "ed":
        ev.resolve_edit(ref, ok=not is_error and not denied)
        return
    m = re.match(_EXIT_RE, text) or re.match(_EXIT_RE, tur_text)
    if m:
        ev.resolve_shell(ref, exit_code=int(m.group(1)))
        return
    if denied:
        ev.resolve_shell(ref, denied=True)
        return
    bg = tur.get("backgroundTaskId") if isinstance(tur, dict) else None
    if not isinstance(bg, str):
        bm = re.search(_BG_RE, text[:400])
        bg = bm.group(1) if bm else None
    if bg:
        ev.resolve_shell(ref, background=bg[:128])
        return
    interrupted = (isinstance(tur, dict) and tur.get("interrupted") is True) or (
        re.search(_INTERRUPT_RE, text[:400]) is not None and (is_error or len(text) < 400)
    )
    if interrupted:
        ev.resolve_shell(ref, interrupted=True)
        return
    ev.resolve_shell(ref, exit_code=1 if is_error else 0)
