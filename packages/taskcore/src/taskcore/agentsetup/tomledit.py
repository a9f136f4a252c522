r"""Edits of one table of a TOML file that keep every other byte of the file as it was.

Codex's ``config.toml`` is the user's: comments, order, spacing and every other table stay.
``agent setup`` owns one table, ``[mcp_servers.agent-task]``, and in it only its transport
keys (:data:`TRANSPORT_KEYS`); other keys of that table (``enabled``, ``startup_timeout_sec``,
tool approvals) and its sub-tables are the user's too.

The edit works on lines: it finds the table's header (and sub-table headers) outside strings
and multi-line values, replaces or inserts the ``key = value`` lines it owns, or cuts the
table out. Then it *checks itself*: the new text must parse (``tomllib``) to exactly the old
document with only the intended change; anything else (a table spelled as an inline table or
dotted keys, a multi-line value where a key it owns is) is refused with what to do by hand,
and nothing is written.

>>> before = '# mine\nmodel = "o3"\n\n[mcp_servers.agent-task]\nurl = "http://old/mcp"\nenabled = true\n'
>>> after = set_table(before, ("mcp_servers", "agent-task"), {"url": "http://new/mcp"})
>>> print(after, end="")
# mine
model = "o3"
<BLANKLINE>
[mcp_servers.agent-task]
url = "http://new/mcp"
enabled = true
>>> print(remove_table(after, ("mcp_servers", "agent-task")), end="")
# mine
model = "o3"
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from taskcore.errors import ErrorCode, TaskError

__all__ = ["TRANSPORT_KEYS", "basic_string", "get_table", "remove_table", "set_table"]

TRANSPORT_KEYS = frozenset(
    {
        "url",
        "command",
        "args",
        "bearer_token",
        "bearer_token_env_var",
        "http_headers",
        "env_http_headers",
        "http_headers_helper",
    }
)
"""The keys of a Codex MCP server table that say how to reach and authenticate it."""


def basic_string(value: str) -> str:
    r"""``value`` as a TOML basic string.

    >>> basic_string('a "b" \\ c\n')
    '"a \\"b\\" \\\\ c\\n"'
    """
    out = ['"']
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _parse(text: str, name: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"{name} is not valid TOML ({err}); fix it first: nothing was changed",
        ) from None


def _line_states(lines: Sequence[str]) -> list[bool]:
    """For each line: whether it starts outside every string and bracketed value."""
    out = []
    depth, string = 0, ""  # string: the open multi-line delimiter, if any
    for line in lines:
        out.append(depth == 0 and not string)
        i = 0
        while i < len(line):
            if string:
                if string == '"""' and line[i] == "\\":
                    i += 2
                    continue
                if line.startswith(string, i):
                    string = ""
                    i += 3
                    continue
                i += 1
                continue
            ch = line[i]
            if ch == "#":
                break
            if line.startswith('"""', i) or line.startswith("'''", i):
                string = line[i : i + 3]
                i += 3
                continue
            if ch in "\"'":
                end = i + 1
                while end < len(line) and line[end] != ch:
                    end += 2 if ch == '"' and line[end] == "\\" else 1
                i = end + 1
                continue
            if ch in "[{" and not (depth == 0 and ch == "[" and not line[:i].strip()):
                depth += 1
            elif ch in "]}" and depth > 0:
                depth -= 1
            i += 1
    return out


