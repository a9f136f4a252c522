"""What ``agent setup`` writes for each harness and scope: files, the MCP entry, the hooks.

=============  =======  ==================================================  =====================================
harness        scope    MCP server entry                                    hooks
=============  =======  ==================================================  =====================================
claude-code    project  ``<project>/.mcp.json`` ``mcpServers.agent-task``    ``<project>/.claude/settings.json``
claude-code    user     ``~/.claude.json`` ``mcpServers.agent-task``         ``~/.claude/settings.json``
codex          project  ``<project>/.codex/config.toml``                     ``<project>/.codex/hooks.json``
                        ``[mcp_servers.agent-task]``
codex          user     ``~/.codex/config.toml`` ``[mcp_servers.agent-task]`` ``~/.codex/hooks.json``
=============  =======  ==================================================  =====================================

(``$CLAUDE_CONFIG_DIR`` and ``$CODEX_HOME`` move the user files as the harnesses do.)

**The token is never written.** With ``--token-file F`` the MCP entry names a *headers
helper*, a command the harness runs before it connects (Claude Code's ``headersHelper``,
Codex's ``http_headers_helper``): ``agent-task agent headers --token-file F`` prints
``{"Authorization": "Bearer ..."}`` from the token file, which must lie outside the work tree.
The hooks name the same file (:class:`TokenFile`).

With ``--oauth`` (:class:`OAuthGrant`) the entry is the URL alone: the harness runs the MCP
OAuth flow itself (Claude Code: ``/mcp`` -> authenticate, or ``claude mcp login agent-task``;
Codex: ``codex mcp login agent-task``) and keeps its tokens in its own store, which nothing of
ours reads. The hooks use the command line's own grant instead, the file ``agent-task agent
login`` writes (:mod:`taskcore.agentsetup.grant`, mode 0600 under the user's config dir):
``--grant-file G``, refreshed when stale.

Leases belong to the credential that claimed them (a grant's id is its actor's token id), so
the harness's grant and the hooks' grant are two agents to the service: the SessionStart hook
does not see what the harness claimed. ``--oauth --share-grant`` makes them one: the entry
names the headers helper with the grant (``agent headers --grant-file G``) and the harness
runs no OAuth flow of its own.

**The hooks** (a handler group each, ``{"hooks": [{"type": "command", "command": ...,
"timeout": N}]}``, the same shape in both harnesses' files):

* ``Stop``: the done gate, ``agent-task gate-stop --harness H`` (what ``gate install``
  writes);
* ``SubagentStop``: the done gate for a subagent's stop, ``... --subagent``;
* ``SessionStart``: ``agent-task session-start --harness H --url URL --token-file F`` (or
  ``--grant-file G``; every source: startup, resume, clear, compact);
* ``Stop``: with a Change, the task-stop hook (``task-stop`` / ``task-codex-stop``, what
  ``install-stop`` writes).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import attrs

from taskcore import paths
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    GATE_HOOK_TIMEOUT_SECONDS,
    QUALIFICATION_TIMEOUT_SECONDS,
    SESSION_START_TIMEOUT_SECONDS,
)

__all__ = [
    "CLAUDE_CODE",
    "CODEX",
    "HARNESSES",
    "SCOPES",
    "SERVER_NAME",
    "Credential",
    "Hook",
    "OAuthGrant",
    "SetupOptions",
    "TaskStopHook",
    "TokenFile",
    "harness_login",
    "hook_credential_args",
    "hooks",
    "hooks_path",
    "is_ours",
    "mcp_auth",
    "mcp_path",
    "mcp_url",
    "normalized_url",
    "work_tree_of",
]

CLAUDE_CODE = "claude-code"
CODEX = "codex"
HARNESSES = (CLAUDE_CODE, CODEX)
SCOPES = ("project", "user")
SERVER_NAME = "agent-task"
"""The MCP server's name in every harness (its tools: ``mcp__agent-task__<tool>``)."""

_HOOK_SUBCOMMANDS = ("gate-stop", "session-start", "task-stop", "task-codex-stop")


@attrs.frozen
class TokenFile:
    """The agent's bearer token, in a file outside the work tree (read only by our commands)."""

    path: Path


@attrs.frozen
class OAuthGrant:
    """``--oauth``: the harness authorizes itself; the hooks use ``agent login``'s grant file.

    ``share`` (``--share-grant``): the harness connects with the same grant, through the
    headers helper (``agent headers --grant-file G``), and runs no OAuth flow of its own.
    Leases are held by the grant that claimed them, so only then does the SessionStart hook
    see the leases the harness claimed.
    """

    path: Path
    share: bool = False


