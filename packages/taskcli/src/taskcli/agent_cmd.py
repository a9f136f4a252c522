"""``agent-task agent setup|login|doctor|headers`` and ``agent-task session-start``.

* ``agent setup --harness claude-code|codex --url URL (--token-file F | --oauth [--grant-file
  G] [--share-grant]) --scope project|user [--dry-run] [--remove] [--change C --repository R --profile P
  [--data-dir D]]`` writes the
  harness's MCP server entry and hooks (:mod:`taskcore.agentsetup.plan` says what); a second
  run changes nothing; ``--dry-run`` prints the unified diff and writes nothing; ``--remove``
  takes out exactly what it writes.
* ``agent login --url URL [--grant-file G] [--no-browser]`` gives the command line (the hooks)
  its own OAuth grant (:mod:`taskcli.agent_login`), for ``agent setup --oauth``.
* ``agent doctor --harness H [--scope S]`` checks each piece and prints the fix for each
  failure (:mod:`taskcore.agentsetup.doctor`); exit status 0 when every check passes
  (warnings allowed), 9 when one fails.
* ``agent headers`` (the MCP headers helper) and ``session-start`` (the SessionStart hook)
  are dispatched by :mod:`taskcli.entry` before click; the commands here only give them a
  place in ``--help``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from taskcore.agentsetup.harness import (
    HARNESSES,
    SCOPES,
    Credential,
    OAuthGrant,
    SetupOptions,
    TaskStopHook,
    TokenFile,
    normalized_url,
)
from taskcore.agentsetup.plan import FileChange, Plan, plan_remove, plan_setup
from taskcore.errors import ErrorCode, TaskError
from taskcore.tokenfile import read_token_file

from taskcli.common import DEFAULT_URL, ServiceClient, emit, json_option, resolve_data_dir, run

__all__ = ["register"]

DOCTOR_FAILED_EXIT = 9
"""``agent doctor``'s exit status when a check failed (no error kind uses it)."""


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise TaskError(
            ErrorCode.INVALID_VALUE, f"{path} cannot be read ({type(err).__name__}); fix it first"
        ) from None


def _write(change: FileChange) -> None:
    """Replace the file atomically (its mode kept), or remove it."""
    path = change.path
    if change.after is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=".agent-task-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(change.after)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _executable() -> str:
    argv0 = Path(sys.argv[0])
    if argv0.name == "agent-task" and argv0.exists():
        return str(argv0.resolve())
    found = shutil.which("agent-task")
    return str(Path(found).resolve()) if found else "agent-task"


_harness = click.option("--harness", type=click.Choice(HARNESSES), required=True)
_project = click.option(
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The project (default: the current directory).",
)


@click.group("agent")
def agent() -> None:
    """Set up a coding agent (Claude Code, Codex) in one command, and check it."""


def _report(plan: Plan, *, dry_run: bool, remove: bool, as_json: bool) -> None:
    changed = plan.changed
    if as_json:
        emit(
            {
                "changed": [
                    {"path": str(f.path), "purpose": f.purpose, "removed": f.after is None}
                    for f in changed
                ],
                "unchanged": [str(f.path) for f in plan.files if not f.changed],
                "dry_run": dry_run,
                "diff": plan.diff(),
                "notes": list(plan.notes),
            },
            True,
        )
        return
    if dry_run:
        click.echo(plan.diff() or "nothing to change", nl=not plan.diff())
        return
    if not changed:
        click.echo("nothing to change: " + ", ".join(str(f.path) for f in plan.files))
        return
    for f in changed:
        verb = "removed" if f.after is None else ("updated" if remove or f.before else "wrote")
        click.echo(f"{verb} {f.path} ({f.purpose})")
    for note in plan.notes:
        click.echo("- " + note)


