r"""The SessionStart hook's request and answer (standard library and limits only).

At every session start, resume, ``/clear`` and compaction, Claude Code and Codex run the
SessionStart hooks and add what they print to the model's context. ``agent-task session-start``
(:mod:`taskcli.session_start`) asks the service for the leases this agent's token holds
(``POST /v/agenttask.leases``, :mod:`taskcore.queue.held`) and prints, in the shape both
harnesses document::

    {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "..."}}

what the agent must not forget: each task's id, verb, goal, fence, lease expiry, renewals
used, last checkpoint phase, and the exact next calls (heartbeat, checkpoint, DONE). Nothing
is printed when nothing is held; when the service cannot answer, one line
(``{"systemMessage": "agent-task: ..."}``) and exit status 0: a session is never kept from
starting.

The hook starts at every session, so this module imports nothing but :mod:`taskcore.limits`
and, when used, ``time`` and the C halves of the ``json`` package (through
:func:`taskcore.collector.quickstop.loads`, as the task-stop hooks do: the package's Python
half loads ``re`` and ``enum``). Budget: 3x ``python -c pass``, measured in
``benchmarks/run_all.py``.

>>> answer = {"nowMs": 1_000, "more": False, "leases": [{"task": {"taskId": "at_1",
...     "verb": "agent.run", "fence": 2, "payload": {"goal": "fix login"},
...     "lease": {"expiresAtMs": 241_000, "extensions": 1}}, "lastPhase": None}]}
>>> text = context(answer, source="compact")
>>> text.splitlines()[0]
'agent-task: you hold 1 leased task (this session was compacted). Keep its lease alive and finish it before you stop.'
>>> print(text.splitlines()[3])
  goal (from its payload): "fix login"
>>> context({"nowMs": 0, "leases": [], "more": False}) is None
True
>>> fail_line("the service did not answer (ConnectError)")
'{"systemMessage": "agent-task: the service did not answer (ConnectError); the leases this agent holds are unknown"}'
"""

from __future__ import annotations

from taskcore.limits import (
    GATE_STDIN_MAX_BYTES,
    MAX_LEASE_EXTENSIONS,
    SESSION_START_GOAL_MAX_CHARS,
    SESSION_START_TASKS_SHOWN,
)

TYPE_CHECKING = False  # not typing's: importing typing alone costs a hook ~5 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "LEASES_PATH",
    "MCP_PATH",
    "SOURCES",
    "context",
    "fail_line",
    "goal_of",
    "hook_output",
    "leases_request",
    "mcp_request",
    "mcp_result",
    "parse",
    "source_of",
]

LEASES_PATH = "/v/agenttask.leases"
"""Where the hook asks (the queue verb route of :mod:`taskcore.queue.held`)."""

SOURCES = {
    "startup": "this session just started",
    "resume": "this session was resumed",
    "clear": "this session was cleared",
    "compact": "this session was compacted",
}
"""What each SessionStart ``source`` the harnesses send means, in the context's words."""

_GOAL_KEYS = ("goal", "title", "summary", "description", "prompt")


def _quote(text: str) -> str:
    r"""``json.dumps(text, ensure_ascii=False)`` without the json package.

    >>> _quote('a "b"\n')
    '"a \\"b\\"\\n"'
    """
    from _json import encode_basestring  # the json package's C string encoder

    quoted: str = encode_basestring(text)
    return quoted


def parse(raw: bytes) -> Any:
    """``json.loads(raw)`` for a JSON object in UTF-8; ``ValueError`` for anything else.

    >>> parse(b'{"nowMs": 1}')
    {'nowMs': 1}
    """
    from taskcore.collector.quickstop import UndecidedError, loads

    try:
        return loads(raw)
    except UndecidedError as why:
        raise ValueError(str(why)) from None


def leases_request(token: str) -> tuple[str, bytes, dict[str, str]]:
    """``(path, body, headers)`` of the question: ``POST /v/agenttask.leases {}``.

    >>> leases_request("t")[0], leases_request("t")[2]["Authorization"]
    ('/v/agenttask.leases', 'Bearer t')
    """
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Authorization": f"Bearer {token}",
    }
    return LEASES_PATH, b"{}", headers


