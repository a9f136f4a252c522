"""``agent-task agent setup --harness codex``, then the real Codex with nothing else.

Each test configures Codex only with ``agent setup`` (the MCP entry's ``http_headers_helper``
reads the token file; no variable is exported), runs ``codex exec`` against the scripted model
and checks what reached the model and the service:

* a fresh session lists our tools, claims, works (a real pytest run), finishes the task and
  passes the done gate in silence. The hooks are trusted the way ``agent doctor`` says (the
  exact ``[hooks.state]`` lines it prints, from Codex's own ``hooks/list``), and Codex runs
  *without* ``--dangerously-bypass-hook-trust``: the lines are right;
* a session compacted (Codex's automatic compaction, its limit lowered with ``-c``) and then
  resumed (``codex exec resume``) is told its task and fence, and the model's next call uses
  that fence;
* a subagent (``spawn_agent``) that stops below the line is held once by SubagentStop; the
  main agent and the subagent run at the same time, so the scripted model answers each from
  what its own conversation holds (a router, not a script in arrival order);
* project scope: in a trusted project, the project's ``.codex/`` entry and hooks are read.
"""

from __future__ import annotations

import re
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
from tests.harness.harnesses import VENV_BIN, codex_config, codex_env, run_codex
from tests.harness.scripted_model import Recorded, ScriptedModel, ToolCall, Turn, call, reply, say
from tests.taskmcp.support import QueueService, run

NAMESPACE = "mcp__agent_task"  # Codex's namespace for the server "agent-task"


@pytest.fixture
def queue(tmp_path: Path):
    svc = QueueService(tmp_path / "data").start()
    yield svc
    svc.stop()


def _offered(queue: QueueService) -> set[str]:
    async def names(client) -> set[str]:
        return {t.name for t in (await client.list_tools()).tools}

    return run(queue.http("agent1"), names)


def _ours(name: str, **arguments: object) -> Turn:
    return Turn(calls=(ToolCall(name, dict(arguments), namespace=NAMESPACE),))


def _codex_home(home: Path, model: ScriptedModel, *trusted: Path) -> Path:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(model.url, trusted=trusted))
    return codex_home


