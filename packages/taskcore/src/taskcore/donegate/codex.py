r"""The Codex rollout reader (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Every line is ``{"timestamp", "type", "payload"}``. What the gate reads from it:

* ``session_meta``: the session ``id`` and ``cwd`` (a ``source`` naming a subagent marks a
  child thread); ``turn_context`` may move the ``cwd``.
* ``response_item``: ``function_call`` ``shell`` / ``container.exec`` (an argv) and
  ``exec_command`` (``cmd``), ``local_shell_call``, ``apply_patch`` as a ``custom_tool_call``
  or ``function_call``, and their ``*_output`` records. An output carries its exit code as
  JSON ``metadata.exit_code``, ``"Exit code: N"`` or ``"Process exited with code N"``; a
  long-running ``exec_command`` answers ``"Process running with session ID N"`` and its exit
  code arrives later, through a ``write_stdin`` poll or an ``exec_command_end``, so until
  then it is pending. ``message`` items carry user prompts and the agent's text (environment
  and instruction wrappers, and a Stop hook's reason fed back as ``<hook_prompt ...>``, are
  not prompts).
* ``event_msg``: ``exec_command_end`` (``exit_code``), ``patch_apply_end`` (``success``,
  ``changes``), ``user_message`` and ``agent_message``, ``task_complete``
  (``last_agent_message``) and ``turn_aborted``.

>>> from taskcore.donegate.evidence import Evidence
>>> ev = Evidence(harness="codex")
>>> feed(ev, b'{"type":"response_item","payload":{"type":"function_call","name":"exec_command",'
...          b'"arguments":"{\\"cmd\\":\\"cargo test\\"}","call_id":"c1"}}')
>>> feed(ev, b'{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1",'
...          b'"output":"Process running with session ID 42\\nOutput:\\n"}}')
>>> [c.status for c in ev.checks]
['pending']
>>> feed(ev, b'{"type":"response_item","payload":{"type":"function_call","name":"write_stdin",'
...          b'"arguments":"{\\"session_id\\":42}","call_id":"c2"}}')
>>> feed(ev, b'{"type":"response_item","payload":{"type":"function_call_output","call_id":"c2",'
...          b'"output":"Process exited with code 0\\nOutput:\\nok"}}')
>>> [c.status for c in ev.checks]
['passed']
"""

from __future__ import annotations

import json
import re

from taskcore.donegate.claude import parse_ts
from taskcore.donegate.evidence import Evidence

TYPE_CHECKING = False  # not typing's: the Stop hook's fast path reads transcripts without it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["feed", "patch_files"]

_SHELL_CALLS = frozenset({"shell", "container.exec", "shell_command", "local_shell"})
# Patterns as text, compiled by ``re`` on first use (and cached there): a Stop hook reading a
# turn without tool output never compiles them.
_EXITED = (
    r"Process exited with code (-?\d+)|Exit code:?\s*(-?\d+)|"
    r'"exit_code"\s*:\s*(-?\d+)'
)
_RUNNING = r"Process running with session ID (\d+)"
_DENIED = (
    r"rejected by (?:the )?user|declined by (?:the )?user|"
    r"aborted by (?:the )?user|approval denied|not approved"
)
_WRAPPERS = (
    "<environment_context",
    "<user_instructions",
    "# AGENTS.md",
    "<permissions",
    "<user_shell_command",
    "<turn_aborted",
    "<subagent_notification",
    # A Stop hook's block reason, fed back as a user message (Codex 0.171): not a new prompt,
    # or every hold would open a fresh budget.
    "<hook_prompt",
)
_PATCH_FILE = r"(?m)^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$"
_BIG_LINE = 2048


def patch_files(patch: str) -> list[str]:
    r"""Paths named in an ``apply_patch`` body.

    >>> patch_files("*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** End Patch")
    ['src/a.py']
    """
    out = []
    for m in re.finditer(_PATCH_FILE, patch[:1_000_000]):
        path = (m.group(1) or m.group(2) or "").strip()
        if path:
            out.append(path)
    return out


def shell_line_from_argv(argv: list[str]) -> str:
    """:func:`taskcore.donegate.commands.shell_line_from_argv`, its module loaded on use."""
    from taskcore.donegate.commands import shell_line_from_argv as join

    return join(argv)


