"""Shared CLI plumbing: JSON or human output, error reporting, exit statuses, the HTTP client.

Output for programs is ``--json`` (one JSON document on stdout); output for people is
readable text. Errors go to stderr as one line (or as ``{error, code}`` JSON with ``--json``)
and the process exits with the status of the error's kind (:func:`exit_table`). Commands that
talk to a running service take ``--url`` and ``--token-file`` (or ``AGENT_TASK_URL``,
``AGENT_TASK_TOKEN_FILE`` / ``AGENT_TASK_TOKEN``); operator commands take ``--data-dir``
and ``--database`` (a PostgreSQL journal, ``$AGENT_TASK_DATABASE``).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import quote

import click
from taskcore.errors import ErrorCode, ErrorKind, TaskError
from taskcore.jsontext import parse_json
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES
from taskcore.paths import default_data_dir
from taskcore.tokenfile import no_token_error, read_token_file

from taskcli.plainhttp import HttpError as _HttpError
from taskcli.plainhttp import PlainHttp as _PlainHttp

__all__ = [
    "DATABASE_ENV",
    "DEFAULT_URL",
    "SERVER_EXTRA",
    "RequestCommand",
    "ServiceClient",
    "client_options",
    "data_dir_option",
    "database_option",
    "emit",
    "exit_table",
    "fail",
    "human",
    "internal",
    "json_option",
    "read_json_argument",
    "request_option",
    "require_server_extra",
    "resolve_data_dir",
    "route_options",
    "run",
    "set_global_data_dir",
]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_URL = "http://127.0.0.1:8787"
"""Where ``agent-task serve`` listens by default."""

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")
"""``--json`` means one thing everywhere: print one JSON document for programs."""

request_option = click.option(
    "--request",
    "request",
    default=None,
    metavar="JSON|@FILE|-",
    help="The request body: inline JSON, @FILE, or - for stdin (default {}).",
)
"""The request body of ``call`` and ``task`` (``--json`` is the output flag everywhere)."""


class RequestCommand(click.Command):
    """A command taking ``--request``: says so when someone passes the body after ``--json``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Parse as usual; an extra argument right after ``--json`` gets a hint."""
        given = list(args)  # click consumes ``args`` while parsing
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as err:
            if "--json" in given and "unexpected extra argument" in err.format_message():
                raise click.UsageError(
                    err.format_message()
                    + " (--json prints JSON for programs; pass the request body with --request)",
                    ctx,
                ) from None
            raise


DATABASE_ENV = "AGENT_TASK_DATABASE"
"""The variable ``taskcore.store.open_storage`` reads (``taskcore.store.storage.DATABASE_ENV``)."""


def _set_database(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Make ``--database`` the journal of every storage this process opens.

    ``open_storage`` (the one place storage is opened) reads ``$AGENT_TASK_DATABASE``; the
    option sets it for this process, so every command, and everything a command opens
    (the local authority a collector or a Stop hook reads, the operator's admin), uses the
    same database. ``--database ''`` forces the SQLite journal in the data dir.
    """
    if value is None:
        return
    value = value.strip()
    if value and not value.startswith(("postgresql://", "postgres://")):
        raise click.BadParameter("a database URL starts with postgresql://", ctx, param)
    os.environ[DATABASE_ENV] = value


database_option = click.option(
    "--database",
    metavar="URL",
    default=None,
    expose_value=False,
    is_eager=True,
    callback=_set_database,
    help="A PostgreSQL journal, postgresql://USER@HOST/DB (default: $AGENT_TASK_DATABASE; "
    "none: the SQLite journal in the data dir).",
)
"""``--database URL``: where the journal is, for every command that opens storage."""

_data_dir_only = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Service data directory (default: $AGENT_TASK_DATA_DIR or ~/.local/share/agent-task).",
)


def data_dir_option(f: F) -> F:
    """``--data-dir`` and ``--database``: every command that opens storage takes both."""
    return database_option(_data_dir_only(f))


_GLOBAL_DATA_DIR = "agent_task.data_dir"


def set_global_data_dir(ctx: click.Context, value: Path | None) -> None:
    """Remember the group's global ``--data-dir`` for the subcommand of this invocation."""
    if value is not None:
        ctx.meta[_GLOBAL_DATA_DIR] = value


def resolve_data_dir(value: Path | None) -> Path:
    """Return the data directory to use.

    The command's own ``--data-dir``, else the global ``agent-task --data-dir``, else
    ``$AGENT_TASK_DATA_DIR`` or ``~/.local/share/agent-task``.
    """
    if value is not None:
        return value
    ctx = click.get_current_context(silent=True)
    chosen = ctx.meta.get(_GLOBAL_DATA_DIR) if ctx is not None else None
    return chosen if isinstance(chosen, Path) else default_data_dir()


