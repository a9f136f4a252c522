"""``agent-task task-stop`` and ``task-codex-stop``: the slim pass path first, then the full hook.

:mod:`taskcli.entry` dispatches both hook commands here before click is imported. For the
plain command line ``install-stop`` writes (``CHANGE --endpoint URL --repository R --profile
P --token-file F --workspace W [--data-dir D]``, each option once, ``--opt value`` or
``--opt=value``) this module loads only the standard library, apsw,
:mod:`taskcore.collector.quickstop` and :mod:`taskcli.plainhttp`, and runs the full hook's
steps itself for a stop that can pass: the counter, a local read (the journal's subject
with one SQLite query, the work tree with two git commands), the ``qualification`` call
over the plain socket client, a second local read. When both reads agree and the answer
passes, it resets the counter as the full hook does and exits 0 with no output.

Anything else goes to the full hook (:func:`taskcore.collector.stophook.run_hook` behind
``taskcli.stop_cmd``), which then answers exactly as it would have alone:

* before the call (another command line, ``--database`` or ``$AGENT_TASK_DATABASE``, an
  unreadable payload, counter or token, a state that cannot pass), the full hook runs from
  the start, with the payload bytes already read;
* after the call (an answer that does not pass, a changed state, any failure), the full hook
  is handed the first read and the exchange already made, and does only the rest (it judges
  the recorded answer through :class:`taskcli.common.ServiceClient`, reads the local state a
  second time and decides): the service is asked once per stop, as before.
"""

from __future__ import annotations

import sys

from taskcore.limits import GATE_STDIN_MAX_BYTES, QUALIFICATION_TIMEOUT_SECONDS

from taskcli.plainhttp import HttpError, PlainHttp

TYPE_CHECKING = False  # not typing's: importing typing alone costs a Stop hook ~5 ms
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

    from taskcore.collector.quickpass import Asked
    from taskcore.collector.quickstop import GitRun

__all__ = ["Args", "main", "parse_args"]

_REQUIRED = ("--endpoint", "--repository", "--profile", "--token-file", "--workspace")
_OPTIONS = (*_REQUIRED, "--data-dir")
_UNQUOTED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")

Args = dict[str, str]
"""The plain command line read: ``change`` and each option given (``--data-dir`` may be absent)."""


def parse_args(argv: Sequence[str]) -> Args | None:
    """The plain command line as a dict, or ``None`` for any other (click then reads it).

    >>> parse_args(["c1", "--endpoint=http://h", "--repository", "r", "--profile", "p",
    ...     "--token-file", "/t", "--workspace", "/w"])["--endpoint"]
    'http://h'
    >>> parse_args(["c1", "--help"]) is None
    True
    """
    out: Args = {}
    items = list(argv)
    while items:
        item = items.pop(0)
        if not item.startswith("-"):
            if "change" in out or not item:
                return None
            out["change"] = item
            continue
        name, eq, value = item.partition("=")
        if name not in _OPTIONS or name in out:
            return None
        if not eq:
            if not items:
                return None
            value = items.pop(0)
        if not value or value.startswith("-"):
            return None
        out[name] = value
    if "change" not in out or any(name not in out for name in _REQUIRED):
        return None
    return out


def _request(args: Args, token: str) -> tuple[str, bytes, dict[str, str]]:
    """What ``ServiceClient.workflow(..., "qualification", ...)`` sends.

    :class:`~taskcore.collector.quickstop.UndecidedError` when the route's ids would need
    percent-encoding or the Change id is not plain text: the full hook builds those requests
    itself.
    """
    from taskcore.collector.quickstop import UndecidedError, qualification_body

    repository, profile = args["--repository"], args["--profile"]
    if not (_UNQUOTED.issuperset(repository) and _UNQUOTED.issuperset(profile)):
        raise UndecidedError("the route's ids need percent-encoding")
    path = f"/v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks"
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Authorization": f"Bearer {token}",
    }
    return path, qualification_body(args["change"]), headers


