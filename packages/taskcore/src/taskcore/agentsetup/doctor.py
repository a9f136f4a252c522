"""``agent-task agent doctor``: check every piece ``agent setup`` put in place, with the fix.

Checks, in order (each ``pass``, ``warn`` or ``fail``, with what was seen and, unless it
passed, the exact fix):

1. **setup**: the MCP server entry and our hooks in the harness's files (``--scope``, or the
   project's files first, then the user's);
2. **service**: ``GET /v1/hub/health`` at the URL the entry names;
3. **token**: the token file (outside the work tree, readable), and ``observe.whoami`` with
   it: valid, its workspace, tier and autonomy (a tier above ``agent`` is a warning: an agent
   needs no more); with ``--oauth`` the grant of ``agent login`` instead, present, private,
   refreshable, and its tier (:mod:`~taskcore.agentsetup.grantcheck`);
4. **leases**: ``agenttask.leases`` answers (what the SessionStart hook asks);
5. **mcp entry**: type, URL and the headers helper with the same token file (with ``--oauth``:
   no helper; the harness authorizes itself);
6. **hooks**: Stop (done gate), SubagentStop (done gate), SessionStart, each registered with
   an executable that exists;
7. Codex only: **project trust** (a project's ``.codex/`` is read only in a trusted project)
   and **hook trust** (``codex app-server``'s ``hooks/list``: untrusted hooks are skipped in
   silence), with the exact lines that trust them; with ``--oauth``, **codex login** (Codex's
   own ``auth_status``);
8. **secrets**: the token (with ``--oauth``: the grant's refresh token) in no tracked file of the work tree (``git grep`` with the pattern
   read from a private file, never from the command line) and in none of the harness files.

The service is reached through :class:`Probe`, which the command line implements over HTTP
(taskcore speaks no HTTP). :func:`doctor` returns the checks; :func:`render` prints them.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs

from taskcore.agentsetup import jsonedit
from taskcore.agentsetup.grantcheck import GrantProbe, codex_login_check, grant_checks
from taskcore.agentsetup.harness import (
    CLAUDE_CODE,
    CODEX,
    SCOPES,
    SERVER_NAME,
    harness_login,
    hooks_path,
    is_ours,
    mcp_path,
    work_tree_of,
)
from taskcore.agentsetup.plan import Reader
from taskcore.errors import ErrorCode, TaskError
from taskcore.paths import codex_home

__all__ = ["Check", "Probe", "doctor", "failed", "render"]

PASS, WARN, FAIL = "pass", "warn", "fail"


@attrs.frozen(kw_only=True)
class Check:
    """One check: its name, its outcome, what was seen, and how to fix it."""

    name: str
    status: str
    detail: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The check for ``--json``."""
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


class Probe(Protocol):
    """The service as the doctor reaches it (HTTP, in the command line)."""

    def health(self, url: str) -> Mapping[str, Any]:
        """``GET /v1/hub/health``; a ``TaskError`` when it does not answer ``ok``."""
        ...

    def call(self, url: str, token: str, verb: str) -> Mapping[str, Any]:
        """``POST /v/<verb> {}`` with the bearer token; a ``TaskError`` for a refusal."""
        ...


@attrs.frozen(kw_only=True)
class _Found:
    scope: str
    mcp_file: Path
    entry: Any
    hooks_file: Path
    hooks_data: dict[str, Any]


def failed(checks: list[Check]) -> bool:
    """Whether any check failed (``agent doctor`` then exits 9)."""
    return any(c.status == FAIL for c in checks)


def _mcp_entry(harness: str, path: Path, read: Reader) -> Any:
    text = read(path)
    if harness == CLAUDE_CODE:
        data = jsonedit.load(text, str(path))
        return jsonedit.get_key(data, ("mcpServers", SERVER_NAME), str(path))
    try:
        doc = tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        raise TaskError(ErrorCode.INVALID_VALUE, f"{path} is not valid TOML") from None
    servers = doc.get("mcp_servers")
    return servers.get(SERVER_NAME) if isinstance(servers, dict) else None


