"""``agent doctor``'s checks of an ``agent setup --oauth``: the hooks' grant, refreshed and asked.

In place of the token checks when the SessionStart hook names ``--grant-file``:

* **grant**: the file of ``agent-task agent login`` exists, is a grant, is readable by its owner
  only (mode 0600), lies outside the work tree and is for the service the setup names;
* **refresh**: the refresh token still works (one refresh at the token endpoint: the refresh
  token rotates, under the grant's lock, as a hook would);
* **token**: ``observe_whoami`` over MCP with the new access token: its workspace, tier and
  autonomy (above ``agent`` is a warning);
* **leases**: ``agenttask_leases`` over MCP answers (what the SessionStart hook asks).

Each failure's fix is the ``agent login`` line. The harness's own OAuth tokens are in its store,
which is not read; for Codex, :func:`codex_login_check` asks Codex itself
(``codex mcp list --json``: the server's ``auth_status``) whether it has logged in.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from taskcore.agentsetup.grant import GrantError, load
from taskcore.agentsetup.harness import SERVER_NAME, harness_login, work_tree_of

__all__ = ["GrantProbe", "codex_login_check", "grant_checks", "login_fix"]


class GrantProbe(Protocol):
    """The grant's HTTP side, as the command line implements it."""

    def grant_token(self, path: str, *, force: bool) -> tuple[str, Mapping[str, Any]]:
        """The grant's access token (refreshed when stale or ``force``); ``GrantError``."""
        ...

    def mcp_call(self, url: str, token: str, tool: str) -> Mapping[str, Any]:
        """One ``tools/call`` at ``<url>/mcp``; ``ValueError`` names a refusal."""
        ...


def login_fix(url: str | None, path: str) -> str:
    """The command that makes (or remakes) the grant.

    >>> login_fix("http://h:1", "/g.json")
    'agent-task agent login --url http://h:1 --grant-file /g.json'
    """
    return f"agent-task agent login --url {url or 'URL'} --grant-file {path}"


def grant_checks(
    checks: list[Any],
    make: Any,
    probe: GrantProbe | None,
    url: str,
    path: str,
    project_dir: Path,
) -> str | None:
    """Append the grant's checks (``make(name, status, detail, fix)`` builds one).

    ``probe`` is ``None`` when the service did not answer: only the file is checked.
    Returns the grant's refresh token (for the secrets check), or ``None`` when unreadable.
    """
    fix = login_fix(url, path)
    try:
        grant = load(path)
    except GrantError as err:
        checks.append(make("grant", "fail", str(err), fix))
        return None
    problems = []
    mode = os.stat(path).st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        problems.append(f"others may read it (mode {stat.S_IMODE(mode):o}): chmod 600 {path}")
    tree = work_tree_of(project_dir)
    if tree is not None and Path(path).resolve().is_relative_to(tree.resolve()):
        problems.append(
            f"it is inside the work tree {tree}: log in again with a --grant-file outside"
        )
    if grant["url"].rstrip("/") != url.rstrip("/"):
        problems.append(f"it is for {grant['url']}, not {url}")
    if problems:
        checks.append(make("grant", "fail", f"{path}: " + "; ".join(problems), fix))
    else:
        checks.append(
            make(
                "grant", "pass", f"{path}: client {grant['clientId'][:40]}, {grant['scope']}", None
            )
        )
    if probe is None:  # the service did not answer (its check says so)
        checks.append(make("refresh", "warn", "not checked: the service did not answer", None))
        return str(grant["refreshToken"])
    try:
        token, renewed = probe.grant_token(path, force=True)
        checks.append(make("refresh", "pass", f"refreshed at {grant['tokenEndpoint'][:200]}", None))
    except (GrantError, OSError) as err:
        checks.append(make("refresh", "fail", str(err)[:300], fix))
        return str(grant["refreshToken"])
    try:
        who = probe.mcp_call(url, token, "observe_whoami")
    except (ValueError, OSError) as err:
        checks.append(make("token", "fail", f"observe_whoami over MCP was refused ({err})", fix))
        return str(renewed["refreshToken"])
    tier = who.get("tier")
    detail = (
        f"OAuth grant {who.get('tokenId')} ('{who.get('name')}'), workspace "
        f"{who.get('workspace')}, {tier} tier, autonomy {who.get('autonomy')}"
    )
    if tier == "agent":
        checks.append(make("token", "pass", detail, None))
    else:
        checks.append(
            make(
                "token",
                "warn",
                detail + ": more than an agent needs",
                "revoke it (agent-task admin oauth revoke GRANT) and log in again, approving "
                "the agent tier: " + fix,
            )
        )
    try:
        held = probe.mcp_call(url, token, "agenttask_leases")
        count = len(held.get("leases") or [])
        checks.append(make("leases", "pass", f"agenttask_leases answers: {count} held", None))
    except (ValueError, OSError) as err:
        checks.append(
            make(
                "leases",
                "fail",
                f"agenttask_leases over MCP was refused ({err})",
                "upgrade the service (agenttask_leases is new) or approve the agent tier",
            )
        )
    return str(renewed["refreshToken"])


def codex_login_check(
    make: Any, codex: str | None, cwd: Path, env: Mapping[str, str] | None
) -> Any:
    """The ``codex login`` check of an ``--oauth`` setup where Codex authorizes itself.

    ``codex mcp list --json`` says, per server, ``auth_status``: ``o_auth`` once logged in,
    ``not_logged_in`` before. Codex's own answer; its credential store is not read.
    """
    fix = harness_login("codex") + " (add --oauth-client-registration dcr if the service "
    fix += "cannot fetch Codex's client metadata document)"
    if codex is None:
        return make("codex login", "warn", "cannot ask Codex: codex is not on PATH", fix)
    try:
        done = subprocess.run(  # noqa: S603 - the codex executable the user named, fixed argv
            [codex, "mcp", "list", "--json"],
            cwd=cwd,
            env=dict(env) if env is not None else dict(os.environ),
            capture_output=True,
            timeout=60,
            check=False,
        )
        listed = json.loads(done.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return make("codex login", "warn", "'codex mcp list --json' did not answer", fix)
    mine = [s for s in listed if isinstance(s, dict) and s.get("name") == SERVER_NAME]
    status = mine[0].get("auth_status") if mine else None
    if status == "o_auth":
        return make("codex login", "pass", f"Codex has logged in to '{SERVER_NAME}'", None)
    if status == "not_logged_in":
        return make(
            "codex login",
            "fail",
            f"Codex has not logged in to '{SERVER_NAME}': it lists none of our tools",
            fix,
        )
    return make("codex login", "warn", f"Codex says auth_status {str(status)[:40]!r}", fix)
