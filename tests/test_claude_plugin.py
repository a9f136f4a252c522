"""The Claude Code plugin in ``integrations/claude-code`` stays in step with the packages.

One version: the plugin's ``plugin.json`` and its marketplace entry carry the repository's one
version (``VERSION``, which every distribution is built with): a release bumps them together or
this test fails. And the plugin installs what ``agent setup`` installs: the same MCP server
name, the same hooks with the same arguments (the executable and the credential come from the
environment instead).
"""

from __future__ import annotations

import json
import shlex
from importlib.metadata import version
from pathlib import Path

import pytest
from taskcore.agentsetup.harness import SERVER_NAME, SetupOptions, TokenFile, hooks, is_ours

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "integrations" / "claude-code"
MANIFEST = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
MARKETPLACE = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
VERSION = (ROOT / "VERSION").read_text("ascii").strip()


def test_the_plugin_has_the_one_version():
    assert MANIFEST["version"] == VERSION


@pytest.mark.parametrize(
    "distribution",
    ["agenttask", "agenttask-core", "agenttask-http", "agenttask-mcp", "agenttask-board"],
)
def test_the_plugin_has_the_installed_distributions_version(distribution):
    assert MANIFEST["version"] == version(distribution)


def test_the_marketplace_lists_the_plugin_at_its_folder_with_its_version():
    [entry] = MARKETPLACE["plugins"]
    assert entry["name"] == MANIFEST["name"] == "agent-task"
    assert (ROOT / entry["source"]).resolve() == PLUGIN
    assert entry["version"] == MANIFEST["version"]
    assert MARKETPLACE["owner"]["name"]


def test_the_mcp_server_reads_url_and_token_from_the_environment():
    server = MANIFEST["mcpServers"][SERVER_NAME]
    assert server["type"] == "http"
    assert server["url"] == "${AGENT_TASK_URL:-http://127.0.0.1:8787}/mcp"
    assert server["headers"] == {"Authorization": "Bearer ${AGENT_TASK_TOKEN}"}


def test_the_plugin_hooks_are_the_ones_agent_setup_installs():
    options = SetupOptions(
        harness="claude-code",
        scope="user",
        url="http://127.0.0.1:8787",
        credential=TokenFile(Path("/t")),
        project_dir=ROOT,
        executable="agent-task",
    )
    installed = {(h.event, h.role): h for h in hooks(options)}
    plugin = {
        event: [h for g in groups for h in g["hooks"]]
        for event, groups in MANIFEST["hooks"].items()
    }
    assert set(plugin) == {event for event, _ in installed}
    for (event, role), hook in installed.items():
        [handler] = plugin[event]
        assert is_ours(handler["command"], role, "claude-code", event), handler
        assert handler["timeout"] == hook.timeout
        argv = shlex.split(
            handler["command"].replace('"${AGENT_TASK_URL:-http://127.0.0.1:8787}"', "URL")
        )
        expected = shlex.split(hook.command)
        if role == "session-start":
            # the URL from the environment; the token from AGENT_TASK_TOKEN(_FILE)
            expected = [a if a != "http://127.0.0.1:8787" else "URL" for a in expected[:-2]]
        assert argv == expected


def test_the_next_task_command_has_its_description():
    text = (PLUGIN / "commands" / "next-task.md").read_text()
    front = text.split("---")[1]
    assert "description:" in front
    assert "agenttask_claimNext" in text
    assert "agenttask_checkpoint" in text