@agent.command("setup")
@_harness
@click.option(
    "--url",
    envvar="AGENT_TASK_URL",
    default=None,
    help=f"The service's base URL, e.g. {DEFAULT_URL} [env AGENT_TASK_URL].",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="AGENT_TASK_TOKEN_FILE",
    default=None,
    help="The agent's token file, outside the work tree [env AGENT_TASK_TOKEN_FILE]. Only "
    "its path is written; the harness and the hooks read it.",
)
@click.option(
    "--oauth",
    is_flag=True,
    help="Instead of a token file: the harness authorizes itself with OAuth, and the hooks "
    "use the grant of 'agent-task agent login'.",
)
@click.option(
    "--grant-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --oauth: the hooks' grant (default: $AGENT_TASK_GRANT_FILE, else "
    "~/.config/agent-task/grant.json).",
)
@click.option(
    "--share-grant",
    is_flag=True,
    help="With --oauth: the harness connects with the hooks' grant too (headers helper), so "
    "both are one agent and SessionStart sees what the harness claimed; no harness login.",
)
@click.option("--scope", type=click.Choice(SCOPES), required=True)
@_project
@click.option("--dry-run", is_flag=True, help="Print the change as a unified diff; write nothing.")
@click.option("--remove", is_flag=True, help="Take out what setup writes (nothing else).")
@click.option("--change", default=None, help="Also install the task-stop hook of this Change.")
@click.option("--repository", default=None, help="The Change's repository (with --change).")
@click.option("--profile", default=None, help="The Change's profile (with --change).")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The local authority's data dir for task-stop (default $AGENT_TASK_DATA_DIR).",
)
@json_option
def setup_cmd(
    harness: str,
    url: str | None,
    token_file: Path | None,
    oauth: bool,
    grant_file: Path | None,
    share_grant: bool,
    scope: str,
    project_dir: Path | None,
    dry_run: bool,
    remove: bool,
    change: str | None,
    repository: str | None,
    profile: str | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Write the harness's MCP server entry and hooks (done gate, SessionStart, task-stop).

    The done gate (Stop, SubagentStop), the SessionStart hook and, with --change, the
    task-stop hook. Idempotent; every other setting is kept. No secret is written: the
    entries name the token file, or with --oauth no credential at all (the harness
    authorizes itself; the hooks name the grant file of 'agent-task agent login').
    """

    def act() -> Plan:
        project = Path(os.path.abspath(project_dir or Path.cwd()))
        if remove:
            options = SetupOptions(
                harness=harness,
                scope=scope,
                url=url or DEFAULT_URL,  # not written: --remove takes out whatever is there
                credential=TokenFile(Path(os.path.abspath(token_file or "/unused"))),
                project_dir=project,
                executable=_executable(),
            )
            plan = plan_remove(options, _read)
        else:
            if url is None:
                raise TaskError(
                    ErrorCode.BAD_INPUT,
                    f"--url is required: the service's base URL, e.g. {DEFAULT_URL}",
                )
            if (share_grant or grant_file is not None) and not oauth:
                raise TaskError(
                    ErrorCode.BAD_INPUT, "--grant-file and --share-grant go with --oauth"
                )
            if oauth and token_file is not None:
                raise TaskError(ErrorCode.BAD_INPUT, "give --token-file or --oauth, not both")
            if not oauth and token_file is None:
                raise TaskError(
                    ErrorCode.BAD_INPUT,
                    "--token-file is required: the agent's token file, outside the work tree "
                    "('agent-task admin token create --tier agent > FILE' makes one); or "
                    "--oauth, for a harness that authorizes itself",
                )
            task_stop = None
            if change is not None or repository is not None or profile is not None:
                if not (change and repository and profile):
                    raise TaskError(
                        ErrorCode.BAD_INPUT,
                        "the task-stop hook needs --change, --repository and --profile together",
                    )
                task_stop = TaskStopHook(
                    change=change,
                    repository=repository,
                    profile=profile,
                    data_dir=resolve_data_dir(data_dir),
                )
            credential, secret, missing = _credential(token_file, oauth, grant_file, url)
            if isinstance(credential, OAuthGrant) and share_grant:
                credential = OAuthGrant(credential.path, share=True)
            options = SetupOptions(
                harness=harness,
                scope=scope,
                url=url,
                credential=credential,
                project_dir=project,
                executable=_executable(),
                task_stop=task_stop,
            )
            plan = plan_setup(options, _read, secret=secret)
            if missing is not None:
                plan = Plan(files=plan.files, notes=(missing, *plan.notes))
            elif oauth:
                plan = Plan(files=plan.files, notes=(*plan.notes, _grant_note(url, credential)))
        if not dry_run:
            for f in plan.changed:
                _write(f)
        return plan

    plan = run(as_json, act)
    _report(plan, dry_run=dry_run, remove=remove, as_json=as_json)


def _credential(
    token_file: Path | None, oauth: bool, grant_file: Path | None, url: str
) -> tuple[Credential, str | None, str | None]:
    """The credential, its secret if it can be read, and a note when it cannot be yet."""
    if oauth:
        from taskcore.agentsetup.grant import GrantError, default_grant_path, load

        path = Path(os.path.abspath(os.path.expanduser(str(grant_file or default_grant_path()))))
        try:
            grant = load(str(path))
        except GrantError:
            return (
                OAuthGrant(path),
                None,
                f"the hooks' grant {path} does not exist yet: run 'agent-task agent login "
                f"--url {normalized_url(url)} --grant-file {path}' before starting the harness",
            )
        return OAuthGrant(path), str(grant["refreshToken"]), None
    assert token_file is not None
    path = Path(os.path.abspath(os.path.expanduser(str(token_file))))
    try:
        return TokenFile(path), read_token_file(path), None
    except TaskError:
        return (
            TokenFile(path),
            None,
            f"the token file {path} cannot be read yet: put the agent's token "
            "there before starting the harness",
        )


def _grant_note(url: str, credential: Credential) -> str:
    from taskcore.agentsetup.grant import load

    grant = load(str(credential.path))
    if grant["url"].rstrip("/") != normalized_url(url):
        return (
            f"the grant {credential.path} is for {grant['url']}, not {normalized_url(url)}: "
            f"run 'agent-task agent login --url {normalized_url(url)} --grant-file "
            f"{credential.path}'"
        )
    return f"the hooks use the grant {credential.path} (for {grant['url']})"


class _HttpProbe:
    """The doctor's view of the service, over :class:`ServiceClient`."""

    def health(self, url: str) -> Mapping[str, Any]:
        from taskcli.plainhttp import HttpError, PlainHttp

        http = PlainHttp.for_url(url.rstrip("/"), 10.0)
        if http is None:
            import httpx

            try:
                response = httpx.get(url.rstrip("/") + "/v1/hub/health", timeout=10.0)
            except httpx.HTTPError as exc:
                raise TaskError(
                    ErrorCode.SERVICE_UNREACHABLE, f"did not answer ({type(exc).__name__})"
                ) from None
            status, body = response.status_code, response.content
        else:
            try:
                status, body = http.get("/v1/hub/health")
            except HttpError as failure:
                raise TaskError(
                    ErrorCode.SERVICE_UNREACHABLE, f"did not answer ({failure.kind})"
                ) from None
            finally:
                http.close()
        import json

        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if status != 200 or not isinstance(answer, dict) or answer.get("status") != "ok":
            raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, f"health answered HTTP {status}")
        return answer

    def call(self, url: str, token: str, verb: str) -> Mapping[str, Any]:
        client = ServiceClient(url, None, timeout=10.0)
        client.token = token
        answer: Mapping[str, Any] = client.verb(verb, b"{}")
        return answer

    def grant_token(self, path: str, *, force: bool) -> tuple[str, Mapping[str, Any]]:
        from taskcli.agent_grant import grant_token

        token, grant = grant_token(path, 10.0, force=force)
        return token, grant

    def mcp_call(self, url: str, token: str, tool: str) -> Mapping[str, Any]:
        from taskcli.agent_grant import mcp_call

        status, answer = mcp_call(url, token, tool, 10.0)
        if status != 200 or not isinstance(answer, dict):
            raise ValueError(f"HTTP {status}")
        return answer


