"""``agent-task session-start``: the SessionStart hook, dispatched before click is imported.

``agent-task session-start [--harness claude-code|codex] [--url URL] [--token-file FILE |
--grant-file GRANT] [--deadline-ms N]`` reads the harness's SessionStart payload on stdin (only
its ``source`` matters), asks the service at ``--url`` (or ``$AGENT_TASK_URL``) which leases the
token of ``--token-file`` (or ``$AGENT_TASK_TOKEN_FILE``, or the token in ``$AGENT_TASK_TOKEN``)
holds, and prints :func:`taskcore.agentsetup.sessionstart.context` in the harness's
``additionalContext`` shape. Nothing when nothing is held. When the service cannot answer
(down, refused, too slow, a malformed answer) or the command line is wrong: one
``systemMessage`` line. Always exit status 0.

With ``--grant-file`` (``agent setup --oauth``) the token is the access token of the command
line's OAuth grant (``agent-task agent login``; refreshed first when stale, see
:mod:`taskcore.agentsetup.grant`), and the question is the ``agenttask_leases`` tool on the
stateless ``/mcp`` endpoint, where the service accepts an access token.

A plain ``http://`` service is asked over :class:`taskcli.plainhttp.PlainHttp` (standard
library only); ``https://`` through :class:`taskcli.common.ServiceClient` (httpx, which
verifies the certificate).
"""

from __future__ import annotations

import os
import sys

try:  # the C module: signal.py's enum wrappers of every constant cost a hook ~0.5 ms
    import _signal as signal  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - an interpreter without it
    import signal

from taskcore.agentsetup.sessionstart import (
    context,
    fail_line,
    hook_output,
    leases_request,
    parse,
    source_of,
)
from taskcore.limits import GATE_STDIN_MAX_BYTES, SESSION_START_DEADLINE_MS

TYPE_CHECKING = False  # not typing's: importing typing alone costs a hook ~5 ms
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["USAGE", "main", "parse_args"]

USAGE = (
    "usage: agent-task session-start [--harness claude-code|codex] [--url URL] "
    "[--token-file FILE | --grant-file GRANT] [--deadline-ms N]\n\n"
    "The SessionStart hook: prints the leases this agent's token holds as the harness's "
    "additionalContext (nothing when none; one systemMessage line when the service cannot "
    "answer). URL and token default to $AGENT_TASK_URL and $AGENT_TASK_TOKEN_FILE (or "
    "$AGENT_TASK_TOKEN). Always exits 0.\n"
)

_OPTIONS = ("--harness", "--url", "--token-file", "--grant-file", "--deadline-ms")
_HARNESSES = ("claude-code", "codex")


def parse_args(argv: Sequence[str]) -> dict[str, str] | None:
    """The options given (each at most once, ``--opt value`` or ``--opt=value``), or ``None``.

    >>> parse_args(["--harness", "codex", "--url=http://h:1"])
    {'--harness': 'codex', '--url': 'http://h:1'}
    >>> parse_args(["--harness", "vim"]) is None, parse_args(["--url"]) is None
    (True, True)
    """
    out: dict[str, str] = {}
    items = list(argv)
    while items:
        name, eq, value = items.pop(0).partition("=")
        if name not in _OPTIONS or name in out:
            return None
        if not eq:
            if not items:
                return None
            value = items.pop(0)
        if not value:
            return None
        out[name] = value
    if out.get("--harness", "claude-code") not in _HARNESSES:
        return None
    if "--token-file" in out and "--grant-file" in out:
        return None
    deadline = out.get("--deadline-ms", "1")
    if not deadline.isascii() or not deadline.isdigit():
        return None
    return out


def _token(args: dict[str, str]) -> str | None:
    """The bearer token: the token file's, else ``$AGENT_TASK_TOKEN`` (``None``: neither)."""
    path = args.get("--token-file") or os.environ.get("AGENT_TASK_TOKEN_FILE", "").strip()
    if path:
        # taskcore.tokenfile.read_token_file without its imports (the error enum);
        # UndecidedError when the file cannot be read or is empty.
        from taskcore.collector.quickstop import read_token

        return read_token(path)
    return os.environ.get("AGENT_TASK_TOKEN", "").strip() or None