def exit_table() -> str:
    """Return the exit status table, generated from :class:`taskcore.ErrorKind`.

    >>> exit_table().startswith("Exit status: 0 success; 1 internal")
    True
    """
    groups: dict[int, list[str]] = {}
    for kind in ErrorKind:
        groups.setdefault(kind.exit_status, []).append(kind.name.replace("_", " ").lower())
    groups.setdefault(2, []).insert(0, "usage error")
    parts = ["0 success"] + [f"{status} {', '.join(groups[status])}" for status in sorted(groups)]
    return "Exit status: " + "; ".join(parts) + "."


def human(value: Any, indent: int = 0) -> str:
    """Render a JSON value as indented ``key: value`` lines for people.

    >>> print(human({"claimed": True, "task": {"taskId": "at_1", "verb": "agent.run"}}))
    claimed: true
    task:
      taskId: at_1
      verb: agent.run
    """
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return pad + "{}"
        lines = []
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}{key}:")
                lines.append(human(item, indent + 1))
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
        return "\n".join(lines)
    if isinstance(value, list):
        if not value:
            return pad + "[]"
        lines = []
        for item in value:
            if isinstance(item, dict | list) and item:
                body = human(item, indent + 1)
                lines.append(f"{pad}- {body.lstrip()}")
            else:
                lines.append(f"{pad}- {_scalar(item)}")
        return "\n".join(lines)
    return pad + _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def emit(value: Any, as_json: bool, render: Callable[[Any], str] | None = None) -> None:
    """Print ``value`` as compact JSON, or through ``render`` (default :func:`human`)."""
    if as_json:
        click.echo(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    else:
        click.echo((render or human)(value))


def fail(err: TaskError, as_json: bool) -> NoReturn:
    """Report ``err`` on stderr and exit with its kind's status."""
    if as_json:
        click.echo(json.dumps(err.to_json(), ensure_ascii=False), err=True)
    else:
        click.echo(f"agent-task: {err.describe()} [{err.code.value}]", err=True)
    sys.exit(err.code.kind.exit_status)


SERVER_EXTRA = "agenttask[server]"
"""The extra that installs the HTTP, MCP and board packages (``serve``, ``mcp --stdio``)."""


def require_server_extra(command: str, module: str) -> None:
    """Exit 2 with one line naming :data:`SERVER_EXTRA` unless ``module`` imports.

    ``agenttask`` alone is the agent's side; the server's packages (taskhttp, taskmcp,
    taskboard and what they need) come with the extra. A command that serves imports its
    server module here first, so a lean install answers with what to install instead of an
    import traceback.
    """
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        click.echo(
            f"agent-task: '{command}' needs the server extra ({exc.name or module} is not "
            f"installed): pip install '{SERVER_EXTRA}'",
            err=True,
        )
        sys.exit(2)


def internal(message: str) -> TaskError:
    """An INTERNAL error for the CLI's own failures."""
    return TaskError(ErrorCode.INTERNAL, message)


def run(as_json: bool, fn: Callable[[], Any]) -> Any:
    """Run ``fn``; a :class:`TaskError` ends the process through :func:`fail`."""
    try:
        return fn()
    except TaskError as err:
        fail(err, as_json)


def read_json_argument(value: str | None, *, default: str = "{}") -> bytes:
    """Return request bytes from ``--request``: inline JSON, ``@FILE`` or ``-`` (stdin).

    The bytes are sent as given; the service decodes them strictly. At most 16 MiB is read.

    >>> read_json_argument('{"taskId": "at_1"}')
    b'{"taskId": "at_1"}'
    """
    limit = COLLECTOR_ENVELOPE_MAX_BYTES
    if value is None:
        return default.encode()
    if value == "-":
        data = sys.stdin.buffer.read(limit + 1)
    elif value.startswith("@"):
        try:
            with open(value[1:], "rb") as handle:
                data = handle.read(limit + 1)
        except OSError as exc:
            raise TaskError(
                ErrorCode.BAD_INPUT, f"cannot read {value[1:]!r}: {exc.strerror}"
            ) from None
    else:
        data = value.encode("utf-8", "surrogatepass")
    if len(data) > limit:
        raise TaskError(ErrorCode.PAYLOAD_TOO_LARGE, f"the input is larger than {limit} bytes")
    return data


def client_options(fn: F) -> F:
    """Add ``--url`` and ``--token-file`` (with their environment variables)."""
    fn = click.option(
        "--token-file",
        type=click.Path(dir_okay=False, path_type=Path),
        envvar="AGENT_TASK_TOKEN_FILE",
        default=None,
        help="File holding the bearer token [env AGENT_TASK_TOKEN_FILE; or AGENT_TASK_TOKEN].",
    )(fn)
    return click.option(
        "--url",
        envvar="AGENT_TASK_URL",
        default=DEFAULT_URL,
        show_default=True,
        help="Service base URL [env AGENT_TASK_URL].",
    )(fn)


def route_options(fn: F) -> F:
    """Add ``--repository`` and ``--profile`` (workflow routes)."""
    fn = click.option(
        "--profile",
        envvar="AGENT_TASK_PROFILE",
        default=None,
        help="Profile [env AGENT_TASK_PROFILE].",
    )(fn)
    return click.option(
        "--repository",
        envvar="AGENT_TASK_REPOSITORY",
        default=None,
        help="Repository, ID or OWNER/NAME [env AGENT_TASK_REPOSITORY].",
    )(fn)


def _token(token_file: Path | None) -> str | None:
    if token_file is not None:
        return read_token_file(token_file)
    token = os.environ.get("AGENT_TASK_TOKEN", "").strip()
    return token or None


class ServiceClient:
    """A small HTTP client of the running service; failures become :class:`TaskError`.

    A plain ``http://`` service is spoken to over one kept-alive socket
    (:class:`_PlainHttp`, standard library only: importing httpx costs a command several
    times the interpreter's own start-up); ``https://`` goes through httpx, which verifies
    the certificate.
    """

    def __init__(
        self,
        url: str,
        token_file: Path | None,
        *,
        timeout: float = 60.0,
        transport: _PlainHttp | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.token = _token(token_file)
        self.timeout = timeout
        self._http: Any = transport
        """``transport``: the plain client to use (the task-stop slim path hands over its own)."""

    def _client(self) -> Any:
        """One connection-pooling client per ServiceClient (collect makes several calls)."""
        if self._http is None:
            plain = _PlainHttp.for_url(self.url, self.timeout)
            if plain is not None:
                self._http = plain
            else:
                import httpx  # only for https:// (or an unusual URL): it verifies TLS

                self._http = httpx.Client(
                    timeout=self.timeout, verify=self.url.startswith("https://")
                )
        return self._http

    def _post(self, path: str, body: bytes, content_type: str) -> Any:
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        if not self.token:
            raise no_token_error()
        headers["Authorization"] = f"Bearer {self.token}"
        client = self._client()
        if isinstance(client, _PlainHttp):
            try:
                status, content = client.post(path, body, headers)
            except _HttpError as failure:
                raise TaskError(
                    ErrorCode.SERVICE_UNREACHABLE,
                    f"the service at {self.url[:200]} did not answer ({failure.kind}); "
                    "is 'agent-task serve' running?",
                ) from None
        else:
            import httpx

            try:
                response = client.post(self.url + path, content=body, headers=headers)
            except httpx.HTTPError as exc:
                raise TaskError(
                    ErrorCode.SERVICE_UNREACHABLE,
                    f"the service at {self.url[:200]} did not answer ({type(exc).__name__}); "
                    "is 'agent-task serve' running?",
                ) from None
            status, content = response.status_code, response.content
        try:
            answer = parse_json(content, max_bytes=COLLECTOR_ENVELOPE_MAX_BYTES)
        except TaskError:
            answer = None
        if status == 200 and isinstance(answer, dict):
            return answer
        if isinstance(answer, dict) and isinstance(answer.get("code"), str):
            try:
                code = ErrorCode.from_wire(answer["code"])
            except ValueError:
                code = ErrorCode.MALFORMED_RESPONSE
            message = answer.get("error")
            raise TaskError(
                code,
                message if isinstance(message, str) else "the service refused the call",
                details={"status": status},
            )
        raise TaskError(
            ErrorCode.MALFORMED_RESPONSE,
            f"the service answered HTTP {status} without a JSON body",
        )

    def verb(self, name: str, body: bytes) -> Any:
        """``POST /v/{name}`` with JSON ``body``."""
        return self._post("/v/" + quote(name, safe="."), body, "application/json")

    def _workflow_path(self, repository: str | None, profile: str | None) -> str:
        if not repository or not profile:
            raise TaskError(
                ErrorCode.BAD_INPUT,
                "workflow calls need --repository and --profile "
                "(or AGENT_TASK_REPOSITORY and AGENT_TASK_PROFILE)",
            )
        return (
            f"/v1/hub/workspace/repositories/{quote(repository, safe='')}"
            f"/profiles/{quote(profile, safe='')}/agent-tasks"
        )

    def workflow(self, repository: str | None, profile: str | None, op: str, body: bytes) -> Any:
        """Send the envelope ``{"operation": op, "request": body}`` to the workflow route."""
        path = self._workflow_path(repository, profile)
        request = parse_json(body, max_bytes=COLLECTOR_ENVELOPE_MAX_BYTES)
        envelope = json.dumps({"operation": op, "request": request}, ensure_ascii=False)
        return self._post(path, envelope.encode("utf-8"), "application/json")

    def upload(self, repository: str | None, profile: str | None, data: bytes) -> Any:
        """Send raw transfer bytes to the collector upload route."""
        path = self._workflow_path(repository, profile) + "/collector-upload"
        return self._post(path, data, "application/octet-stream")