@agent.command("doctor")
@_harness
@click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default=None,
    help="Which files to check (default: the project's if setup wrote there, else the user's).",
)
@_project
@click.option("--url", default=None, help="The service (default: the one the setup names).")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The token file (default: the one the setup names).",
)
@click.option(
    "--grant-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The hooks' OAuth grant (default: the one the setup names).",
)
@click.option(
    "--codex",
    "codex_bin",
    default=None,
    help="The codex executable to ask about hook trust (default: codex on PATH).",
)
@json_option
def doctor_cmd(
    harness: str,
    scope: str | None,
    project_dir: Path | None,
    url: str | None,
    token_file: Path | None,
    grant_file: Path | None,
    codex_bin: str | None,
    as_json: bool,
) -> None:
    """Check the service, token, MCP entry and hooks; print the fix for each failure.

    Also, for Codex, whether the project and the hooks are trusted; and that the token is in
    no tracked file. Exit status 0 when every check passes (warnings allowed), 9 when one fails.
    """
    from taskcore.agentsetup.doctor import doctor, failed, render

    project = Path(os.path.abspath(project_dir or Path.cwd()))
    checks = run(
        as_json,
        lambda: doctor(
            harness,
            project_dir=project,
            read=_read,
            probe=_HttpProbe(),
            scope=scope,
            url=url.rstrip("/") if url else None,
            token_file=Path(os.path.abspath(token_file)) if token_file else None,
            codex=codex_bin,
            grant_file=Path(os.path.abspath(grant_file)) if grant_file else None,
            grant_probe=_HttpProbe(),
        ),
    )
    if as_json:
        emit(
            {"harness": harness, "ok": not failed(checks), "checks": [c.to_json() for c in checks]},
            True,
        )
    else:
        click.echo(render(harness, checks))
    if failed(checks):
        sys.exit(DOCTOR_FAILED_EXIT)


