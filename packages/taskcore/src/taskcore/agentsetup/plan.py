"""The whole of an ``agent setup`` (or ``--remove``) as old and new file texts, and its diff.

:func:`plan_setup` and :func:`plan_remove` are pure: they get the current text of each file
through ``read`` (``None`` for a missing file) and return a :class:`Plan`, the files with
their text before and after. ``agent-task agent setup`` prints :meth:`Plan.diff` with
``--dry-run`` and otherwise writes each changed file (atomically, keeping its mode). A
second run plans no change at all.

Guarantees checked here, before anything is written:

* the token never appears in a file: the entries name the token *file* (or, with
  ``--oauth``, name no credential at all and the hooks name the grant file), which must lie
  outside the work tree (``INVALID_PATH``), and every new text is searched for the token
  itself (``secret``) as a last check;
* only what ``agent setup`` owns changes: the ``agent-task`` MCP server entry (in Codex, its
  transport keys) and our hook handlers; every other key, hook, comment and table stays.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path

import attrs

from taskcore.agentsetup import jsonedit, tomledit
from taskcore.agentsetup.harness import (
    CLAUDE_CODE,
    SERVER_NAME,
    Hook,
    OAuthGrant,
    SetupOptions,
    harness_login,
    hooks,
    hooks_path,
    is_ours,
    mcp_auth,
    mcp_path,
    mcp_url,
    work_tree_of,
)
from taskcore.errors import ErrorCode, TaskError

__all__ = ["EVENTS", "FileChange", "Plan", "Reader", "plan_remove", "plan_setup"]

Reader = Callable[[Path], "str | None"]
"""The current text of a file, or ``None`` when it does not exist."""

EVENTS = ("Stop", "SubagentStop", "SessionStart")
"""The hook events ``agent setup`` writes to (and ``--remove`` cleans)."""

_ROLES = {
    "Stop": ("gate-stop", "task-stop", "task-codex-stop"),
    "SubagentStop": ("gate-stop",),
    "SessionStart": ("session-start",),
}


@attrs.frozen(kw_only=True)
class FileChange:
    """One file: what it is for, its text before (``None``: absent) and after (``None``: gone)."""

    path: Path
    purpose: str
    before: str | None
    after: str | None
    in_work_tree: bool

    @property
    def changed(self) -> bool:
        """Whether the file's text changes."""
        return self.before != self.after

    def diff(self) -> str:
        """The change as a unified diff (empty when nothing changes)."""
        if not self.changed:
            return ""
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        for lines in (old, new):
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n\\ No newline at end of file\n"
        return "".join(
            difflib.unified_diff(
                old,
                new,
                fromfile="/dev/null" if self.before is None else f"a{self.path}",
                tofile="/dev/null" if self.after is None else f"b{self.path}",
            )
        )


@attrs.frozen(kw_only=True)
class Plan:
    """The files ``agent setup`` looked at, and what to tell the user afterwards."""

    files: tuple[FileChange, ...]
    notes: tuple[str, ...] = ()

    @property
    def changed(self) -> tuple[FileChange, ...]:
        """The files whose text changes."""
        return tuple(f for f in self.files if f.changed)

    def diff(self) -> str:
        """Every change as one unified diff (empty: nothing to do)."""
        return "".join(f.diff() for f in self.files)


def _inside(path: Path, tree: Path | None) -> bool:
    if tree is None:
        return False
    try:
        return path.resolve().is_relative_to(tree.resolve())
    except OSError:
        return False


def _name(path: Path) -> str:
    return str(path)[-200:]


def _mcp_change(
    options: SetupOptions, read: Reader, *, remove: bool
) -> tuple[Path, str | None, str | None]:
    path = mcp_path(options.harness, options.scope, options.project_dir)
    before = read(path)
    if options.harness == CLAUDE_CODE:
        data = jsonedit.load(before, _name(path))
        keys = ("mcpServers", SERVER_NAME)
        if remove:
            changed = jsonedit.remove_key(data, keys, _name(path))
        else:
            entry = {
                "type": "http",
                "url": mcp_url(options.url),
                **mcp_auth(options.harness, options.executable, options.credential),
            }
            changed = jsonedit.set_key(data, keys, entry, _name(path))
        after = before if not changed else _json_after(data, before, path, options)
        return path, before, after
    keys = ("mcp_servers", SERVER_NAME)
    if remove:
        after_toml = tomledit.remove_table(before, keys, name=_name(path))
    else:
        values = {
            "url": mcp_url(options.url),
            **mcp_auth(options.harness, options.executable, options.credential),
        }
        after_toml = tomledit.set_table(before, keys, values, name=_name(path))
    if after_toml == (before or ""):
        return path, before, before
    return path, before, after_toml if after_toml.strip() or options.scope == "user" else None


def _json_after(
    data: dict[str, object], before: str | None, path: Path, options: SetupOptions
) -> str | None:
    """The new text; a project file we leave holding nothing is removed."""
    if not data and options.scope == "project":
        return None
    return jsonedit.dump(data, like=before)


def _hooks_change(
    options: SetupOptions, read: Reader, wanted: tuple[Hook, ...], *, remove: bool
) -> tuple[Path, str | None, str | None]:
    path = hooks_path(options.harness, options.scope, options.project_dir)
    before = read(path)
    data = jsonedit.load(before, _name(path))
    changed = False
    for event in EVENTS:
        for role in _ROLES[event]:
            mine = [h for h in wanted if h.event == event and h.role == role]

            def ours(command: object, role: str = role, event: str = event) -> bool:
                return is_ours(command, role, options.harness, event)

            if mine:
                hook = mine[0]
                changed |= jsonedit.add_handler(
                    data, event, hook.command, hook.timeout, ours, _name(path)
                )
            elif remove:  # a setup without --change leaves an installed task-stop hook alone
                changed |= jsonedit.remove_handlers(data, event, ours, _name(path))
    after = before if not changed else _json_after(data, before, path, options)
    return path, before, after


