"""Snapshots of the public surfaces: the OpenAPI document, the MCP tool lists, the CLI help.

Any change to what a client can see (an operation, a field, a bound, a tool annotation, a
flag, a help line) changes a file under ``tests/snapshots/__snapshots__/`` and so shows in
review. After an intended change: ``./dev test tests/snapshots --snapshot-update``, and
read the diff.
"""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from syrupy.extensions.json import JSONSnapshotExtension
from taskcli.main import load_commands
from taskcore.service import default_registry
from taskhttp.openapi import openapi_document
from taskmcp.tools import Family, tools


@pytest.fixture
def json_snapshot(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


def test_openapi_document(json_snapshot):
    assert openapi_document(default_registry()) == json_snapshot


@pytest.mark.parametrize("family", list(Family), ids=lambda f: f.value)
def test_mcp_tool_list(family, json_snapshot):
    listed = [
        tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        for tool in tools(default_registry(), family)
    ]
    assert listed == json_snapshot


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            out.extend(_commands(command, (*path, name)))
        elif command is not None and not command.hidden:
            out.append((*path, name))
    return out


COMMANDS = _commands(load_commands())


def _forget_help_options(command: click.Command) -> None:
    # click caches each command's --help option the first time it is built, with the
    # help_option_names of the context it was first invoked in; a test that invoked a command
    # on its own (not through the group) would leave "--help" where the group gives "-h, --help".
    if hasattr(command, "_help_option"):
        command._help_option = None
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _forget_help_options(sub)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "agent-task")
def test_cli_help(path, snapshot, monkeypatch):
    _forget_help_options(load_commands())
    monkeypatch.setenv("HOME", "/home/user")
    for name in ("AGENT_TASK_DATA_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(
        load_commands(),
        [*path, "--help"],
        prog_name="agent-task",
        terminal_width=100,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert result.output == snapshot