def _pasteable() -> Any:
    """Standard input, when ``select`` can watch it (a real file descriptor), else ``None``."""
    try:
        sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return sys.stdin


@agent.command("login")
@click.option(
    "--url",
    envvar="AGENT_TASK_URL",
    required=True,
    help=f"The service's base URL, e.g. {DEFAULT_URL} [env AGENT_TASK_URL].",
)
@click.option(
    "--grant-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to keep the grant (default: $AGENT_TASK_GRANT_FILE, else "
    "~/.config/agent-task/grant.json); mode 0600, never in a work tree.",
)
@click.option(
    "--no-browser",
    is_flag=True,
    help="Print the URL only; open no browser. The redirect URL may then be pasted on stdin.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(1, 3600),
    default=600.0,
    show_default=True,
    help="Seconds to wait for the approval.",
)
@json_option
def login_cmd(
    url: str, grant_file: Path | None, no_browser: bool, timeout: float, as_json: bool
) -> None:
    """Give the hooks their own OAuth grant (for 'agent setup --oauth').

    Registers a client at the service, opens the authorization page (approve it on the board,
    or an operator runs 'agent-task admin oauth approve'), receives the code on a loopback
    port of 127.0.0.1, and keeps the tokens in GRANT_FILE (mode 0600). The hooks refresh it.
    """
    from taskcore.agentsetup.grant import default_grant_path
    from taskcore.agentsetup.harness import work_tree_of

    from taskcli.agent_login import eprint, login

    def act() -> dict[str, Any]:
        base = normalized_url(url)
        path = Path(os.path.abspath(os.path.expanduser(str(grant_file or default_grant_path()))))
        tree = work_tree_of(path.parent)
        if tree is not None:
            raise TaskError(
                ErrorCode.INVALID_PATH,
                f"--grant-file {path} is inside the work tree {tree}, where it could be "
                "committed; keep it outside, e.g. ~/.config/agent-task/grant.json",
                path="$.grant_file",
            )
        grant = login(
            base,
            str(path),
            open_browser=not no_browser,
            timeout_s=timeout,
            say=eprint,
            paste=_pasteable() if no_browser else None,
        )
        return {
            "grantFile": str(path),
            "url": grant["url"],
            "clientId": grant["clientId"],
            "scope": grant["scope"],
            "expiresAtMs": grant["expiresAtMs"],
        }

    done = run(as_json, act)
    if as_json:
        emit(done, True)
    else:
        click.echo(
            f"logged in: the grant is in {done['grantFile']} ({done['scope']}); the hooks of "
            "'agent setup --oauth' use it"
        )


@agent.command(
    "headers", context_settings={"ignore_unknown_options": True, "help_option_names": []}
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def headers_cmd(args: tuple[str, ...]) -> None:
    """Print the MCP headers: --token-file FILE or --grant-file GRANT (the harness runs it)."""
    from taskcli.agent_headers import main as headers_main

    sys.exit(headers_main(list(args)))


@click.command(
    "session-start", context_settings={"ignore_unknown_options": True, "help_option_names": []}
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def session_start_cmd(args: tuple[str, ...]) -> None:
    """The SessionStart hook: the leases this agent holds, as the harness's context."""
    from taskcli.session_start import main as hook_main

    sys.exit(hook_main(list(args)))


def register(group: click.Group) -> None:
    """Add ``agent`` and ``session-start``."""
    group.add_command(agent)
    group.add_command(session_start_cmd)