MCP_PATH = "/mcp"
"""Where a hook holding an OAuth grant asks: an access token is accepted only on MCP."""


def mcp_request(token: str, tool: str = "agenttask_leases") -> tuple[str, bytes, dict[str, str]]:
    """``(path, body, headers)`` of one ``tools/call`` of ``tool`` on the stateless ``/mcp``.

    The hook of an OAuth grant (``--grant-file``) asks here: the service accepts an access
    token on its MCP endpoints only. The endpoints are stateless (no ``initialize`` first).

    >>> path, body, headers = mcp_request("t")
    >>> path, body
    ('/mcp', b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agenttask_leases","arguments":{}}}')
    """
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
    }
    body = (
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"'
        + tool
        + '","arguments":{}}}'
    )
    return MCP_PATH, body.encode("ascii"), headers


def mcp_result(answer: Any) -> Any:
    """The tool's answer (its ``structuredContent``) of a ``tools/call`` response.

    ``ValueError`` naming the refusal's code when the call was refused (a tool error or a
    JSON-RPC error), or when the response is not a tool result.

    >>> mcp_result({"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {"leases": []}}})
    {'leases': []}
    >>> mcp_result({"result": {"isError": True, "structuredContent": {"code": "FORBIDDEN"}}})
    Traceback (most recent call last):
    ValueError: FORBIDDEN
    """
    result = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(result, dict):
        error = answer.get("error") if isinstance(answer, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        raise ValueError(str(message)[:80] if message else "not a tool result")
    content = result.get("structuredContent")
    if not isinstance(content, dict):
        blocks = result.get("content")
        text = blocks[0].get("text") if isinstance(blocks, list) and blocks else None
        content = parse(text.encode("utf-8")) if isinstance(text, str) else None
    if result.get("isError"):
        code = content.get("code") if isinstance(content, dict) else None
        raise ValueError(str(code) if isinstance(code, str) else "the tool call failed")
    if not isinstance(content, dict):
        raise ValueError("not a tool result")
    return content


def source_of(raw: bytes) -> str | None:
    """The payload's ``source`` (``startup``, ``resume``, ``clear``, ``compact``), if readable.

    The hook needs nothing else from the payload; a payload it cannot read changes nothing
    but the wording.

    >>> source_of(b'{"hook_event_name": "SessionStart", "source": "resume"}')
    'resume'
    >>> source_of(b"not json") is None
    True
    """
    if len(raw) > GATE_STDIN_MAX_BYTES:
        return None
    try:
        data = parse(raw)
    except (ValueError, RecursionError):
        return None
    source = data.get("source") if isinstance(data, dict) else None
    return source if isinstance(source, str) and source in SOURCES else None


def _one_line(text: str, limit: int) -> str:
    """``text`` on one line, control characters dropped, at most ``limit`` characters."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def goal_of(payload: Any) -> str:
    r"""What the task is for, from its payload: ``goal``, ``title``, ``summary``, ... or the JSON.

    >>> goal_of({"title": "fix\nlogin"}), goal_of("just text"), goal_of(None)
    ('fix login', 'just text', '(no payload)')
    >>> goal_of({"n": 1})
    '{"n": 1}'
    """
    if isinstance(payload, dict):
        for key in _GOAL_KEYS:
            value = payload.get(key)
            if isinstance(value, str) and value.strip():
                return _one_line(value, SESSION_START_GOAL_MAX_CHARS)
    if isinstance(payload, str) and payload.strip():
        return _one_line(payload, SESSION_START_GOAL_MAX_CHARS)
    if payload is None:
        return "(no payload)"
    import json  # rare: a payload without a text goal

    return _one_line(json.dumps(payload, ensure_ascii=False), SESSION_START_GOAL_MAX_CHARS)


def _when(ms: int) -> str:
    """An epoch time in ms as ISO 8601 UTC to the second."""
    import time  # a built-in module: no file is read to import it

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // 1000))


def _span(ms: int) -> str:
    """A duration in ms as people say it (``4 min 12 s``); a past instant is ``0 s``."""
    seconds = max(ms, 0) // 1000
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def _task_lines(entry: Any, now_ms: int) -> list[str]:
    task = entry["task"]
    task_id, fence, lease = task["taskId"], task["fence"], task["lease"]
    if not isinstance(task_id, str) or not isinstance(fence, int):
        raise TypeError("taskId or fence has the wrong type")
    ids = f'{{"taskId": {_quote(task_id)}, "fence": {fence}'

    expires = lease["expiresAtMs"]
    phase = entry.get("lastPhase")
    if isinstance(phase, dict):
        last = (
            f"#{int(phase['phaseIndex'])} {_quote(str(phase['phaseKey']))} "
            f"(written {_when(phase['createdAtMs'])})"
        )
    else:
        last = "none yet"
    return [
        f"- task {task_id} (verb {task['verb']})",
        f"  goal (from its payload): {_quote(goal_of(task.get('payload')))}",
        f"  fence: {fence} (send it with every call on this task; a stale one is refused)",
        f"  lease: expires {_when(expires)}, in {_span(expires - now_ms)}; "
        f"renewals used {lease['extensions']} of {MAX_LEASE_EXTENSIONS}",
        f"  last checkpoint phase: {last}",
        "  next calls (tools of the agent-task MCP server; HTTP: POST /v/<verb>):",
        f"    heartbeat now:   agenttask_checkpoint {ids}}}",
        f"    save progress:   agenttask_checkpoint_write {ids}, "
        '"phaseKey": "<phase>", "state": {...}, "outputs": []}',
        f"    when it is done: agenttask_checkpoint {ids}, "
        '"status": "DONE", "checkpoint": {"output": {...}}}',
    ]


def context(answer: Any, *, source: str | None = None) -> str | None:
    """The ``additionalContext`` for the held leases in ``answer``; ``None`` when none.

    ``answer`` is the ``agenttask.leases`` result; a shape it does not have raises
    ``KeyError``, ``TypeError`` or ``ValueError`` (the hook then prints its one line).
    """
    leases = answer["leases"]
    if not isinstance(leases, list):
        raise TypeError("leases is not a list")
    if not leases:
        return None
    now_ms = answer["nowMs"]
    if not isinstance(now_ms, int):
        raise TypeError("nowMs is not an integer")
    count = f"{len(leases)}{' or more' if answer.get('more') else ''}"
    noun = "task" if len(leases) == 1 and not answer.get("more") else "tasks"
    when = f" ({SOURCES[source]})" if source in SOURCES else ""
    lines = [
        f"agent-task: you hold {count} leased {noun}{when}. "
        f"Keep {'its lease' if noun == 'task' else 'their leases'} alive and finish "
        f"{'it' if noun == 'task' else 'them'} before you stop.",
        "A lease that expires puts the task back in the queue: another agent may take it and "
        "your calls on it are refused. Renew it (heartbeat) well before it expires.",
    ]
    for entry in leases[:SESSION_START_TASKS_SHOWN]:
        lines += _task_lines(entry, now_ms)
    rest = len(leases) - SESSION_START_TASKS_SHOWN
    if rest > 0 or answer.get("more"):
        count = f"at least {max(rest, 1)}" if answer.get("more") else str(rest)
        lines.append(f"- and {count} more: agenttask_leases lists them")
    return "\n".join(lines)


def hook_output(text: str) -> str:
    """The hook's stdout for ``text``: the ``SessionStart`` ``additionalContext`` object.

    Claude Code and Codex both read this shape (Codex's ``session-start.command.output``
    schema; Claude Code's hooks reference).

    >>> hook_output("x")
    '{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "x"}}'
    """
    return (
        '{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": '
        + _quote(text)
        + "}}"
    )


def fail_line(reason: str) -> str:
    """The one line printed when the hook cannot say what is held (the session starts)."""
    from _json import encode_basestring_ascii  # json.dumps's default (ASCII) string encoder

    message = f"agent-task: {reason}; the leases this agent holds are unknown"
    return '{"systemMessage": ' + encode_basestring_ascii(message) + "}"
