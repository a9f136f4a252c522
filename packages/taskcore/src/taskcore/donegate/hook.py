"""The Stop hook core behind ``agent-task gate-stop --harness claude-code|codex``.

It reads the harness's Stop (or, with ``--subagent``, SubagentStop) payload from stdin, brings
the session's transcript up to date in the local index, places it on the ladder and answers
in that harness's documented shape:

* below the line, budget left: re-enter. Claude Code gets
  ``{"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": <receipt>}}`` (the
  documented non-error guidance field); Codex gets ``{"decision": "block", "reason":
  <receipt>}`` (its Stop output schema allows no other keys besides the common ones);
* below the line, budget spent: allow the stop and print the receipt once, as
  ``{"systemMessage": <receipt>}`` (a common output field of both harnesses);
* above the line, ``stop_hook_active`` true, a SubagentStop without ``--subagent``, or a
  Codex Stop whose ``transcript_path`` is ``null`` and whose session the index does not know
  (no rollout to judge): print nothing, exit 0;
* any trouble (unreadable stdin, no transcript, a locked index, its own deadline): one line,
  ``{"systemMessage": "done gate: ...; the stop was allowed"}``, exit 0. Never a crash,
  never a hang, never a non-zero exit.

This module imports only the gate and the standard library (no HTTP or MCP stack). The
command line (``--harness``, ``--subagent``, ``--deadline-ms``, ``--index``), the deadline and
the fast path in front of it are :mod:`taskcli.gate_stop`'s.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, BinaryIO

from taskcore.donegate.config import CODEX, GateConfig
from taskcore.donegate.index import GateIndex
from taskcore.donegate.light import fail_line, hook_output, wait_for_rollout
from taskcore.donegate.session_gate import SessionGateIn, answer, refresh_session, session_gate
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    GATE_CODEX_ROLLOUT_WAIT_MS,
    GATE_INDEX_BUSY_MS,
    GATE_STDIN_MAX_BYTES,
)

__all__ = ["fail_line", "hook_output", "respond", "run"]


class _FailOpenError(Exception):
    """Allow the stop and say why in one line."""


def _payload(stdin: BinaryIO) -> dict[str, Any]:
    try:
        raw = stdin.read(GATE_STDIN_MAX_BYTES + 1)
    except (OSError, ValueError):
        raise _FailOpenError("could not read the Stop payload") from None
    if len(raw) > GATE_STDIN_MAX_BYTES:
        raise _FailOpenError("the Stop payload is larger than 4 MiB")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise _FailOpenError("the Stop payload is not JSON") from None
    if not isinstance(data, dict):
        raise _FailOpenError("the Stop payload is not a JSON object")
    return data


def _str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def run(
    harness: str, stdin: BinaryIO, *, subagent: bool = False, config: GateConfig | None = None
) -> str:
    """Decide one stop; return the stdout text. Raises only ``_FailOpenError``."""
    data = _payload(stdin)
    event = _str(data, "hook_event_name") or "Stop"
    if event not in ("Stop", "SubagentStop"):
        raise _FailOpenError(f"the payload is a {event[:40]} event, not Stop")
    if event == "SubagentStop" and not subagent:
        return ""
    # Codex sends ``transcript_path: null`` when it keeps no rollout file it names (e.g. an
    # ephemeral run). If the index cannot find the session either, there is nothing to judge,
    # and a systemMessage on every stop would only be noise: stay silent.
    codex_without_rollout = (
        harness == CODEX and "transcript_path" in data and data["transcript_path"] is None
    )
    stop_hook_active = data.get("stop_hook_active") is True
    last_message = _str(data, "last_assistant_message")
    by_agent = event == "SubagentStop"
    if by_agent:
        # The subagent's own transcript, never the main session's: without one, its
        # agent_id names its session in the index (a Codex subagent is a thread of its own).
        transcript = _str(data, "agent_transcript_path")
        codex_without_rollout = harness == CODEX and transcript is None
    else:
        transcript = _str(data, "transcript_path")
    config = config or GateConfig.from_env()
    try:
        index = GateIndex(config, busy_timeout_ms=GATE_INDEX_BUSY_MS)
    except TaskError as err:
        raise _FailOpenError(f"the local index cannot be opened ({err.code.value})") from None
    try:
        if transcript is not None:
            path = Path(os.path.expanduser(transcript))
            if not path.is_file():
                raise _FailOpenError("the transcript file does not exist")
            if harness == CODEX:  # its rollout is written behind the turn: let it catch up
                wait_for_rollout(str(path), last_message, GATE_CODEX_ROLLOUT_WAIT_MS)
            read = refresh_session(index, path)
            ans = answer(index, read, last_message=last_message)
        elif by_agent:
            agent = _str(data, "agent_id")
            if agent is None:
                if codex_without_rollout:
                    return ""
                raise _FailOpenError("the SubagentStop payload names no agent transcript")
            request = SessionGateIn(session_id=agent)
            ans = session_gate(request, config=config, index=index, last_message=last_message)
        else:
            sid, cwd = _str(data, "session_id"), _str(data, "cwd")
            if sid is None and cwd is None:
                raise _FailOpenError("the payload names no transcript, session or directory")
            request = SessionGateIn(session_id=sid) if sid else SessionGateIn(cwd=cwd)
            ans = session_gate(request, config=config, index=index, last_message=last_message)
        decision = index.spend(
            ans.session_key,
            ans.prompt_key,
            below_line=ans.verdict.below_line,
            stop_hook_active=stop_hook_active,
        )
    except TaskError as err:
        if codex_without_rollout and err.code is ErrorCode.NOT_FOUND:
            return ""
        raise _FailOpenError(f"the session could not be read ({err.code.value})") from None
    finally:
        index.close()
    return hook_output(harness, event, decision.action, ans.result.receipt_lines)


def respond(
    harness: str, stdin: BinaryIO, *, subagent: bool = False, index: Path | None = None
) -> str:
    """The hook's stdout text for one stop: :func:`run`'s answer, or one fail-open line.

    Never raises: a refusal (``_FailOpenError``) or any other exception becomes the one
    ``systemMessage`` line that allows the stop. The command line, the deadline and the
    process exit belong to the caller (:mod:`taskcli.gate_stop`).
    """
    try:
        config = GateConfig.from_env(index_path=index)
        return run(harness, stdin, subagent=subagent, config=config)
    except _FailOpenError as why:
        return fail_line(str(why))
    except Exception as exc:
        return fail_line(f"an internal error ({type(exc).__name__})")
