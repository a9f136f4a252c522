"""``agent-task gate install|uninstall``: write (or remove) the Stop hook in a settings file.

Nothing installs the gate except this explicit command. The files are the harnesses' own:

=============  =======  ===================================================================
harness        scope    file
=============  =======  ===================================================================
claude-code    user     ``~/.claude/settings.json`` (``$CLAUDE_CONFIG_DIR/settings.json``)
claude-code    project  ``<project>/.claude/settings.json``
codex          user     ``~/.codex/hooks.json`` (``$CODEX_HOME/hooks.json``)
codex          project  ``<project>/.codex/hooks.json``
=============  =======  ===================================================================

Both take ``{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": ..., "timeout":
30}]}]}}``. ``--subagent`` adds the same under ``SubagentStop`` (with ``--subagent`` on the
command). Install is idempotent and keeps every other key and hook; uninstall removes only
handlers whose command is ``agent-task gate-stop --harness <harness>`` and the groups or keys
that become empty because of it. The file is replaced atomically.

>>> import tempfile, pathlib, json
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> r = install("codex", "project", project_dir=d, executable="/opt/bin/agent-task")
>>> json.loads(r.path.read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
'/opt/bin/agent-task gate-stop --harness codex'
>>> uninstall("codex", "project", project_dir=d).changed
True
>>> json.loads(r.path.read_text())
{}
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
from pathlib import Path
from typing import Any

import attrs

from taskcore import paths
from taskcore.donegate.config import CLAUDE_CODE, HARNESSES
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import GATE_HOOK_TIMEOUT_SECONDS

__all__ = ["InstallResult", "hook_command", "install", "settings_path", "uninstall"]

_OURS = re.compile(
    r"agent-task['\"]?\s+gate-stop\s+--harness\s+(claude-code|codex)"
    r"(\s+--subagent)?\s*$"
)


@attrs.frozen(kw_only=True)
class InstallResult:
    """What an install or uninstall did."""

    path: Path
    changed: bool
    events: tuple[str, ...]


def settings_path(harness: str, scope: str, *, project_dir: Path | None = None) -> Path:
    """The settings file of ``harness`` at ``scope`` (``user`` or ``project``)."""
    if harness not in HARNESSES:
        raise TaskError(ErrorCode.INVALID_VALUE, "harness must be claude-code or codex")
    if scope not in ("user", "project"):
        raise TaskError(ErrorCode.INVALID_VALUE, "scope must be user or project")
    if scope == "project":
        base = Path(project_dir or Path.cwd())
        return base / (".claude/settings.json" if harness == CLAUDE_CODE else ".codex/hooks.json")
    if harness == CLAUDE_CODE:
        return Path(paths.claude_config_dir()) / "settings.json"
    return Path(paths.codex_home()) / "hooks.json"


def hook_command(harness: str, executable: str, *, subagent: bool = False) -> str:
    """The command line the harness runs.

    >>> hook_command("claude-code", "/u/my bin/agent-task", subagent=True)
    "'/u/my bin/agent-task' gate-stop --harness claude-code --subagent"
    """
    cmd = f"{shlex.quote(executable)} gate-stop --harness {harness}"
    return cmd + " --subagent" if subagent else cmd


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise TaskError(
            ErrorCode.INVALID_VALUE, f"{path} cannot be read; fix it by hand first"
        ) from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"{path} is not valid JSON; fix it by hand first, nothing was changed",
        ) from None
    if not isinstance(data, dict):
        raise TaskError(
            ErrorCode.INVALID_VALUE, f"{path} is not a JSON object; nothing was changed"
        )
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise TaskError(
            ErrorCode.INVALID_VALUE, f"'hooks' in {path} is not an object; nothing was changed"
        )
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=".agent-task-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _is_ours(handler: Any, harness: str) -> bool:
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    m = _OURS.search(handler["command"])
    return m is not None and m.group(1) == harness


def install(
    harness: str,
    scope: str,
    *,
    project_dir: Path | None = None,
    executable: str,
    subagent: bool = False,
) -> InstallResult:
    """Add the gate's Stop (and optionally SubagentStop) hook; idempotent."""
    path = settings_path(harness, scope, project_dir=project_dir)
    data = _load(path)
    hooks = data.setdefault("hooks", {})
    events = [("Stop", False)] + ([("SubagentStop", True)] if subagent else [])
    changed = False
    for event, sub in events:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                f"'hooks.{event}' in {path} is not a list; nothing was changed",
            )
        command = hook_command(harness, executable, subagent=sub)
        present = any(
            isinstance(g, dict)
            and any(isinstance(h, dict) and h.get("command") == command for h in g.get("hooks", []))
            for g in groups
        )
        if present:
            continue
        groups.append(
            {
                "hooks": [
                    {"type": "command", "command": command, "timeout": GATE_HOOK_TIMEOUT_SECONDS}
                ]
            }
        )
        changed = True
    if changed:
        _save(path, data)
    return InstallResult(path=path, changed=changed, events=tuple(e for e, _ in events))


def uninstall(harness: str, scope: str, *, project_dir: Path | None = None) -> InstallResult:
    """Remove only the handlers this installer writes (and what becomes empty)."""
    path = settings_path(harness, scope, project_dir=project_dir)
    data = _load(path)
    hooks = data.get("hooks")
    removed: list[str] = []
    if isinstance(hooks, dict):
        for event in ("Stop", "SubagentStop"):
            groups = hooks.get(event)
            if not isinstance(groups, list):
                continue
            kept_groups = []
            touched = False
            for g in groups:
                if isinstance(g, dict) and isinstance(g.get("hooks"), list):
                    kept = [h for h in g["hooks"] if not _is_ours(h, harness)]
                    if len(kept) != len(g["hooks"]):
                        touched = True
                        if not kept:
                            continue
                        g = {**g, "hooks": kept}
                kept_groups.append(g)
            if not touched:
                continue
            removed.append(event)
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
        if removed and not hooks:
            del data["hooks"]
    if removed:
        _save(path, data)
    return InstallResult(path=path, changed=bool(removed), events=tuple(dict.fromkeys(removed)))