def _args(payload: dict[str, Any]) -> dict[str, Any]:
    raw = payload.get("arguments")
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError):
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _command_line(name: str, args: dict[str, Any]) -> str | None:
    cmd = args.get("cmd") if name == "exec_command" else args.get("command")
    if isinstance(cmd, str):
        return cmd
    if isinstance(cmd, list) and all(isinstance(c, str) for c in cmd):
        return shell_line_from_argv(cmd)
    return None


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        return json.dumps(output)[:4000]
    if isinstance(output, list):
        return "\n".join(str(o.get("text", "")) for o in output if isinstance(o, dict))
    return ""


def _exit_code(text: str) -> int | None:
    head = text[:2000]
    if head.lstrip().startswith("{"):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            meta = obj.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
                return int(meta["exit_code"])
            if isinstance(obj.get("exit_code"), int):
                return int(obj["exit_code"])
    m = re.search(_EXITED, head)
    if m:
        return int(next(g for g in m.groups() if g is not None))
    return None


def _text_items(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict)
        and b.get("type") in ("input_text", "output_text", "text")
        and isinstance(b.get("text"), str)
    )


def feed(ev: Evidence, line: bytes) -> None:
    """Read one Codex rollout line into ``ev``; never raises."""
    ev.lines += 1
    if len(line) > _BIG_LINE and (
        b'"function_call_output"' in line or b'"custom_tool_call_output"' in line
    ):
        m = re.search(rb'"call_id"\s*:\s*"([^"]{1,200})"', line)
        if m and m.group(1).decode("utf-8", "replace") not in ev.pending:
            ev.skipped_lines += 1
            return
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        ev.bad_lines += 1
        return
    if not isinstance(rec, dict) or not isinstance(rec.get("payload"), dict):
        ev.bad_lines += 1 if not isinstance(rec, dict) else 0
        return
    try:
        _record(ev, rec)
    except (TypeError, KeyError, AttributeError, ValueError, IndexError):
        ev.bad_lines += 1


def _record(ev: Evidence, rec: dict[str, Any]) -> None:
    kind, p = rec.get("type"), rec["payload"]
    ts = parse_ts(rec.get("timestamp"))
    if kind == "session_meta":
        if isinstance(p.get("id"), str) and not ev.session_id:
            ev.session_id = p["id"][:128]
        if isinstance(p.get("cwd"), str) and not ev.cwd:
            ev.cwd = p["cwd"][:4096]
        source = p.get("source")
        if isinstance(source, dict) and "subagent" in source:
            ev.subagent = True
            parent = re.search(r'"parent_thread_id"\s*:\s*"([^"]+)"', json.dumps(source))
            if parent:
                ev.parent_session_id = parent.group(1)[:128]
        ev.next_pos(ts)
    elif kind == "turn_context":
        if isinstance(p.get("cwd"), str) and not ev.cwd:
            ev.cwd = p["cwd"][:4096]
    elif kind == "response_item":
        _response_item(ev, p, ts)
    elif kind == "event_msg":
        _event(ev, p, ts)
    elif kind == "compacted":
        ev.compactions += 1
        ev.next_pos(ts)


def _response_item(ev: Evidence, p: dict[str, Any], ts: int | None) -> None:
    ptype = p.get("type")
    call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else p.get("id")
    if ptype == "function_call" and isinstance(call_id, str):
        name = str(p.get("name", ""))
        args = _args(p)
        if name in _SHELL_CALLS or name == "exec_command":
            line = _command_line(name, args)
            if line is None:
                return
            if line.lstrip().startswith("apply_patch"):
                ev.issue_edit(call_id, patch_files(line) or ["(apply_patch)"], ev.next_pos(ts))
            else:
                ev.issue_shell(call_id, line, ev.next_pos(ts))
        elif name == "apply_patch":
            body = args.get("input") if isinstance(args.get("input"), str) else ""
            ev.issue_edit(call_id, patch_files(str(body)) or ["(apply_patch)"], ev.next_pos(ts))
        elif name == "write_stdin" and isinstance(args.get("session_id"), int | str):
            ev.pending[call_id] = {"t": "poll", "sid": str(args["session_id"])}
    elif ptype == "local_shell_call" and isinstance(call_id, str):
        action = p.get("action")
        if isinstance(action, dict) and isinstance(action.get("command"), list):
            cmd = [str(c) for c in action["command"]]
            ev.issue_shell(call_id, shell_line_from_argv(cmd), ev.next_pos(ts))
    elif ptype == "custom_tool_call" and isinstance(call_id, str):
        if p.get("name") == "apply_patch" and isinstance(p.get("input"), str):
            ev.issue_edit(call_id, patch_files(p["input"]) or ["(apply_patch)"], ev.next_pos(ts))
    elif ptype in ("function_call_output", "custom_tool_call_output") and isinstance(call_id, str):
        if call_id in ev.pending:
            ev.next_pos(ts)
            _output(ev, call_id, _output_text(p.get("output")))
    elif ptype == "message":
        role = p.get("role")
        text = _text_items(p.get("content"))
        if role == "user" and text and not text.lstrip().startswith(_WRAPPERS):
            ev.next_pos(ts)
            ev.prompt(text, dedupe_within=4)
        elif role == "assistant" and text:
            ev.assistant_text(text, ev.next_pos(ts))


