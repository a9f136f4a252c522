r"""The gate's standard-library-only parts, shared by the full hook and its fast path.

Where the roots and the index are (from the environment), which harness wrote a transcript,
which repository a directory belongs to, the digest of a transcript's first line, and the
exact text of the hook's answers. :mod:`taskcore.donegate.config`, :mod:`taskcore.donegate.index`
and :mod:`taskcore.donegate.hook` use these; :mod:`taskcore.donegate.quickhook` uses them without
loading attrs or the rest of the gate.

>>> fail_line("the transcript is missing")
'{"systemMessage": "done gate: the transcript is missing; the stop was allowed"}'
>>> hook_output("codex", "Stop", "block", ["a", "b"])
'{"decision": "block", "reason": "a\\nb"}'
"""

from __future__ import annotations

import functools
import json
import os
import time

from taskcore import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CLAUDE_CODE",
    "CODEX",
    "DSH",
    "INDEX_FILENAME",
    "env_locations",
    "fail_line",
    "harness_of_real",
    "head_digest",
    "hook_output",
    "leave_now",
    "repository_of",
    "wait_for_rollout",
    "within",
]

CLAUDE_CODE = "claude-code"
CODEX = "codex"
DSH = "dsh"
INDEX_FILENAME = paths.GATE_INDEX_FILENAME


def env_locations(index_path: str | None = None) -> tuple[str, str, str, str | None]:
    """``(index, claude root, codex root, dsh root or None)`` from the environment.

    The variables and defaults are :mod:`taskcore.paths`'s; ``index_path`` overrides the index.
    """
    return (
        paths.gate_index_path(index_path),
        paths.claude_projects_dir(),
        paths.codex_sessions_dir(),
        paths.dsh_sessions_dir(),
    )


def within(path: str, root: str) -> bool:
    """Whether the resolved ``path`` lies under ``root`` (resolved here)."""
    try:
        real_root = os.path.realpath(root)
    except (OSError, ValueError):
        return False
    return path.startswith(real_root.rstrip(os.sep) + os.sep)


def harness_of_real(real: str, roots: Sequence[tuple[str, str]]) -> str:
    """Which harness wrote the resolved path ``real``: by root, else by its first line."""
    for harness, root in roots:
        if within(real, root):
            return harness
    if real.endswith(".jsonl.zstd"):
        return DSH
    try:
        with open(real, "rb") as f:
            head = f.read(4096)
    except OSError:
        return CLAUDE_CODE
    first = head.split(b"\n", 1)[0]
    if first.startswith(b'{"type":"session","version":'):
        return DSH
    if b'"payload"' in first and (
        b'"session_meta"' in first
        or b'"response_item"' in first
        or b'"event_msg"' in first
        or b'"turn_context"' in first
    ):
        return CODEX
    return CLAUDE_CODE


@functools.lru_cache(maxsize=4096)
def repository_of(cwd: str) -> str:
    """The repository a working directory belongs to: the nearest ancestor holding ``.git``.

    Without one, the directory itself (as the seed's ``Users/saurabh`` row: a session started
    outside a repository stays visible as its own group). Only the file system is consulted.
    """
    if not cwd:
        return ""
    path = os.path.normpath(cwd)
    probe = path
    for _ in range(64):
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return path


def head_digest(path: str) -> str:
    """Digest of a JSONL transcript's first line (at most 4 KiB); empty until it is complete."""
    try:
        with open(path, "rb") as f:
            data = f.read(4096)
    except OSError:
        return ""
    nl = data.find(b"\n")
    if nl < 0:
        return ""
    try:  # the bare SHA-256 module: importing hashlib (and OpenSSL) costs a hook ~4 ms
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - an interpreter built without it
        from hashlib import sha256
    digest: str = sha256(data[:nl]).hexdigest()
    return digest[:32]


def fail_line(reason: str) -> str:
    """The one line printed when the gate cannot answer."""
    return json.dumps({"systemMessage": f"done gate: {reason}; the stop was allowed"})


def hook_output(harness: str, event: str, action: str, receipt: Sequence[str]) -> str:
    """The stdout text for an action (``silent`` is the empty string)."""
    text = "\n".join(receipt)
    if action == "block":
        if harness == CODEX:
            return json.dumps({"decision": "block", "reason": text}, ensure_ascii=False)
        return json.dumps(
            {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
            ensure_ascii=False,
        )
    if action == "receipt":
        return json.dumps({"systemMessage": text}, ensure_ascii=False)
    return ""


def leave_now() -> None:
    """End the hook process at once, exit status 0, without waiting for any thread.

    Past its deadline the hook has printed its one line; a worker may still be inside a read
    or hold the index, and the stop must not wait for it (``os._exit``, not ``sys.exit``).
    """
    os._exit(0)


ROLLOUT_WAIT_ENV = "AGENT_TASK_GATE_ROLLOUT_WAIT_MS"
"""Replaces the bound of :func:`wait_for_rollout` (milliseconds; ``0``: look once)."""
ROLLOUT_TAIL_BYTES = 256 * 1024
"""How much of a rollout's end :func:`wait_for_rollout` reads for the last message."""


def wait_for_rollout(path: str, last_message: str | None, wait_ms: int) -> bool:
    """Wait (at most ``wait_ms``) until a Codex rollout holds the turn's last message.

    Codex writes its rollout on a background task, so a Stop hook can read a rollout that
    lags the turn it judges: a command's output missing makes it look still running. The
    Stop payload's ``last_assistant_message`` is the turn's last item, so once the file's
    end holds it (JSON-escaped as Codex writes it; its last 160 characters), what came
    before it is there too. ``True`` when it is there (or there is no message to look for),
    ``False`` when the wait ran out (the gate then reads what is there, as before). Only
    Codex's own rollouts (``rollout-*.jsonl``) are waited for: another file read with
    ``--harness codex`` (a dsh session) is written before its hook runs. The environment
    variable ``AGENT_TASK_GATE_ROLLOUT_WAIT_MS`` (digits) replaces ``wait_ms``.
    """
    if last_message is None or not last_message.strip():
        return True
    name = os.path.basename(path)
    if not (name.startswith("rollout-") and name.endswith(".jsonl")):
        return True
    override = os.environ.get(ROLLOUT_WAIT_ENV, "")
    if override.isdigit() and len(override) <= 6:
        wait_ms = int(override)
    needle = json.dumps(last_message[-160:], ensure_ascii=False)[1:-1].encode("utf-8")
    give_up = time.monotonic() + wait_ms / 1000
    while True:
        try:
            with open(path, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - ROLLOUT_TAIL_BYTES))
                if needle in f.read(ROLLOUT_TAIL_BYTES):
                    return True
        except OSError:
            return True  # the readers say what is wrong with the file
        if time.monotonic() >= give_up:
            return False
        time.sleep(0.02)
