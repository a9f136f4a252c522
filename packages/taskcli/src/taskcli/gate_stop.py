"""``agent-task gate-stop``: the done gate's Stop hook command line, fast path first.

:mod:`taskcli.entry` dispatches ``gate-stop`` here before click is imported: this module loads
only the standard library and :mod:`taskcore.donegate.light`, reads the plain command-line
forms by hand and asks :func:`taskcore.donegate.quickhook.answer` for an answer from the index
alone. Anything else (another command-line form, ``--help``, a payload or index the fast path
does not know) goes to :func:`full_main`: argparse, then :func:`taskcore.donegate.hook.respond`
in a worker thread under the hook's deadline. Always exit 0: the stop is never blocked by a
failure.
"""

from __future__ import annotations

import io
import sys

try:  # the C module: signal.py's enum wrappers of every constant cost a Stop hook ~0.5 ms
    import _signal as signal  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - an interpreter without it
    import signal

from taskcore.donegate.light import CLAUDE_CODE, CODEX, fail_line, leave_now
from taskcore.limits import GATE_HOOK_DEADLINE_MS, GATE_STDIN_MAX_BYTES

TYPE_CHECKING = False  # not typing's: importing typing alone costs a Stop hook ~5 ms
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, BinaryIO, TextIO

__all__ = ["full_main", "main"]

_HARNESSES = (CLAUDE_CODE, CODEX)

Parsed = tuple[str, bool, int, str | None]
"""``(harness, subagent, deadline ms, index)``."""


def _args(argv: Sequence[str]) -> Parsed | None:
    """``(harness, subagent, deadline ms, index)`` for the plain forms, else ``None``.

    >>> _args(["--harness", "codex", "--deadline-ms=900"])
    ('codex', False, 900, None)
    >>> _args(["--harness", "codex", "--help"]) is None
    True
    """
    harness: str | None = None
    subagent = False
    deadline = GATE_HOOK_DEADLINE_MS
    index: str | None = None
    seen: set[str] = set()
    items = list(argv)
    while items:
        item = items.pop(0)
        name, eq, value = item.partition("=")
        if name == "--subagent" and not eq:
            flag = True
        elif name in ("--harness", "--deadline-ms", "--index"):
            flag = False
            if not eq:
                if not items:
                    return None
                value = items.pop(0)
            if not value or value.startswith("-"):
                return None
        else:
            return None
        if name in seen:
            return None
        seen.add(name)
        if flag:
            subagent = True
        elif name == "--harness":
            if value not in _HARNESSES:
                return None
            harness = value
        elif name == "--deadline-ms":
            if not value.isascii() or not value.isdigit():
                return None
            deadline = int(value)
        else:
            index = value
    return None if harness is None else (harness, subagent, deadline, index)


def _parse(argv: Sequence[str]) -> Parsed:
    """The argparse reading of the command line (exits with usage on a wrong one)."""
    import argparse  # only here: a command line the fast path has already read skips it

    from taskcore.donegate.config import HARNESSES

    parser = argparse.ArgumentParser(
        prog="agent-task gate-stop",
        description="The done gate's Stop hook: reads the Stop payload on stdin.",
    )
    parser.add_argument("--harness", required=True, choices=HARNESSES)
    parser.add_argument(
        "--subagent", action="store_true", help="also answer SubagentStop payloads (off by default)"
    )
    parser.add_argument(
        "--deadline-ms",
        type=int,
        default=GATE_HOOK_DEADLINE_MS,
        help=f"allow the stop after this long (default {GATE_HOOK_DEADLINE_MS})",
    )
    parser.add_argument("--index", default=None, help="the gate index file")
    ns = parser.parse_args(list(argv))
    return (ns.harness, ns.subagent, ns.deadline_ms, ns.index)


def full_main(
    argv: Sequence[str] | None = None,
    *,
    stdin: BinaryIO | None = None,
    stdout: TextIO | None = None,
    exit_on_timeout: bool = True,
    parsed: Parsed | None = None,
) -> int:
    """Run the full hook; always returns 0 (the stop is never blocked by a failure).

    Past the deadline it prints one line and, with ``exit_on_timeout``, leaves the process
    at once (the worker thread may be inside a read or holding the index). ``parsed`` is
    ``argv`` as :func:`_args` already read it: then argparse is not loaded.
    """
    import threading  # only here: the fast path answers without a worker thread
    from pathlib import Path

    from taskcore.donegate.hook import respond

    out = stdout or sys.stdout
    args_list = list(sys.argv[1:] if argv is None else argv)
    if parsed is None:
        if "-h" in args_list or "--help" in args_list:
            _parse(args_list)
        try:
            parsed = _parse(args_list)
        except SystemExit:
            out.write(
                fail_line(
                    "the hook command line is wrong; reinstall it with 'agent-task gate install'"
                )
                + "\n"
            )
            out.flush()
            return 0
    harness, subagent, deadline_ms, index = parsed
    source = stdin or sys.stdin.buffer
    result: list[str] = []

    def work() -> None:
        at = Path(index) if index is not None else None
        result.append(respond(harness, source, subagent=subagent, index=at))

    worker = threading.Thread(target=work, name="gate-stop", daemon=True)
    worker.start()
    worker.join(max(deadline_ms, 1) / 1000)
    text = result[0] if result else fail_line(f"no answer within {deadline_ms} ms")
    if text:
        out.write(text + "\n")
    out.flush()
    if not result and exit_on_timeout:
        # The worker may hold the index or a read; leave without waiting for it.
        leave_now()
    return 0


def _full(argv: Sequence[str], raw: bytes | None, parsed: Parsed | None = None) -> int:
    stdin = None if raw is None else io.BytesIO(raw)
    return full_main(list(argv), stdin=stdin, parsed=parsed)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the Stop hook: the fast path, else the full hook. Always returns 0."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parsed = _args(args_list)
    if parsed is None:
        return _full(args_list, None)
    harness, subagent, deadline_ms, index_path = parsed

    def too_late(_signum: int, _frame: Any) -> None:
        sys.stdout.write(fail_line(f"no answer within {deadline_ms} ms") + "\n")
        sys.stdout.flush()
        leave_now()

    from taskcore.donegate.quickhook import answer

    signal.signal(signal.SIGALRM, too_late)
    signal.setitimer(signal.ITIMER_REAL, max(deadline_ms, 1) / 1000)
    try:
        raw: bytes | None = sys.stdin.buffer.read(GATE_STDIN_MAX_BYTES + 1)
    except (OSError, ValueError):
        raw = None
    text = None if raw is None else answer(harness, raw, subagent=subagent, index_path=index_path)
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    if text is None:
        return _full(args_list, raw, parsed)
    if text:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover - ``python -m taskcli.gate_stop``: the full hook
    sys.exit(full_main())