def _slim(args: Args, raw: bytes, asked: list[Asked], git: GitRun | None) -> bool:
    """:func:`taskcore.collector.quickpass.slim_pass` over the plain socket client."""
    from taskcore.collector.quickpass import slim_pass
    from taskcore.collector.quickstop import UndecidedError
    from taskcore.paths import default_data_location

    http = PlainHttp.for_url(args["--endpoint"].rstrip("/"), float(QUALIFICATION_TIMEOUT_SECONDS))
    if http is None:
        raise UndecidedError("not a plain http:// endpoint: the full client speaks to it")
    try:
        return slim_pass(
            raw,
            change=args["change"],
            repository=args["--repository"],
            profile=args["--profile"],
            workspace=args["--workspace"],
            data_dir=args.get("--data-dir") or default_data_location(),
            token_file=args["--token-file"],
            request=lambda token: _request(args, token),
            post=lambda question: http.post(*question),
            failure=HttpError,
            asked=asked,
            git=git,
        )
    finally:
        http.close()


class _Replayed(PlainHttp):
    """The exchange the slim path made, answered again to the full hook's client."""

    def __init__(self, base: PlainHttp, asked: Asked) -> None:
        super().__init__(base.host, base.port, base.prefix, base.timeout)
        self.asked = asked

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        outcome, self.asked.outcome = self.asked.outcome, None
        if outcome is None or (path, body, headers) != self.asked.request:
            return super().post(path, body, headers)  # not the recorded question: ask it
        if isinstance(outcome, Exception):  # the transport failure the slim pass met
            raise outcome
        return outcome


def _full(harness: str, args: Args, raw: bytes | None, asked: Asked | None) -> NoReturn:
    """The full hook on the parsed command line; ``asked``: hand over the read and exchange."""
    import io
    from pathlib import Path

    from taskcore.collector.stop import LocalRead
    from taskcore.collector.stophook import run_hook
    from taskcore.paths import default_data_dir

    from taskcli.common import ServiceClient
    from taskcli.stop_cmd import finish

    endpoint = args["--endpoint"]
    before = None
    if asked is not None:
        subject = asked.subject
        before = LocalRead(subject=subject, head=asked.head, clean=True, base_revision=subject[2])

    def connect(token_file: Path, timeout: float) -> ServiceClient:
        transport = PlainHttp.for_url(endpoint.rstrip("/"), timeout)
        if asked is not None and transport is not None:
            transport = _Replayed(transport, asked)
        return ServiceClient(endpoint, token_file, timeout=timeout, transport=transport)

    data_dir = args.get("--data-dir")
    status, text = run_hook(
        harness,
        change=args["change"],
        repository=args["--repository"],
        profile=args["--profile"],
        token_file=Path(args["--token-file"]),
        workspace=Path(args["--workspace"]),
        data_dir=Path(data_dir) if data_dir else default_data_dir(),
        stdin=io.BytesIO(raw) if raw is not None else sys.stdin.buffer,
        connect=connect,
        endpoint=endpoint,
        before=before,
    )
    finish(status, text)


def _click() -> int:
    from taskcli.main import main as cli_main

    cli_main()
    return 0  # pragma: no cover - click exits


def main(name: str, argv: Sequence[str]) -> int:
    """Run ``agent-task NAME ARGV...`` (NAME is task-stop or task-codex-stop); exit status."""
    import os

    harness = "codex" if name == "task-codex-stop" else "claude-code"
    args = parse_args(argv)
    if args is None or os.environ.get("AGENT_TASK_DATABASE", "").strip():
        return _click()
    from taskcore.collector.quickstop import GitRun, UndecidedError

    try:  # the first read's git commands run while the payload is read and the rest loads
        git: GitRun | None = GitRun(args["--workspace"])
    except UndecidedError:
        git = None
    try:
        raw: bytes | None = sys.stdin.buffer.read(GATE_STDIN_MAX_BYTES + 1)
    except (OSError, ValueError):
        raw = None
    asked: list[Asked] = []
    if raw is not None:
        try:
            if _slim(args, raw, asked, git):
                return 0
        except Exception:  # noqa: S110 - anything the slim path did not expect: the full hook answers
            pass
    if git is not None:
        git.stop()  # the first read never ran (or failed): its git commands are not needed
    return _full(harness, args, raw, asked[0] if asked else None)