Credential = TokenFile | OAuthGrant
"""How the harness and the hooks authenticate."""


@attrs.frozen(kw_only=True)
class TaskStopHook:
    """The task-stop hook of one Change (``install-stop``'s options)."""

    change: str
    repository: str
    profile: str
    data_dir: Path


@attrs.frozen(kw_only=True)
class SetupOptions:
    """Everything ``agent setup`` needs to say what to write."""

    harness: str
    scope: str
    url: str
    credential: Credential
    project_dir: Path
    executable: str
    task_stop: TaskStopHook | None = None

    def __attrs_post_init__(self) -> None:
        if self.harness not in HARNESSES:
            raise TaskError(ErrorCode.INVALID_VALUE, "--harness must be claude-code or codex")
        if self.scope not in SCOPES:
            raise TaskError(ErrorCode.INVALID_VALUE, "--scope must be project or user")
        if isinstance(self.credential, OAuthGrant) and self.task_stop is not None:
            raise TaskError(
                ErrorCode.BAD_INPUT,
                "the task-stop hook reads a token file: with --oauth, install it on its own "
                "('agent-task install-stop CHANGE ... --token-file F'), or use --token-file here",
            )


@attrs.frozen(kw_only=True)
class Hook:
    """One handler to install: its event, its command line and its timeout (seconds)."""

    event: str
    role: str
    command: str
    timeout: int


def normalized_url(url: str) -> str:
    """The service's base URL without a trailing slash; ``INVALID_VALUE`` unless http(s).

    >>> normalized_url("http://127.0.0.1:8787/")
    'http://127.0.0.1:8787'
    >>> normalized_url("ftp://x")
    Traceback (most recent call last):
    taskcore.errors.TaskError: --url must be http://HOST[:PORT][/PATH] or https://...: 'ftp://x' at $.url
    """
    text = url.strip().rstrip("/")
    scheme, sep, rest = text.partition("://")
    host = rest.split("/", 1)[0]
    if (
        scheme not in ("http", "https")
        or not sep
        or not host
        or any(c.isspace() or c in "\"'\\?#" for c in text)
    ):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"--url must be http://HOST[:PORT][/PATH] or https://...: {url[:200]!r}",
            path="$.url",
        )
    return text


def mcp_url(url: str) -> str:
    """The queue MCP endpoint of the service at ``url``.

    >>> mcp_url("http://127.0.0.1:8787")
    'http://127.0.0.1:8787/mcp'
    """
    return normalized_url(url) + "/mcp"


def mcp_path(harness: str, scope: str, project_dir: Path) -> Path:
    """The file holding the MCP server entry."""
    if harness == CLAUDE_CODE:
        if scope == "project":
            return project_dir / ".mcp.json"
        # Claude Code keeps user-scope MCP servers in its global config file:
        # $CLAUDE_CONFIG_DIR/.claude.json, else ~/.claude.json.
        base = os.environ.get("CLAUDE_CONFIG_DIR", "").strip() or os.path.expanduser("~")
        return Path(base) / ".claude.json"
    if scope == "project":
        return project_dir / ".codex" / "config.toml"
    return Path(paths.codex_home()) / "config.toml"


def hooks_path(harness: str, scope: str, project_dir: Path) -> Path:
    """The file holding the hooks (what ``gate install`` writes too)."""
    if harness == CLAUDE_CODE:
        if scope == "project":
            return project_dir / ".claude" / "settings.json"
        return Path(paths.claude_config_dir()) / "settings.json"
    if scope == "project":
        return project_dir / ".codex" / "hooks.json"
    return Path(paths.codex_home()) / "hooks.json"


def _helper(executable: str, credential: Credential) -> str:
    option = "--grant-file" if isinstance(credential, OAuthGrant) else "--token-file"
    return shlex.join([executable, "agent", "headers", option, str(credential.path)])


def mcp_auth(harness: str, executable: str, credential: Credential) -> dict[str, str]:
    """The entry's authentication: the headers helper, under each harness's key.

    With an :class:`OAuthGrant` nothing: the harness finds the authorization server from the
    endpoint's 401 and authorizes itself.

    >>> mcp_auth("codex", "/bin/agent-task", TokenFile(Path("/t/agent.token")))
    {'http_headers_helper': '/bin/agent-task agent headers --token-file /t/agent.token'}
    >>> mcp_auth("claude-code", "/bin/agent-task", OAuthGrant(Path("/h/grant.json")))
    {}
    >>> mcp_auth("claude-code", "/bin/agent-task", OAuthGrant(Path("/h/g.json"), share=True))
    {'headersHelper': '/bin/agent-task agent headers --grant-file /h/g.json'}
    """
    if isinstance(credential, OAuthGrant) and not credential.share:
        return {}
    key = "headersHelper" if harness == CLAUDE_CODE else "http_headers_helper"
    return {key: _helper(executable, credential)}