def _find(harness: str, scope: str | None, project_dir: Path, read: Reader) -> _Found:
    candidates = [scope] if scope else list(SCOPES)
    found = []
    for s in candidates:
        mcp_file = mcp_path(harness, s, project_dir)
        hooks_file = hooks_path(harness, s, project_dir)
        entry = _mcp_entry(harness, mcp_file, read)
        data = jsonedit.load(read(hooks_file), str(hooks_file))
        found.append(
            _Found(scope=s, mcp_file=mcp_file, entry=entry, hooks_file=hooks_file, hooks_data=data)
        )
        if entry is not None or _our_hooks(harness, data):
            return found[-1]
    return found[0]


def _our_hooks(harness: str, data: dict[str, Any]) -> dict[str, list[Any]]:
    wanted = {
        "Stop": "gate-stop",
        "SubagentStop": "gate-stop",
        "SessionStart": "session-start",
    }
    out = {}
    for event, role in wanted.items():

        def ours(command: object, role: str = role, event: str = event) -> bool:
            return is_ours(command, role, harness, event)

        out[event] = jsonedit.handlers(data, event, ours)
    return {k: v for k, v in out.items() if v}


def _option(command: str, name: str) -> str | None:
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def _setup_fix(
    harness: str,
    scope: str,
    url: str | None,
    token_file: str | None,
    grant: str | None = None,
    *,
    share: bool = False,
) -> str:
    credential = (
        ["--oauth", "--grant-file", grant, *(["--share-grant"] if share else [])]
        if grant is not None
        else ["--token-file", token_file or "TOKEN_FILE"]
    )
    return shlex.join(
        [
            "agent-task",
            "agent",
            "setup",
            "--harness",
            harness,
            "--scope",
            scope,
            "--url",
            url or "URL",
            *credential,
        ]
    )


