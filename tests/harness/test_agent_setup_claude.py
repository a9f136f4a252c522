"""``agent-task agent setup --harness claude-code``, then the real Claude Code with nothing else.

Each test configures Claude Code only with ``agent setup`` (no ``--mcp-config``, no
exported token: the MCP entry's headers helper reads the token file), runs ``claude -p``
against the scripted model and checks what reached the model and the service:

* a fresh session lists our tools, claims, works (a real pytest run in the agent's shell),
  finishes the task and passes the done gate in silence;
* a session compacted and resumed is told its task and fence by the SessionStart hook, and the
  model's next call uses that fence (the model reads it from the request: a reactive turn);
* a subagent that stops below the line is held once by SubagentStop;
* project scope: the entry works once the folder's trust is accepted (what ``agent doctor``
  asks for; ``hasTrustDialogAccepted`` stands in for the one interactive answer).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.agentsetup import (
    agent_setup,
    claim_of,
    doctor,
    lease_in_context,
    project,
    queued,
    token_file,
)
from tests.harness.conftest import gate_index
from tests.harness.harnesses import claude_env, run_claude
from tests.harness.scripted_model import Recorded, ScriptedModel, Turn, call, reply, say
from tests.taskmcp.support import QueueService, run

SERVER = "mcp__agent-task__"


@pytest.fixture
def queue(tmp_path: Path):
    svc = QueueService(tmp_path / "data").start()
    yield svc
    svc.stop()


def _offered(queue: QueueService) -> set[str]:
    async def names(client) -> set[str]:
        return {t.name for t in (await client.list_tools()).tools}

    return run(queue.http("agent1"), names)


def _env(home: Path, model: ScriptedModel, proxy) -> dict[str, str]:
    # Tool search off: Claude Code then sends every tool's schema, so the test reads the list.
    return claude_env(home, model.url, proxy.url, {"ENABLE_TOOL_SEARCH": "false"})


def test_a_fresh_session_lists_our_tools_claims_works_and_passes_the_done_gate(
    claude_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    task_id = queued(queue, "add a passing test")
    env = _env(home, model, proxy)
    agent_setup("claude-code", "user", proj, queue, token_file(queue, tmp_path), env)

    def finish(request: Recorded) -> Turn:
        claimed, fence = claim_of(request)
        output = {"tests": "1 passed"}
        return call(
            f"{SERVER}agenttask_checkpoint",
            taskId=claimed,
            fence=fence,
            status="DONE",
            checkpoint={"output": output},
        )

    model.extend(
        [
            call(f"{SERVER}agenttask_claimNext"),
            call(
                "Bash",
                command="printf 'def test_add():\\n    assert 1 + 1 == 2\\n' > test_add.py "
                "&& pytest -q test_add.py",
            ),
            reply(finish),
            say("Done: the task is finished and its test passes."),
        ]
    )
    result = run_claude(claude_bin, "take the next task and do it", cwd=proj, env=env)
    assert result.returncode == 0, result.stderr
    assert model.played == 4
    assert model.overruns == 0, model.overrun_report()
    first = model.loop_requests[0]
    ours = {n[len(SERVER) :] for n in first.tool_names if n.startswith(SERVER)}
    assert ours == _offered(queue)
    assert "agenttask_leases" in ours
    # Nothing was held at the start: the SessionStart hook said nothing.
    assert "agent-task: you hold" not in first.text()
    done = queue.call("member", "agenttask.get", {"taskId": task_id})
    assert done["status"] == "DONE"
    assert done["checkpoint"] == {"output": {"tests": "1 passed"}}
    # The done gate ran at the stop and let it pass: verified, nothing spent, no receipt.
    assert all("rung 2 of 5" not in r.text() for r in model.loop_requests)
    index = gate_index(home)
    try:
        record = index.find_session(result.json()["session_id"])
        assert record is not None
        assert record.rung_name == "verified"
        assert index.budget(record.session_key, f"p{record.prompts}") == (0, False)
    finally:
        index.close()


def test_a_compacted_then_resumed_session_is_told_its_task_and_continues_with_its_fence(
    claude_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    task_id = queued(queue, "fix the login bug")
    # Two earlier claims: the lease the agent gets has fence 3, which nothing in the
    # conversation says until the hook does.
    for _ in range(2):
        queue.call("agent2", "agenttask.claim", {"taskId": task_id})
        queue.call("agent2", "agenttask.release", {"taskId": task_id})
    env = _env(home, model, proxy)
    agent_setup("claude-code", "user", proj, queue, token_file(queue, tmp_path), env)
    model.extend([call(f"{SERVER}agenttask_claim", taskId=task_id), say("Claimed; working on it.")])
    first = run_claude(claude_bin, f"claim {task_id}", cwd=proj, env=env)
    assert first.returncode == 0, first.stderr
    session = first.json()["session_id"]

    # The compaction's summary requests offer tools too: answer them off the script.
    def summary(request: Recorded) -> Turn | None:
        text = request.text()
        return (
            say("Summary: the user asked to work on a task.")
            if "summar" in text.lower() and "/compact" not in text
            else None
        )

    compact_from = len(model.requests)
    model.off_script = summary
    compacted = run_claude(claude_bin, "/compact", cwd=proj, env=env, args=["--resume", session])
    assert compacted.returncode == 0, compacted.stderr
    assert any(r.loop for r in model.requests[compact_from:]), "no compaction request"
    model.off_script = None

    def heartbeat(request: Recorded) -> Turn:
        told_task, told_fence = lease_in_context(request)
        return call(f"{SERVER}agenttask_checkpoint", taskId=told_task, fence=told_fence)

    model.extend([reply(heartbeat), say("Renewed the lease; continuing.")])
    resumed = run_claude(claude_bin, "continue", cwd=proj, env=env, args=["--resume", session])
    assert resumed.returncode == 0, resumed.stderr
    asked = model.loop_requests[-2]
    text = asked.text()
    assert "(this session was compacted)" in text
    assert "(this session was resumed)" in text
    assert lease_in_context(asked) == (task_id, 3)
    assert 'goal (from its payload): "fix the login bug"' in text
    assert model.overruns == 0, model.overrun_report()
    task = queue.call("agent1", "agenttask.get", {"taskId": task_id})
    assert task["fence"] == 3
    assert task["lease"]["extensions"] == 1  # the heartbeat renewed the lease under fence 3


def test_a_subagent_that_stops_below_the_line_is_held_once_by_subagent_stop(
    claude_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    env = _env(home, model, proxy)
    agent_setup("claude-code", "user", proj, queue, token_file(queue, tmp_path), env)
    model.extend(
        [
            call(
                "Agent",
                description="write calc",
                prompt="Write calc.py with add().",
                subagent_type="general-purpose",
                run_in_background=False,
            ),
            call(
                "Write",
                file_path=str(proj / "calc.py"),
                content="def add(a, b):\n    return a + b\n",
            ),
            say("Done: I wrote calc.py."),
            say("There is no test suite here, so there is nothing to run."),
            say("Done: the subagent wrote calc.py."),
            say("There are no tests in this repository yet."),
        ]
    )
    result = run_claude(claude_bin, "add calc.py", cwd=proj, env=env)
    assert result.returncode == 0, result.stderr
    assert model.played == 6
    assert model.overruns == 0, model.overrun_report()
    sub_prompt = "Write calc.py with add()."
    requests = model.loop_requests
    is_sub = [sub_prompt in json.dumps(r.body.get("messages", [])[:1]) for r in requests]
    assert is_sub == [False, True, True, True, False, False]
    # The subagent's stop (turn 2) was held: its next request carries the receipt as the
    # SubagentStop hook's context; its stop after that (stop_hook_active) was let through.
    assert "rung 2 of 5" not in requests[2].text()
    assert "rung 2 of 5" in requests[3].text()
    assert "SubagentStop" in requests[3].text()
    # The main session merges the subagent's write: its own stop is held once too.
    assert "rung 2 of 5" in requests[5].text()
    index = gate_index(home)
    try:
        subagents = [s for s in index.sessions() if s.subagent]
        assert len(subagents) == 1
        assert index.budget(subagents[0].session_key, f"p{subagents[0].prompts}") == (1, False)
    finally:
        index.close()


def test_project_scope_works_once_the_folder_is_trusted_as_doctor_says(
    claude_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    task_id = queued(queue, "anything")
    env = _env(home, model, proxy)
    out = agent_setup("claude-code", "project", proj, queue, token_file(queue, tmp_path), env)
    assert "commit .mcp.json, .claude/settings.json" in out
    status, report = doctor("claude-code", proj, env)
    checks = {c["name"]: c for c in report["checks"]}
    assert status == 9
    assert checks["folder trust"]["status"] == "fail"
    # The step doctor names, for a headless run: the folder's trust accepted once.
    claude_json = home / ".claude.json"
    data = json.loads(claude_json.read_text()) if claude_json.exists() else {}
    data.setdefault("projects", {}).setdefault(str(proj), {})["hasTrustDialogAccepted"] = True
    claude_json.write_text(json.dumps(data))
    status, report = doctor("claude-code", proj, env)
    assert status == 0, report
    model.extend([call(f"{SERVER}agenttask_claimNext"), say("Claimed.")])
    result = run_claude(claude_bin, "claim the next task", cwd=proj, env=env)
    assert result.returncode == 0, result.stderr
    assert f"{SERVER}agenttask_claimNext" in model.loop_requests[0].tool_names
    assert claim_of(model.loop_requests[1])[0] == task_id
    assert queue.call("member", "agenttask.get", {"taskId": task_id})["status"] == "LEASED"