def hook_credential_args(credential: Credential) -> list[str]:
    """The command-line arguments naming the credential of the SessionStart hook.

    >>> hook_credential_args(OAuthGrant(Path("/h/grant.json")))
    ['--grant-file', '/h/grant.json']
    """
    if isinstance(credential, OAuthGrant):
        return ["--grant-file", str(credential.path)]
    return ["--token-file", str(credential.path)]


def harness_login(harness: str) -> str:
    """The harness's own OAuth step after ``agent setup --oauth`` (what to tell the user).

    >>> harness_login("codex")
    'codex mcp login agent-task'
    """
    if harness == CLAUDE_CODE:
        return "claude mcp login agent-task"
    return "codex mcp login agent-task"


def hooks(options: SetupOptions) -> tuple[Hook, ...]:
    """The handlers ``agent setup`` installs for ``options``, in file order."""
    from taskcore.donegate.installer import hook_command

    h, exe = options.harness, options.executable
    out = [
        Hook(
            event="Stop",
            role="gate-stop",
            command=hook_command(h, exe),
            timeout=GATE_HOOK_TIMEOUT_SECONDS,
        ),
        Hook(
            event="SubagentStop",
            role="gate-stop",
            command=hook_command(h, exe, subagent=True),
            timeout=GATE_HOOK_TIMEOUT_SECONDS,
        ),
        Hook(
            event="SessionStart",
            role="session-start",
            command=shlex.join(
                [
                    exe,
                    "session-start",
                    "--harness",
                    h,
                    "--url",
                    normalized_url(options.url),
                    *hook_credential_args(options.credential),
                ]
            ),
            timeout=SESSION_START_TIMEOUT_SECONDS,
        ),
    ]
    if options.task_stop is not None:
        from taskcore.collector.stophook import HOOK_COMMANDS, hook_command_line

        ts = options.task_stop
        out.append(
            Hook(
                event="Stop",
                role=HOOK_COMMANDS[h],
                command=hook_command_line(
                    h,
                    executable=exe,
                    change=ts.change,
                    endpoint=normalized_url(options.url),
                    repository=ts.repository,
                    profile=ts.profile,
                    token_file=options.credential.path,
                    workspace=options.project_dir,
                    data_dir=ts.data_dir,
                ),
                timeout=QUALIFICATION_TIMEOUT_SECONDS * 2,
            )
        )
    return tuple(out)


def is_ours(command: object, role: str, harness: str, event: str) -> bool:
    """Whether a handler's ``command`` is the one ``role`` installs for ``harness`` at ``event``.

    A command is ours when it runs an ``agent-task`` executable with our hook subcommand (the
    path may differ: a moved virtual environment is still ours). ``gate-stop`` also matches
    on ``--harness`` and on ``--subagent`` being there exactly for ``SubagentStop``.

    >>> is_ours("/v/bin/agent-task gate-stop --harness codex", "gate-stop", "codex", "Stop")
    True
    >>> is_ours("agent-task gate-stop --harness codex --subagent", "gate-stop", "codex", "Stop")
    False
    >>> is_ours("my-linter --fix", "gate-stop", "codex", "Stop")
    False
    """
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    if len(argv) < 2 or os.path.basename(argv[0]) != "agent-task" or argv[1] != role:
        return False
    if role not in _HOOK_SUBCOMMANDS:
        return False
    if role in ("gate-stop", "session-start"):
        rest = argv[2:]
        harness_given = rest[rest.index("--harness") + 1] if "--harness" in rest[:-1] else None
        if role == "session-start":
            return harness_given in (None, harness)
        return harness_given == harness and ("--subagent" in rest) == (event == "SubagentStop")
    return True


def work_tree_of(path: Path) -> Path | None:
    """The git work tree ``path`` lies in: the nearest directory holding ``.git`` (or ``None``).

    Only the file system is consulted (no git command).
    """
    probe = Path(os.path.abspath(path))
    for candidate in (probe, *probe.parents):
        if (candidate / ".git").exists():
            return candidate
    return None
