r"""Edits of a JSON settings file's text that keep every other setting as it was.

The harnesses' JSON files (``.mcp.json``, ``~/.claude.json``, ``settings.json``,
``hooks.json``) are read whole, changed in the few places ``agent setup`` owns, and written
back with the file's own indentation and key order; an edit that changes nothing gives the
very same text back (so a second run writes nothing). A file that is not a JSON object is
refused before anything is changed.

>>> text = '{\n    "model": "x"\n}\n'
>>> data = load(text, "settings.json")
>>> set_key(data, ("mcpServers", "agent-task"), {"type": "http"})
True
>>> print(dump(data, like=text), end="")
{
    "model": "x",
    "mcpServers": {
        "agent-task": {
            "type": "http"
        }
    }
}
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from taskcore.errors import ErrorCode, TaskError

__all__ = [
    "add_handler",
    "dump",
    "get_key",
    "handlers",
    "load",
    "remove_handlers",
    "remove_key",
    "set_key",
]

Ours = Callable[[object], bool]
"""Whether a handler's ``command`` is one ``agent setup`` owns (for one role and event)."""


def load(text: str | None, name: str) -> dict[str, Any]:
    """The file's object (``{}`` for a missing or empty file); ``INVALID_VALUE`` otherwise."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"{name} is not valid JSON; fix it (or move it aside) first: nothing was changed",
        ) from None
    if not isinstance(data, dict):
        raise TaskError(
            ErrorCode.INVALID_VALUE, f"{name} is not a JSON object: nothing was changed"
        )
    return data


def _indent(like: str | None) -> int | str:
    """The indentation ``like`` uses (its first indented line), else 2 spaces."""
    for line in (like or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return len(lead) if set(lead) == {" "} else lead
    return 2


def dump(data: dict[str, Any], *, like: str | None = None) -> str:
    """``data`` as the file's text, indented as ``like`` was, ending in a newline."""
    return json.dumps(data, indent=_indent(like), ensure_ascii=False) + "\n"


def _object_at(data: dict[str, Any], keys: Sequence[str], name: str) -> dict[str, Any] | None:
    """The object at ``keys`` (``None`` if a key is missing); ``INVALID_VALUE`` if not objects."""
    node: Any = data
    for i, key in enumerate(keys):
        node = node.get(key)
        if node is None:
            return None
        if not isinstance(node, dict):
            where = ".".join(keys[: i + 1])
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                f"'{where}' in {name} is not an object: nothing was changed",
            )
    result: dict[str, Any] = node
    return result


def get_key(data: dict[str, Any], keys: Sequence[str], name: str = "the file") -> Any:
    """The value at ``keys`` (``None`` when absent)."""
    parent = _object_at(data, keys[:-1], name)
    return None if parent is None else parent.get(keys[-1])


def set_key(data: dict[str, Any], keys: Sequence[str], value: Any, name: str = "the file") -> bool:
    """Put ``value`` at ``keys`` (creating objects on the way); whether anything changed."""
    node = data
    for i, key in enumerate(keys[:-1]):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            where = ".".join(keys[: i + 1])
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                f"'{where}' in {name} is not an object: nothing was changed",
            )
        node = child
    if node.get(keys[-1]) == value and keys[-1] in node:
        return False
    node[keys[-1]] = value
    return True


def remove_key(data: dict[str, Any], keys: Sequence[str], name: str = "the file") -> bool:
    """Delete the value at ``keys`` and the objects it leaves empty; whether it was there."""
    parent = _object_at(data, keys[:-1], name)
    if parent is None or keys[-1] not in parent:
        return False
    del parent[keys[-1]]
    for depth in range(len(keys) - 1, 0, -1):
        holder = _object_at(data, keys[: depth - 1], name)
        if holder is not None and holder.get(keys[depth - 1]) == {}:
            del holder[keys[depth - 1]]
    return True


def _groups(data: dict[str, Any], event: str, name: str) -> list[Any] | None:
    hooks = data.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise TaskError(
            ErrorCode.INVALID_VALUE, f"'hooks' in {name} is not an object: nothing was changed"
        )
    groups = hooks.get(event)
    if groups is not None and not isinstance(groups, list):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"'hooks.{event}' in {name} is not a list: nothing was changed",
        )
    return groups


def handlers(data: dict[str, Any], event: str, ours: Ours, name: str = "the file") -> list[Any]:
    """Our handlers at ``event`` (the handler objects themselves), in file order."""
    out = []
    for group in _groups(data, event, name) or []:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            out += [h for h in group["hooks"] if isinstance(h, dict) and ours(h.get("command"))]
    return out


def remove_handlers(
    data: dict[str, Any], event: str, ours: Ours, name: str = "the file", *, keep: int = 0
) -> bool:
    """Remove our handlers at ``event`` but the first ``keep``; drop what that empties."""
    groups = _groups(data, event, name)
    if not groups:
        return False
    seen, changed, kept_groups = 0, False, []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            kept = []
            for handler in group["hooks"]:
                if isinstance(handler, dict) and ours(handler.get("command")):
                    seen += 1
                    if seen > keep:
                        changed = True
                        continue
                kept.append(handler)
            if not kept and group["hooks"]:
                continue
            group["hooks"] = kept
        kept_groups.append(group)
    if not changed:
        return False
    hooks = data["hooks"]
    if kept_groups:
        hooks[event] = kept_groups
    else:
        del hooks[event]
    if not hooks:
        del data["hooks"]
    return True


def add_handler(
    data: dict[str, Any],
    event: str,
    command: str,
    timeout: int,
    ours: Ours,
    name: str = "the file",
) -> bool:
    """Make ``command`` our one handler at ``event``; whether anything changed.

    Our handler already there is updated in place (its group and position kept, which is
    what Codex keys its trust by); a second one of ours is removed; with none, a new group
    is appended. Every other handler and key is left as it was.
    """
    found = handlers(data, event, ours, name)
    changed = remove_handlers(data, event, ours, name, keep=1)
    if found:
        handler = found[0]
        if handler.get("command") == command and handler.get("timeout") == timeout:
            return changed
        handler.update({"type": "command", "command": command, "timeout": timeout})
        return True
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise TaskError(
            ErrorCode.INVALID_VALUE, f"'hooks' in {name} is not an object: nothing was changed"
        )
    hooks.setdefault(event, []).append(
        {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}
    )
    return True
