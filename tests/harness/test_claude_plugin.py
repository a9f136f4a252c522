"""The Claude Code plugin (``integrations/claude-code``), installed through a local marketplace.

The repository is the marketplace (``.claude-plugin/marketplace.json`` at its root): the pinned
Claude Code validates it, adds it with ``claude plugin marketplace add <repository>``, installs
``agent-task@agent-task``, and then a session, with only ``AGENT_TASK_URL`` and
``AGENT_TASK_TOKEN`` in its environment, lists our MCP tools, is told its held lease by the
SessionStart hook, is held once by the done gate's Stop hook, and has the ``next-task``
command.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.harness.agentsetup import lease_in_context, project, queued
from tests.harness.harnesses import claude_env, run_claude
from tests.harness.scripted_model import call, say
from tests.taskmcp.support import QueueService, run

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "integrations" / "claude-code"
TOOLS = "mcp__plugin_agent-task_agent-task__"


@pytest.fixture
def queue(tmp_path: Path):
    svc = QueueService(tmp_path / "data").start()
    yield svc
    svc.stop()


def _claude(
    binary: Path, *args: str, env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("path", [ROOT, PLUGIN], ids=["marketplace", "plugin"])
def test_claude_code_validates_the_marketplace_and_the_plugin(claude_bin, home, tmp_path, path):
    done = _claude(
        claude_bin,
        "plugin",
        "validate",
        str(path),
        env=claude_env(home, "http://127.0.0.1:9", "http://127.0.0.1:9"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout


def test_the_plugin_from_a_local_marketplace_fires_its_hooks_and_lists_its_tools(
    claude_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    task_id = queued(queue, "fix the login bug")
    fence = queue.call("agent1", "agenttask.claim", {"taskId": task_id})["lease"]["fence"]
    env = claude_env(
        home,
        model.url,
        proxy.url,
        {
            "ENABLE_TOOL_SEARCH": "false",
            "AGENT_TASK_URL": queue.url,
            "AGENT_TASK_TOKEN": queue.tokens["agent1"],
        },
    )
    added = _claude(claude_bin, "plugin", "marketplace", "add", str(ROOT), env=env, cwd=proj)
    assert added.returncode == 0, added.stdout + added.stderr
    installed = _claude(claude_bin, "plugin", "install", "agent-task@agent-task", env=env, cwd=proj)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    model.extend(
        [
            call(
                "Write", file_path=str(proj / "login.py"), content="def login():\n    return True\n"
            ),
            say("Done: I fixed the login bug."),
            say("There is no test suite in this repository yet."),
        ]
    )
    result = run_claude(claude_bin, "work on your task", cwd=proj, env=env)
    assert result.returncode == 0, result.stderr
    assert model.played == 3
    assert model.overruns == 0, model.overrun_report()
    first = model.loop_requests[0]

    async def names(client) -> set[str]:
        return {t.name for t in (await client.list_tools()).tools}

    offered = run(queue.http("agent1"), names)
    assert {n[len(TOOLS) :] for n in first.tool_names if n.startswith(TOOLS)} == offered
    # SessionStart: the lease the token holds, with its fence.
    assert lease_in_context(first) == (task_id, fence)
    # Stop: the done gate held the unchecked edit once.
    assert [("rung 2 of 5" in r.text()) for r in model.loop_requests] == [False, False, True]


def test_the_next_task_command_tells_the_model_to_claim(
    claude_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    env = claude_env(
        home,
        model.url,
        proxy.url,
        {"AGENT_TASK_URL": queue.url, "AGENT_TASK_TOKEN": queue.tokens["agent1"]},
    )
    for args in (
        ("plugin", "marketplace", "add", str(ROOT)),
        ("plugin", "install", "agent-task@agent-task"),
    ):
        assert _claude(claude_bin, *args, env=env, cwd=proj).returncode == 0
    model.extend([say("The queue is empty.")])
    result = run_claude(claude_bin, "/agent-task:next-task", cwd=proj, env=env)
    assert result.returncode == 0, result.stderr
    text = model.loop_requests[0].text()
    assert "call the `agenttask_claimNext` tool of the agent-task MCP server" in text.replace(
        "\n   ", ""
    )
    assert json.loads(result.stdout)["result"] == "The queue is empty."