def test_a_fresh_session_lists_our_tools_claims_works_and_passes_the_done_gate(
    codex_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    task_id = queued(queue, "add a passing test")
    codex_home = _codex_home(home, model)
    env = codex_env(home, codex_home, proxy.url)
    agent_setup("codex", "user", proj, queue, token_file(queue, tmp_path), env)
    # Codex skips unreviewed hooks in silence; doctor says so, with the lines that trust them.
    status, report = doctor("codex", proj, env, "--codex", str(codex_bin))
    trust = {c["name"]: c for c in report["checks"]}["hook trust"]
    assert status == 9
    assert trust["status"] == "fail"
    assert trust["detail"].endswith(
        "sessionStart untrusted, subagentStop untrusted, stop untrusted"
    )
    lines = trust["fix"].split(":\n", 1)[1]
    with open(codex_home / "config.toml", "a") as config:
        config.write("\n" + lines + "\n")
    status, report = doctor("codex", proj, env, "--codex", str(codex_bin))
    assert status == 0, report

    def finish(request: Recorded) -> Turn:
        claimed, fence = claim_of(request)
        return _ours(
            "agenttask_checkpoint",
            taskId=claimed,
            fence=fence,
            status="DONE",
            checkpoint={"output": {"tests": "1 passed"}},
        )

    model.extend(
        [
            _ours("agenttask_claimNext"),
            call(
                "exec_command",
                cmd="printf 'def test_add():\\n    assert 1 + 1 == 2\\n' > test_add.py && "
                f"{VENV_BIN / 'pytest'} -q -p no:cacheprovider test_add.py",
            ),
            reply(finish),
            say("Done: the task is finished and its test passes."),
        ]
    )
    result = run_codex(
        codex_bin, "take the next task and do it", cwd=proj, env=env, bypass_hook_trust=False
    )
    assert result.returncode == 0, result.stderr
    assert model.played == 4
    assert model.overruns == 0, model.overrun_report()
    first = model.loop_requests[0]
    assert set(first.namespace(NAMESPACE)) == _offered(queue)
    assert "agent-task: you hold" not in first.text()
    done = queue.call("member", "agenttask.get", {"taskId": task_id})
    assert done["status"] == "DONE"
    assert all("rung 2 of 5" not in r.text() for r in model.loop_requests)
    # The trusted Stop hook ran (no bypass flag): the gate indexed the session as verified.
    index = gate_index(home)
    try:
        [session] = [s for s in index.sessions() if s.harness == "codex"]
        assert session.rung_name == "verified"
    finally:
        index.close()


def test_a_compacted_then_resumed_session_is_told_its_task_and_continues_with_its_fence(
    codex_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    task_id = queued(queue, "fix the login bug")
    for _ in range(2):
        queue.call("agent2", "agenttask.claim", {"taskId": task_id})
        queue.call("agent2", "agenttask.release", {"taskId": task_id})
    queue.call("agent1", "agenttask.claim", {"taskId": task_id})  # fence 3, held by the agent
    codex_home = _codex_home(home, model)
    env = codex_env(home, codex_home, proxy.url)
    agent_setup("codex", "user", proj, queue, token_file(queue, tmp_path), env)
    model.extend([call("exec_command", cmd="git status --short"), say("Looked around.")])
    # A compaction limit below one turn's tokens: Codex compacts after the first answer.
    first = run_codex(
        codex_bin,
        "work on your task",
        cwd=proj,
        env=env,
        args=["-c", "model_auto_compact_token_limit=40"],
    )
    assert first.returncode == 0, first.stderr
    [thread] = [e["thread_id"] for e in first.events() if e.get("type") == "thread.started"]
    assert "(this session just started)" in model.loop_requests[0].text()
    assert lease_in_context(model.loop_requests[0]) == (task_id, 3)
    assert "(this session was compacted)" in model.loop_requests[1].text()

    def heartbeat(request: Recorded) -> Turn:
        told_task, told_fence = lease_in_context(request)
        return _ours("agenttask_checkpoint", taskId=told_task, fence=told_fence)

    model.extend([reply(heartbeat), say("Renewed the lease; continuing.")])
    resumed = run_codex(codex_bin, "continue", cwd=proj, env=env, args=["resume", thread])
    assert resumed.returncode == 0, resumed.stderr
    asked = model.loop_requests[-2]
    assert "(this session was resumed)" in asked.text()
    assert lease_in_context(asked) == (task_id, 3)
    assert model.overruns == 0, model.overrun_report()
    task = queue.call("agent1", "agenttask.get", {"taskId": task_id})
    assert task["lease"]["extensions"] == 1  # renewed under fence 3


def test_project_scope_is_read_in_a_trusted_project(codex_bin, model, proxy, home, tmp_path, queue):
    proj = project(tmp_path)
    task_id = queued(queue, "anything")
    codex_home = _codex_home(home, model, proj)
    env = codex_env(home, codex_home, proxy.url)
    out = agent_setup("codex", "project", proj, queue, token_file(queue, tmp_path), env)
    assert "commit .codex/config.toml, .codex/hooks.json" in out
    assert (proj / ".codex" / "config.toml").read_text().startswith("[mcp_servers.agent-task]\n")
    model.extend([_ours("agenttask_claimNext"), say("Claimed.")])
    result = run_codex(codex_bin, "claim the next task", cwd=proj, env=env)
    assert result.returncode == 0, result.stderr
    assert "agenttask_claimNext" in model.loop_requests[0].namespace(NAMESPACE)
    assert claim_of(model.loop_requests[1])[0] == task_id
    assert queue.call("member", "agenttask.get", {"taskId": task_id})["status"] == "LEASED"


def _user_texts(request: Recorded) -> list[str]:
    out = []
    for item in request.body.get("input", []):
        if (
            isinstance(item, dict)
            and item.get("type", "message") == "message"
            and item.get("role") == "user"
        ):
            content = item.get("content")
            if isinstance(content, list):
                content = " ".join(c.get("text", "") for c in content if isinstance(c, dict))
            out.append(str(content))
    return out


def _outputs(request: Recorded) -> list[dict]:
    return [
        i
        for i in request.body.get("input", [])
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]


def test_a_subagent_that_stops_below_the_line_is_held_once_by_subagent_stop(
    codex_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    codex_home = _codex_home(home, model)
    env = codex_env(home, codex_home, proxy.url)
    agent_setup("codex", "user", proj, queue, token_file(queue, tmp_path), env)
    task = "Write calc.py with add()."

    def is_sub(request: Recorded) -> bool:
        texts = _user_texts(request)
        return any(task in t for t in texts) and not any("add calc.py" in t for t in texts)

    def route(request: Recorded) -> Turn:
        held = sum("rung 2 of 5" in t for t in _user_texts(request))
        outputs = _outputs(request)
        if is_sub(request):
            if not outputs:
                return call(
                    "exec_command",
                    cmd=f"printf 'def add(a, b):\\n    return a + b\\n' > {proj}/calc.py",
                )
            return say(
                "Done: I wrote calc.py."
                if not held
                else "There is no test suite here, so nothing to run."
            )
        if not outputs:
            return Turn(
                calls=(ToolCall("spawn_agent", {"message": task}, namespace="multi_agent_v1"),)
            )
        if len(outputs) == 1:
            agent = re.search(r'"agent_id"\s*:\s*"([^"]+)"', outputs[0]["output"])
            assert agent, outputs[0]["output"]
            wait = {"targets": [agent.group(1)], "timeout_ms": 60000}
            return Turn(calls=(ToolCall("wait_agent", wait, namespace="multi_agent_v1"),))
        return say(
            "Done: the subagent wrote calc.py." if not held else "There are no tests here yet."
        )

    model.off_script = route
    result = run_codex(codex_bin, "add calc.py", cwd=proj, env=env)
    assert result.returncode == 0, result.stderr
    assert (proj / "calc.py").exists()
    subs = [r for r in model.loop_requests if is_sub(r)]
    # The subagent: its command, its first stop (held: the next request carries the receipt
    # SubagentStop gave), its second stop (stop_hook_active: let through).
    assert [sum("rung 2 of 5" in t for t in _user_texts(r)) for r in subs] == [0, 0, 1]
    index = gate_index(home)
    try:
        sessions = index.sessions()
        held = [s for s in sessions if index.budget(s.session_key, f"p{s.prompts}") == (1, False)]
        assert any(s.subagent for s in held), [(s.subagent, s.rung_name) for s in sessions]
    finally:
        index.close()