def _header_path(line: str) -> tuple[tuple[str, ...], bool] | None:
    """``(key path, is array of tables)`` of a header line, else ``None``."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    try:
        node: Any = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None
    keys: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        key, node = next(iter(node.items()))
        keys.append(key)
        if isinstance(node, list):
            return tuple(keys), True
    return (tuple(keys), False) if keys and node == {} else None


def _headers(lines: Sequence[str]) -> list[tuple[int, tuple[str, ...]]]:
    starts = _line_states(lines)
    out = []
    for i, line in enumerate(lines):
        if starts[i] and line.lstrip().startswith("["):
            parsed = _header_path(line)
            if parsed is not None:
                out.append((i, parsed[0]))
    return out


def _block_end(lines: Sequence[str], start: int, stop: int) -> int:
    """One past the last line of the block at ``start`` that is not blank or a comment."""
    end = start + 1
    for i in range(start + 1, stop):
        text = lines[i].strip()
        if text and not text.startswith("#"):
            end = i + 1
    return end


def get_table(text: str | None, keys: Sequence[str], name: str = "config.toml") -> Any:
    """The table at ``keys`` as ``tomllib`` reads it (``None`` when absent)."""
    node: Any = _parse(text or "", name)
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _expected(before: dict[str, Any], keys: Sequence[str], table: Any) -> dict[str, Any]:
    doc = copy.deepcopy(before)
    node = doc
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    if table is None:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = table
    return doc


def _same(after: dict[str, Any], expected: dict[str, Any], keys: Sequence[str]) -> bool:
    def pruned(doc: dict[str, Any]) -> dict[str, Any]:
        doc = copy.deepcopy(doc)
        parent = doc.get(keys[0])
        if len(keys) == 2 and isinstance(parent, dict) and not parent:
            del doc[keys[0]]  # an empty [mcp_servers] and none at all read the same
        return doc

    return pruned(after) == pruned(expected)


def _checked(result: str, expected: dict[str, Any], keys: Sequence[str]) -> bool:
    """Whether the edited text parses to exactly the intended document."""
    try:
        return _same(tomllib.loads(result), expected, keys)
    except tomllib.TOMLDecodeError:
        return False


def _refuse(name: str, keys: Sequence[str]) -> TaskError:
    table = ".".join(keys)
    return TaskError(
        ErrorCode.INVALID_VALUE,
        f"{name}: [{table}] is written in a form this edit does not change safely (an inline "
        f"table, dotted keys, or a multi-line value); remove [{table}] by hand and run again: "
        "nothing was changed",
    )


def set_table(
    text: str | None,
    keys: Sequence[str],
    values: Mapping[str, str],
    *,
    owned: frozenset[str] = TRANSPORT_KEYS,
    name: str = "config.toml",
) -> str:
    """``text`` with the table at ``keys`` holding ``values`` and nothing else changed.

    The ``owned`` keys not in ``values`` are removed; every other key, table and comment is
    kept. Returns ``text`` itself when nothing changes.
    """
    text = text or ""
    before = _parse(text, name)
    old = get_table(text, keys, name)
    if old is not None and not isinstance(old, dict):
        raise _refuse(name, keys)
    table = {k: v for k, v in (old or {}).items() if k not in owned}
    table.update(values)
    expected = _expected(before, keys, table)
    if old is not None and _same(before, expected, keys):
        return text
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    new_lines = [f"{k} = {basic_string(v)}\n" for k, v in values.items()]
    headers = _headers(lines)
    ours = [i for i, path in headers if path == tuple(keys)]
    if not ours:
        if old is not None:
            raise _refuse(name, keys)  # defined without a header of its own
        header = "[" + ".".join(_key(k) for k in keys) + "]\n"
        sep = ["\n"] if lines and lines[-1].strip() else []
        result = "".join([*lines, *sep, header, *new_lines])
    else:
        start = ours[0]
        stop = next((i for i, _ in headers if i > start), len(lines))
        starts = _line_states(lines)
        body: list[str] = []
        placed = False
        for i in range(start + 1, stop):
            owned_key = starts[i] and _line_key(lines[i]) in owned
            if owned_key:
                if not placed:
                    body += new_lines
                    placed = True
                continue
            body.append(lines[i])
        if not placed:
            body = new_lines + body
        result = "".join([*lines[: start + 1], *body, *lines[stop:]])
    if not _checked(result, expected, keys):
        raise _refuse(name, keys)
    return result


def _key(key: str) -> str:
    bare = key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else basic_string(key)


def _line_key(line: str) -> str | None:
    """The top key of a one-line ``key = value`` (``None`` for anything else)."""
    stripped = line.strip()
    if not stripped or stripped.startswith(("#", "[")):
        return None
    try:
        parsed = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None
    return next(iter(parsed)) if len(parsed) == 1 else None


def remove_table(text: str | None, keys: Sequence[str], *, name: str = "config.toml") -> str:
    """``text`` without the table at ``keys`` and its sub-tables; ``text`` itself if absent."""
    text = text or ""
    before = _parse(text, name)
    if get_table(text, keys, name) is None:
        return text
    lines = text.splitlines(keepends=True)
    headers = _headers(lines)
    cut: set[int] = set()
    for n, (start, path) in enumerate(headers):
        if tuple(path[: len(keys)]) != tuple(keys):
            continue
        stop = headers[n + 1][0] if n + 1 < len(headers) else len(lines)
        end = _block_end(lines, start, stop)
        cut.update(range(start, end))
        # the blank line that separated the table from what came before goes with it
        if (
            start > 0
            and not lines[start - 1].strip()
            and (end >= len(lines) or not lines[end].strip())
        ):
            cut.add(start - 1)
    result = "".join(line for i, line in enumerate(lines) if i not in cut)
    if not _checked(result, _expected(before, keys, None), keys):
        raise _refuse(name, keys)
    return result
