"""The script and the record of the scripted model (:mod:`tests.harness.scripted_model`).

A script's turns (:class:`Turn`, :class:`ToolCall`, :func:`say`, :func:`call`, :func:`reply`),
one recorded request (:class:`Recorded`), and the documented request shapes both protocols are
checked against (:func:`anthropic_problems`, :func:`responses_problems`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = [
    "TOOL_NAME",
    "Reactive",
    "Recorded",
    "ToolCall",
    "Turn",
    "anthropic_problems",
    "call",
    "reply",
    "responses_problems",
    "say",
]

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""A tool (function) name both APIs accept."""


def _tool_problems(tools: Any) -> list[str]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        return ["tools is not a list"]
    problems, seen = [], set()
    for tool in tools:
        if not isinstance(tool, dict):
            problems.append("a tool is not an object")
            continue
        name = tool.get("name")
        if name is None and tool.get("type") not in (None, "function", "custom"):
            continue  # a built-in tool named by its type (web_search, ...)
        if not isinstance(name, str) or TOOL_NAME.fullmatch(name) is None:
            problems.append(f"tool name {name!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$")
        elif name in seen:
            problems.append(f"tool name {name!r} is offered twice")
        seen.add(name)
        if tool.get("type") == "namespace":
            problems += [f"in namespace {name!r}: {p}" for p in _tool_problems(tool.get("tools"))]
    return problems


def anthropic_problems(body: Any) -> list[str]:
    """What in a Messages request does not fit the documented shape (empty: nothing).

    >>> anthropic_problems({"model": "m", "max_tokens": 1, "messages": [
    ...     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]}]})
    ["tool_result answers 'x', which no earlier assistant message called"]
    """
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    problems = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model is missing")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        problems.append("max_tokens is not a positive integer")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages is not a non-empty list"]
    called: set[str] = set()
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in (
            "user",
            "assistant",
            "system",
        ):
            problems.append("a message has no user/assistant role")
            continue
        content = message.get("content")
        if isinstance(content, str):
            continue
        if not isinstance(content, list):
            problems.append("a message's content is neither a string nor a list")
            continue
        for block in content:
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                problems.append("a content block has no type")
            elif block["type"] == "tool_use" and message["role"] == "assistant":
                called.add(str(block.get("id")))
            elif block["type"] == "tool_result":
                ref = block.get("tool_use_id")
                if message["role"] != "user" or ref not in called:
                    problems.append(
                        f"tool_result answers {ref!r}, which no earlier assistant message called"
                    )
    return problems + _tool_problems(body.get("tools"))


def responses_problems(body: Any) -> list[str]:
    """What in a Responses request does not fit the documented shape (empty: nothing).

    >>> responses_problems({"model": "m", "input": [
    ...     {"type": "function_call_output", "call_id": "c", "output": "ok"}]})
    ["function_call_output answers 'c', which no earlier function_call made"]
    """
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    problems = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model is missing")
    items = body.get("input")
    if isinstance(items, str):
        items = []
    if not isinstance(items, list):
        return [*problems, "input is neither a string nor a list"]
    called: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            problems.append("an input item is not an object")
            continue
        kind = item.get("type", "message")
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            called.add(str(item.get("call_id")))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            if item.get("call_id") not in called:
                problems.append(
                    f"{kind} answers {item.get('call_id')!r}, which no earlier function_call made"
                )
        elif kind == "message" and item.get("role") not in (
            "user",
            "assistant",
            "system",
            "developer",
        ):
            problems.append(f"a message has role {item.get('role')!r}")
    return problems + _tool_problems(body.get("tools"))


@attrs.frozen
class ToolCall:
    """One tool call the scripted model makes."""

    name: str
    arguments: Mapping[str, Any]
    namespace: str | None = None
    """Responses only: the ``namespace`` tool the function belongs to (Codex groups each MCP
    server's tools in one ``{"type": "namespace", "name": "mcp__<server>", "tools": [...]}``)."""


@attrs.frozen
class Turn:
    """One answer of the agent loop: text, then tool calls (none: the turn ends)."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()


Reactive = Callable[["Recorded"], Turn]
"""A script item that decides its turn from the request it answers."""


def reply(decide: Reactive) -> Reactive:
    """A reactive turn (``decide(request)`` is played): ``reply`` only reads well in a script."""
    return decide


def say(text: str) -> Turn:
    """A turn that only speaks (the agent's turn ends after it)."""
    return Turn(text=text)


def call(name: str, text: str = "", /, **arguments: Any) -> Turn:
    """A turn that calls one tool, optionally after some text.

    >>> call("Bash", command="pytest -q").calls[0].arguments
    {'command': 'pytest -q'}
    """
    return Turn(text=text, calls=(ToolCall(name, dict(arguments)),))


@attrs.frozen
class Recorded:
    """One request as the harness sent it."""

    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]
    body: Any
    """The decoded JSON body (``None`` when there was none or it was not JSON)."""
    loop: bool
    """True when the request offered tools and so played a turn of the script."""
    turn: int | None
    """The script index it was answered with (``None``: a side request, an overrun, a 404)."""

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool definitions offered to the model (either protocol), as sent."""
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return [t for t in tools or [] if isinstance(t, dict)]

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered to the model (a namespace counts as one name)."""
        names: list[str] = []
        for tool in self.tools:
            name = tool.get("name")
            if name is None and isinstance(tool.get("function"), dict):
                name = tool["function"].get("name")
            if isinstance(name, str):
                names.append(name)
        return names

    def namespace(self, name: str) -> dict[str, dict[str, Any]]:
        """The functions inside the Responses ``namespace`` tool ``name``, by name."""
        for tool in self.tools:
            if tool.get("type") == "namespace" and tool.get("name") == name:
                return {
                    t["name"]: t
                    for t in tool.get("tools") or []
                    if isinstance(t, dict) and isinstance(t.get("name"), str)
                }
        return {}

    def text(self) -> str:
        """Every string in the body, joined: what a test searches for our hook's words."""
        out: list[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, str):
                out.append(node)
            elif isinstance(node, dict):
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(self.body)
        return "\n".join(out)