def _output(ev: Evidence, call_id: str, text: str) -> None:
    entry = ev.pending[call_id]
    if entry.get("t") == "poll":
        del ev.pending[call_id]
        code = _exit_code(text)
        if code is not None and re.search(_RUNNING, text[:2000]) is None:
            ev.resolve_background(f"codex-proc:{entry['sid']}", exit_code=code)
        return
    if entry.get("t") == "ed":
        failed = re.search(
            r"(?i)verification failed|invalid patch|error|failed to apply", text[:400]
        ) is not None and not text.startswith("Success")
        code = _exit_code(text)
        ev.resolve_edit(call_id, ok=(code == 0) if code is not None else not failed)
        return
    if re.search(_DENIED, text[:400]):
        ev.resolve_shell(call_id, denied=True)
        return
    running = re.search(_RUNNING, text[:2000])
    if running:
        ev.resolve_shell(call_id, background=f"codex-proc:{running.group(1)}")
        return
    code = _exit_code(text)
    if code is not None:
        ev.resolve_shell(call_id, exit_code=code)
    # Otherwise wait: an ``exec_command_end`` may still bring the exit code.


def _event(ev: Evidence, p: dict[str, Any], ts: int | None) -> None:
    ptype = p.get("type")
    if ptype == "exec_command_end":
        call_id = p.get("call_id")
        code = p.get("exit_code") if isinstance(p.get("exit_code"), int) else None
        if isinstance(call_id, str) and call_id in ev.pending:
            ev.next_pos(ts)
            ev.resolve_shell(call_id, exit_code=code)
            return
        # A long-running command that was answered "running": resolve its background id.
        for task_id, ref in list(ev.background.items()):
            if ref == call_id:
                ev.resolve_background(task_id, exit_code=code)
                return
        pid = p.get("process_id")
        if pid is not None and f"codex-proc:{pid}" in ev.background:
            ev.resolve_background(f"codex-proc:{pid}", exit_code=code)
            return
        cmd = p.get("command")
        if isinstance(call_id, str) and isinstance(cmd, list) and code is not None:
            # Only the event is in the file (older rollouts): classify and resolve at once.
            ev.issue_shell(call_id, shell_line_from_argv([str(c) for c in cmd]), ev.next_pos(ts))
            ev.resolve_shell(call_id, exit_code=code)
    elif ptype == "patch_apply_end":
        changes = p.get("changes")
        if p.get("success") is True and isinstance(changes, dict):
            ev.change(ev.next_pos(ts), [str(k) for k in changes] or ["(apply_patch)"])
    elif ptype == "user_message" and isinstance(p.get("message"), str):
        text = p["message"]
        if text.strip() and not text.lstrip().startswith(_WRAPPERS):
            ev.next_pos(ts)
            ev.prompt(text, dedupe_within=4)
    elif ptype == "agent_message" and isinstance(p.get("message"), str):
        ev.assistant_text(p["message"], ev.next_pos(ts))
    elif ptype == "task_complete" and isinstance(p.get("last_agent_message"), str):
        ev.assistant_text(p["last_agent_message"], ev.next_pos(ts))
    elif ptype == "turn_aborted":
        ev.interrupt_pending()