def _helper_of(harness: str, entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return None
    helper = entry.get("headersHelper" if harness == CLAUDE_CODE else "http_headers_helper")
    return helper if isinstance(helper, str) else None


def doctor(
    harness: str,
    *,
    project_dir: Path,
    read: Reader,
    probe: Probe,
    scope: str | None = None,
    url: str | None = None,
    token_file: Path | None = None,
    codex: str | None = None,
    env: Mapping[str, str] | None = None,
    grant_file: Path | None = None,
    grant_probe: GrantProbe | None = None,
) -> list[Check]:
    """Run every check for ``harness``; see the module docstring for the list.

    The setup is ``--oauth`` when its SessionStart hook names ``--grant-file`` (or
    ``grant_file`` is given); ``grant_probe`` then refreshes the grant and asks over MCP.
    """
    checks: list[Check] = []
    try:
        found = _find(harness, scope, project_dir, read)
    except TaskError as err:
        return [Check(name="setup", status=FAIL, detail=err.message, fix="fix the file by hand")]
    ours = _our_hooks(harness, found.hooks_data)
    starts = ours.get("SessionStart", [])
    start_cmd = starts[0].get("command") if starts else None
    helper = _helper_of(harness, found.entry)
    entry_url = found.entry.get("url") if isinstance(found.entry, dict) else None
    url = (
        url
        or (_option(start_cmd, "--url") if isinstance(start_cmd, str) else None)
        or (
            entry_url[: -len("/mcp")]
            if isinstance(entry_url, str) and entry_url.endswith("/mcp")
            else None
        )
    )
    token_text = (
        str(token_file)
        if token_file is not None
        else (_option(helper, "--token-file") if helper else None)
        or (_option(start_cmd, "--token-file") if isinstance(start_cmd, str) else None)
    )
    grant_text = (
        str(grant_file)
        if grant_file is not None
        else (_option(start_cmd, "--grant-file") if isinstance(start_cmd, str) else None)
    )
    if grant_text is not None:
        token_text = None
    fix_setup = _setup_fix(
        harness,
        found.scope,
        url,
        token_text,
        grant_text,
        share=helper is not None and _option(helper, "--grant-file") is not None,
    )
    where = f"{found.scope} scope: {found.mcp_file}, {found.hooks_file}"
    if found.entry is None and not ours:
        checks.append(
            Check(
                name="setup", status=FAIL, detail=f"nothing of agent-task in {where}", fix=fix_setup
            )
        )
    else:
        checks.append(Check(name="setup", status=PASS, detail=where))
    if grant_text is None:
        token = _service_checks(checks, probe, url, token_text, project_dir, fix_setup)
    elif url is None:
        token = None
        checks.append(
            Check(name="service", status=FAIL, detail="no service URL in the setup", fix=fix_setup)
        )
    else:
        reachable = _health(checks, probe, url)
        token = grant_checks(
            checks, _make, grant_probe if reachable else None, url, grant_text, project_dir
        )
    _entry_check(
        checks,
        harness,
        found,
        url,
        token_text,
        fix_setup,
        oauth=grant_text is not None,
        grant_text=grant_text,
    )
    _hook_checks(checks, harness, ours, url, token_text, fix_setup, grant_text)
    if harness == CODEX:
        _codex_checks(checks, found, project_dir, codex, env)
        if grant_text is not None and helper is None:
            checks.append(
                codex_login_check(
                    _make, codex or shutil.which("codex"), _project_root(project_dir), env
                )
            )
    elif found.scope == "project":
        _claude_trust(checks, project_dir, read, oauth=grant_text is not None)
    if token is not None:
        _secret_checks(checks, harness, project_dir, token, read, found)
    return checks


def _make(name: str, status: str, detail: str, fix: str | None) -> Check:
    return Check(name=name, status=status, detail=detail, fix=fix)


def _health(checks: list[Check], probe: Probe, url: str) -> bool:
    try:
        health = probe.health(url)
    except TaskError as err:
        checks.append(
            Check(
                name="service",
                status=FAIL,
                detail=f"{url}: {err.message}",
                fix="start it ('agent-task serve') or give the right --url to 'agent setup'",
            )
        )
        return False
    checks.append(
        Check(name="service", status=PASS, detail=f"{url} answers ({health.get('backend', '?')})")
    )
    return True


def _service_checks(
    checks: list[Check],
    probe: Probe,
    url: str | None,
    token_text: str | None,
    project_dir: Path,
    fix_setup: str,
) -> str | None:
    if url is None:
        checks.append(
            Check(name="service", status=FAIL, detail="no service URL in the setup", fix=fix_setup)
        )
        return None
    if not _health(checks, probe, url):
        return None
    if token_text is None:
        checks.append(
            Check(name="token", status=FAIL, detail="no token file in the setup", fix=fix_setup)
        )
        return None
    path = Path(token_text)
    tree = work_tree_of(project_dir)
    if tree is not None and path.resolve().is_relative_to(tree.resolve()):
        checks.append(
            Check(
                name="token",
                status=FAIL,
                detail=f"the token file {path} is inside the work tree {tree}",
                fix="move it outside (e.g. ~/.config/agent-task/agent.token) and run setup again",
            )
        )
    from taskcore.tokenfile import read_token_file

    try:
        token = read_token_file(path)
    except TaskError as err:
        checks.append(
            Check(
                name="token",
                status=FAIL,
                detail=err.message,
                fix=f"agent-task admin token create --workspace W --tier agent > {path}",
            )
        )
        return None
    try:
        who = probe.call(url, token, "observe.whoami")
    except TaskError as err:
        checks.append(
            Check(
                name="token",
                status=FAIL,
                detail=f"the service refused the token of {path} ({err.code.value})",
                fix=f"ask an operator for a new one: agent-task admin token create --workspace W "
                f"--tier agent > {path}",
            )
        )
        return token
    tier = who.get("tier")
    detail = (
        f"{tier} token '{who.get('name')}' ({who.get('tokenId')}), workspace "
        f"{who.get('workspace')}, autonomy {who.get('autonomy')}"
    )
    if tier == "agent":
        checks.append(Check(name="token", status=PASS, detail=detail))
    else:
        checks.append(
            Check(
                name="token",
                status=WARN,
                detail=detail + ": more than an agent needs",
                fix="give the agent a token of its own: agent-task admin token create "
                f"--workspace {who.get('workspace')} --tier agent > {path}",
            )
        )
    try:
        held = probe.call(url, token, "agenttask.leases")
        count = len(held.get("leases") or [])
        checks.append(
            Check(name="leases", status=PASS, detail=f"agenttask.leases answers: {count} held")
        )
    except TaskError as err:
        checks.append(
            Check(
                name="leases",
                status=FAIL,
                detail=f"agenttask.leases was refused ({err.code.value}): {err.message}",
                fix="upgrade the service (agenttask.leases is new) or use an agent token",
            )
        )
    return token


def _entry_check(
    checks: list[Check],
    harness: str,
    found: _Found,
    url: str | None,
    token_text: str | None,
    fix_setup: str,
    *,
    oauth: bool = False,
    grant_text: str | None = None,
) -> None:
    entry = found.entry
    if not isinstance(entry, dict):
        checks.append(
            Check(
                name="mcp entry",
                status=FAIL,
                detail=f"no '{SERVER_NAME}' MCP server in {found.mcp_file}",
                fix=fix_setup,
            )
        )
        return
    problems = []
    if harness == CLAUDE_CODE and entry.get("type") != "http":
        problems.append(f"type is {entry.get('type')!r}, not 'http'")
    if url is not None and entry.get("url") != url + "/mcp":
        problems.append(f"url is {entry.get('url')!r}, not {url + '/mcp'!r}")
    helper = _helper_of(harness, entry)
    if oauth:
        helper_grant = _option(helper, "--grant-file") if helper is not None else None
        if helper_grant is not None and grant_text is not None and helper_grant != grant_text:
            problems.append(f"its helper reads another grant: {helper_grant}")
        elif (
            (helper is not None and helper_grant is None)
            or "headers" in entry
            or "bearer_token_env_var" in entry
        ):
            problems.append("it names a token: with --oauth the harness authorizes itself")
    elif helper is None:
        problems.append("no headers helper (the token would have to be in the file or the env)")
    elif token_text is not None and _option(helper, "--token-file") != token_text:
        problems.append(f"its helper reads another token file: {_option(helper, '--token-file')}")
    elif helper and not _executable_ok(helper):
        problems.append(f"its helper's executable is missing: {helper.split()[0]}")
    if problems:
        checks.append(
            Check(name="mcp entry", status=FAIL, detail="; ".join(problems), fix=fix_setup)
        )
    elif oauth and helper is not None:
        checks.append(
            Check(
                name="mcp entry",
                status=PASS,
                detail=f"{found.mcp_file}: {entry.get('url')}, with the hooks' grant (one agent)",
            )
        )
    elif oauth:
        checks.append(
            Check(
                name="mcp entry",
                status=PASS,
                detail=f"{found.mcp_file}: {entry.get('url')}, OAuth by the harness (its tokens "
                f"are its own: if our tools are missing, run '{harness_login(harness)}')",
            )
        )
    else:
        checks.append(
            Check(name="mcp entry", status=PASS, detail=f"{found.mcp_file}: {entry.get('url')}")
        )


def _executable_ok(command: str) -> bool:
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    if not argv:
        return False
    exe = argv[0]
    resolved = exe if os.path.sep in exe else shutil.which(exe)
    return resolved is not None and os.access(resolved, os.X_OK)


def _hook_checks(
    checks: list[Check],
    harness: str,
    ours: dict[str, list[Any]],
    url: str | None,
    token_text: str | None,
    fix_setup: str,
    grant_text: str | None = None,
) -> None:
    for event, what in (
        ("Stop", "the done gate"),
        ("SubagentStop", "the done gate for subagents"),
        ("SessionStart", "the leases at every session start"),
    ):
        handlers = ours.get(event, [])
        name = f"hook {event}"
        if not handlers:
            checks.append(
                Check(name=name, status=FAIL, detail=f"{what}: not registered", fix=fix_setup)
            )
            continue
        command = str(handlers[0].get("command"))
        if not _executable_ok(command):
            checks.append(
                Check(
                    name=name,
                    status=FAIL,
                    detail=f"its executable is missing: {command.split()[0]}",
                    fix=fix_setup,
                )
            )
        elif event == "SessionStart" and (
            (url is not None and _option(command, "--url") != url)
            or (token_text is not None and _option(command, "--token-file") != token_text)
            or (grant_text is not None and _option(command, "--grant-file") != grant_text)
        ):
            checks.append(
                Check(
                    name=name,
                    status=FAIL,
                    detail="it asks another service or token than the MCP entry",
                    fix=fix_setup,
                )
            )
        else:
            checks.append(Check(name=name, status=PASS, detail=f"{what}: {command}"))


def _claude_trust(
    checks: list[Check], project_dir: Path, read: Reader, *, oauth: bool = False
) -> None:
    """Claude Code runs a project's ``headersHelper`` only in a folder whose trust was accepted.

    (And uses a project's ``.mcp.json`` servers at all, OAuth ones included, only there.)
    """
    config = mcp_path(CLAUDE_CODE, "user", project_dir)
    try:
        projects = jsonedit.load(read(config), str(config)).get("projects")
    except TaskError:
        projects = None
    projects = projects if isinstance(projects, dict) else {}
    here = Path(os.path.abspath(project_dir))
    for folder in (here, *here.parents):
        entry = projects.get(str(folder))
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            checks.append(Check(name="folder trust", status=PASS, detail=f"{folder} is trusted"))
            return
    checks.append(
        Check(
            name="folder trust",
            status=FAIL,
            detail=(
                f"Claude Code uses the MCP servers of {here}/.mcp.json"
                if oauth
                else f"Claude Code runs the MCP headers helper of {here}/.mcp.json"
            )
            + " only once the folder's trust dialog was accepted",
            fix=f"start claude in {here} once and accept 'trust this folder' (headless runs: "
            f'set projects["{here}"].hasTrustDialogAccepted to true in {config})',
        )
    )


def _project_root(project_dir: Path) -> Path:
    return work_tree_of(project_dir) or project_dir


def _codex_checks(
    checks: list[Check],
    found: _Found,
    project_dir: Path,
    codex: str | None,
    env: Mapping[str, str] | None,
) -> None:
    config = Path(codex_home()) / "config.toml"
    if found.scope == "project":
        root = _project_root(project_dir)
        try:
            projects = tomllib.loads(config.read_text(encoding="utf-8")).get("projects", {})
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            projects = {}
        keys = {str(root), str(root.resolve()), str(project_dir), str(project_dir.resolve())}
        trusted = any(
            isinstance(projects.get(k), dict) and projects[k].get("trust_level") == "trusted"
            for k in keys
        )
        if trusted:
            checks.append(Check(name="project trust", status=PASS, detail=f"{root} is trusted"))
        else:
            checks.append(
                Check(
                    name="project trust",
                    status=FAIL,
                    detail=f"Codex ignores {root}/.codex/ until the project is trusted",
                    fix=f"start codex in {root} and trust it when asked, or add to {config}:\n"
                    f'[projects."{root}"]\ntrust_level = "trusted"',
                )
            )
    _hook_trust(checks, found, project_dir, codex, env, config)


def _hook_trust(
    checks: list[Check],
    found: _Found,
    project_dir: Path,
    codex: str | None,
    env: Mapping[str, str] | None,
    config: Path,
) -> None:
    from taskcore.agentsetup.codexhooks import list_hooks, trust_lines

    binary = codex or shutil.which("codex")
    if binary is None:
        checks.append(
            Check(
                name="hook trust",
                status=WARN,
                detail="cannot ask Codex which hooks it trusts: codex is not on PATH",
                fix="run again with --codex PATH, or review the hooks in Codex's /hooks",
            )
        )
        return
    try:
        listed = list_hooks(binary, _project_root(project_dir), env=env)
    except TaskError as err:
        checks.append(
            Check(
                name="hook trust",
                status=WARN,
                detail=err.message,
                fix="review the hooks in Codex's /hooks",
            )
        )
        return
    hooks_file = str(found.hooks_file.resolve())
    mine = [
        h
        for h in listed
        if str(h.get("sourcePath")) in (hooks_file, str(found.hooks_file))
        and any(
            is_ours(h.get("command"), role, CODEX, event)
            for role, event in (
                ("gate-stop", "Stop"),
                ("gate-stop", "SubagentStop"),
                ("session-start", "SessionStart"),
            )
        )
    ]
    if not mine:
        checks.append(
            Check(
                name="hook trust",
                status=FAIL,
                detail=f"Codex lists none of our hooks from {found.hooks_file}",
                fix="check the project trust above, then run 'agent-task agent setup' again",
            )
        )
        return
    untrusted = [h for h in mine if h.get("trustStatus") not in ("trusted", "managed")]
    if not untrusted:
        checks.append(
            Check(
                name="hook trust", status=PASS, detail=f"Codex trusts all {len(mine)} of our hooks"
            )
        )
        return
    states = ", ".join(f"{h.get('eventName')} {h.get('trustStatus')}" for h in untrusted)
    checks.append(
        Check(
            name="hook trust",
            status=FAIL,
            detail=f"Codex skips untrusted hooks in silence: {states}",
            fix="open /hooks in Codex and trust the agent-task hooks, or add to "
            f"{config}:\n{trust_lines(untrusted).rstrip()}",
        )
    )


def _tracked_with(tree: Path, token: str) -> list[str]:
    """Tracked files of ``tree`` holding ``token`` (git grep; the pattern read from a file)."""
    with tempfile.TemporaryDirectory(prefix="agent-task-doctor-") as private:
        pattern = Path(private) / "pattern"
        fd = os.open(pattern, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(token + "\n")
        try:
            done = subprocess.run(  # noqa: S603 - fixed argv; the token is not on it
                # the git on PATH, as every git read of the command line
                ["git", "-C", str(tree), "grep", "-F", "-l", "-I", "-z", "-f", str(pattern)],  # noqa: S607
                capture_output=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return []
    if done.returncode != 0:
        return []
    return [p for p in done.stdout.decode("utf-8", "replace").split("\0") if p]


def _secret_checks(
    checks: list[Check],
    harness: str,
    project_dir: Path,
    token: str,
    read: Reader,
    found: _Found,
) -> None:
    tree = work_tree_of(project_dir)
    leaks = _tracked_with(tree, token) if tree is not None else []
    harness_files = {found.mcp_file, found.hooks_file}
    for scope in SCOPES:
        harness_files |= {
            mcp_path(harness, scope, project_dir),
            hooks_path(harness, scope, project_dir),
        }
    outside = sorted(str(p) for p in harness_files if token in (read(p) or ""))
    if leaks:
        checks.append(
            Check(
                name="secrets",
                status=FAIL,
                detail="the token is in tracked files: " + ", ".join(leaks[:10]),
                fix="remove it from those files (and their history), then revoke it "
                "(agent-task admin token revoke) and give the agent a new one",
            )
        )
    elif outside:
        checks.append(
            Check(
                name="secrets",
                status=WARN,
                detail="the token is written in " + ", ".join(outside),
                fix="remove it there and run 'agent-task agent setup' (its entries read the "
                "token file through a helper)",
            )
        )
    else:
        checks.append(
            Check(
                name="secrets",
                status=PASS,
                detail="the token is in no tracked file" if tree else "no work tree to scan",
            )
        )


def render(harness: str, checks: list[Check]) -> str:
    """The checks for people: one line each, the fix indented under a failure or warning."""
    lines = [f"agent-task agent doctor: {harness}"]
    width = max(len(c.name) for c in checks)
    for c in checks:
        lines.append(f"  {c.status:<4}  {c.name:<{width}}  {c.detail}")
        if c.fix and c.status != PASS:
            for n, part in enumerate(c.fix.splitlines()):
                lines.append(f"        {'fix: ' if n == 0 else '     '}{part}")
    verdict = "FAIL" if failed(checks) else "ok"
    lines.append(f"{verdict}: {sum(c.status == PASS for c in checks)} of {len(checks)} passed")
    return "\n".join(lines)