def _ask(url: str, token: str, timeout: float) -> tuple[int, bytes]:
    """``(status, body)`` of the question; ``OSError`` names a transport failure."""
    from taskcli.plainhttp import HttpError, PlainHttp

    path, body, headers = leases_request(token)
    http = PlainHttp.for_url(url.rstrip("/"), timeout)
    if http is None:
        import httpx  # https:// (or an unusual URL): httpx verifies the certificate

        try:
            with httpx.Client(timeout=timeout, verify=url.startswith("https://")) as client:
                response = client.post(url.rstrip("/") + path, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise OSError(type(exc).__name__) from None
        return response.status_code, response.content
    try:
        return http.post(path, body, headers)
    except HttpError as failure:
        raise OSError(failure.kind) from None
    finally:
        http.close()


def _refusal(status: int, content: bytes) -> str:
    """Why the service refused: its error code, or the HTTP status."""
    try:
        answer: Any = parse(content)
    except (ValueError, RecursionError):
        answer = None
    code = answer.get("code") if isinstance(answer, dict) else None
    if isinstance(code, str) and code.isascii() and code.replace("_", "").isalnum():
        fix = (
            "; check the token with 'agent-task agent doctor'"
            if code in ("UNAUTHENTICATED", "TOKEN_REVOKED", "FORBIDDEN")
            else ""
        )
        return f"the service refused the leases read ({code[:40]}){fix}"
    return f"the service answered HTTP {status} to the leases read"


def _ask_grant(url: str, path: str, deadline_ms: int) -> Any:
    """The leases answer with the OAuth grant at ``path``, or the hook's failure line (a str)."""
    from taskcore.agentsetup.grant import GrantError

    from taskcli.agent_grant import grant_token, mcp_call

    # Half the deadline each for a refresh and the question: a refresh cut off by the hook's
    # alarm after the service rotated the token would leave a spent refresh token behind.
    timeout = max(deadline_ms, 1) / 2000
    try:
        token, _grant = grant_token(path, timeout)
    except GrantError as err:
        return fail_line(str(err)[:300])
    except OSError as failure:
        return fail_line(f"the grant {path[:200]} cannot be used ({type(failure).__name__})")
    try:
        status, held = mcp_call(url, token, "agenttask_leases", timeout)
    except OSError as failure:
        return fail_line(f"the service at {url[:200]} did not answer ({str(failure)[:40]})")
    except (ValueError, RecursionError) as refused:
        return fail_line(
            f"the service refused the leases read ({str(refused)[:40]}); check the grant with "
            "'agent-task agent doctor'"
        )
    if status != 200:
        return fail_line(
            f"the service answered HTTP {status} to the leases read; log in again with "
            f"'agent-task agent login --url {url[:200]} --grant-file {path[:200]}'"
        )
    return held


def answer(args: dict[str, str], raw: bytes) -> str:
    """The hook's stdout text for the payload ``raw`` (empty: print nothing)."""
    url = args.get("--url") or os.environ.get("AGENT_TASK_URL", "").strip()
    if not url:
        return fail_line("no service URL (--url, or AGENT_TASK_URL)")
    deadline_ms = int(args.get("--deadline-ms", SESSION_START_DEADLINE_MS))
    grant_file = args.get("--grant-file")
    if grant_file is not None:
        held: Any = _ask_grant(url, grant_file, deadline_ms)
        if isinstance(held, str):
            return held
    else:
        try:
            token = _token(args)
        except Exception:
            return fail_line("the token file cannot be read or is empty")
        if token is None:
            return fail_line("no token (--token-file, AGENT_TASK_TOKEN_FILE or AGENT_TASK_TOKEN)")
        try:
            status, content = _ask(url, token, max(deadline_ms, 1) / 1000)
        except OSError as failure:
            return fail_line(f"the service at {url[:200]} did not answer ({str(failure)[:40]})")
        if status != 200:
            return fail_line(_refusal(status, content))
        try:
            held = parse(content)
        except (ValueError, RecursionError):
            return fail_line("the service's answer to the leases read is malformed")
    try:
        text = context(held, source=source_of(raw))
    except (ValueError, KeyError, TypeError, IndexError, RecursionError):
        return fail_line("the service's answer to the leases read is malformed")
    return "" if text is None else hook_output(text)


def _leave_now() -> None:
    sys.stdout.flush()
    os._exit(0)


def main(argv: Sequence[str]) -> int:
    """Run the hook; always returns 0 (a session is never kept from starting)."""
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(USAGE)
        return 0
    args = parse_args(argv)
    if args is None:
        sys.stdout.write(
            fail_line("the hook's command line is wrong; run 'agent-task agent setup' again") + "\n"
        )
        return 0
    deadline_ms = int(args.get("--deadline-ms", SESSION_START_DEADLINE_MS))

    def too_late(_signum: int, _frame: Any) -> None:
        sys.stdout.write(fail_line(f"no answer within {deadline_ms} ms") + "\n")
        _leave_now()

    signal.signal(signal.SIGALRM, too_late)
    # The whole hook's deadline: a little above the call's own timeout.
    signal.setitimer(signal.ITIMER_REAL, max(deadline_ms, 1) / 1000 + 0.5)
    try:
        raw = sys.stdin.buffer.read(GATE_STDIN_MAX_BYTES + 1)
    except (OSError, ValueError):
        raw = b""
    try:
        text = answer(args, raw)
    except Exception as exc:
        text = fail_line(f"an internal error ({type(exc).__name__})")
    signal.setitimer(signal.ITIMER_REAL, 0)
    if text:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0