def _notes(options: SetupOptions, files: tuple[FileChange, ...]) -> tuple[str, ...]:
    notes = []
    oauth = isinstance(options.credential, OAuthGrant)
    one_grant = isinstance(options.credential, OAuthGrant) and options.credential.share
    kept = (
        f"the hooks' OAuth grant stays in {options.credential.path}"
        if oauth
        else f"the token stays in {options.credential.path}"
    )
    shared = [f for f in files if f.in_work_tree and f.after is not None]
    if shared and options.scope == "project":
        names = ", ".join(os.path.relpath(f.path, options.project_dir) for f in shared)
        if options.task_stop is not None:
            notes.append(
                f"commit {names}: task-stop passes only on a clean work tree (they hold no "
                f"secret: {kept})"
            )
        else:
            notes.append(
                f"commit {names} or list them in .git/info/exclude: they hold no secret ("
                f"{kept}) but name this machine's agent-task and "
                + ("grant file" if oauth else "token file")
            )
    if one_grant:
        notes.append(
            f"{options.harness} connects with the grant {options.credential.path} through the "
            "headers helper (no harness login): the harness and the hooks are one agent"
        )
    elif oauth:
        notes.append(
            "the harness and the hooks hold two grants: the leases the harness claims are "
            "its grant's, which the SessionStart hook does not see (--share-grant makes them one)"
        )
        notes.append(
            f"the MCP entry has no credential: authorize {options.harness} itself with "
            f"'{harness_login(options.harness)}'"
            + (
                " (or /mcp -> agent-task -> Authenticate in a session)"
                if options.harness == CLAUDE_CODE
                else " (add --oauth-client-registration dcr if the service cannot reach chatgpt.com)"
            )
        )
    elif options.harness == CLAUDE_CODE and options.scope == "project":
        notes.append(
            "Claude Code runs the MCP headers helper of a project's .mcp.json only in a "
            "trusted folder: start claude in the project once and accept its trust dialog "
            "(and the agent-task server if it asks)"
        )
    if options.harness != CLAUDE_CODE:
        notes.append(
            "Codex runs a new or changed hook only after you review and trust it: open /hooks "
            "in Codex, or see 'agent-task agent doctor --harness codex' for the exact lines"
        )
        if options.scope == "project":
            notes.append(
                "Codex reads a project's .codex/ only in a trusted project: trust "
                f"{options.project_dir} when Codex asks ('agent-task agent doctor' checks it)"
            )
    notes.append("check every piece with: agent-task agent doctor --harness " + options.harness)
    return tuple(notes)


def plan_setup(options: SetupOptions, read: Reader, *, secret: str | None = None) -> Plan:
    """What ``agent setup`` writes for ``options``: the MCP entry and the hooks.

    ``secret`` is the token itself (read from the token file by the caller; with ``--oauth``
    the grant's refresh token): no new text may contain it. ``INVALID_PATH`` when the token
    or grant file lies inside the work tree.
    """
    tree = work_tree_of(options.project_dir)
    token_path = options.credential.path
    option, field, example = (
        ("--grant-file", "$.grant_file", "~/.config/agent-task/grant.json")
        if isinstance(options.credential, OAuthGrant)
        else ("--token-file", "$.token_file", "~/.config/agent-task/agent.token")
    )
    if not token_path.is_absolute():
        raise TaskError(ErrorCode.INVALID_PATH, f"{option} must be an absolute path", path=field)
    if _inside(token_path, tree) or _inside(token_path, options.project_dir):
        raise TaskError(
            ErrorCode.INVALID_PATH,
            f"{option} is inside the work tree, where it would be committed; keep it "
            f"outside, e.g. {example}",
            path=field,
        )
    files = _files(options, read, hooks(options), remove=False, tree=tree)
    if secret:
        for f in files:
            if f.after is not None and secret in f.after:
                raise TaskError(
                    ErrorCode.INVALID_VALUE,
                    f"the token would be written into {f.path}; nothing was changed",
                )
    return Plan(files=files, notes=_notes(options, files))


def plan_remove(options: SetupOptions, read: Reader) -> Plan:
    """What ``agent setup --remove`` changes: our MCP entry and our hooks go, nothing else."""
    tree = work_tree_of(options.project_dir)
    return Plan(files=_files(options, read, (), remove=True, tree=tree))


def _files(
    options: SetupOptions,
    read: Reader,
    wanted: tuple[Hook, ...],
    *,
    remove: bool,
    tree: Path | None,
) -> tuple[FileChange, ...]:
    out = []
    path, before, after = _mcp_change(options, read, remove=remove)
    out.append(
        FileChange(
            path=path,
            purpose=f"the MCP server entry '{SERVER_NAME}'",
            before=before,
            after=after,
            in_work_tree=_inside(path, tree),
        )
    )
    path, before, after = _hooks_change(options, read, wanted, remove=remove)
    out.append(
        FileChange(
            path=path,
            purpose="the hooks: " + ", ".join(sorted({h.event for h in wanted}) or EVENTS),
            before=before,
            after=after,
            in_work_tree=_inside(path, tree),
        )
    )
    return tuple(out)
