"""What the ``agent setup`` harness tests share: a queue service, the command, the agent's answers.

The service is the real one on 127.0.0.1 (``tests.taskmcp.support.QueueService``: an agent seat
``agent1``, a member ``member``). The agent's token lives in a file outside the project, as
``agent setup`` demands; the setup is run with the real ``agent-task`` executable, exactly as a
user runs it, and the harness then runs with nothing else configured.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.harness.harnesses import AGENT_TASK
from tests.harness.scripted_model import Recorded
from tests.taskcli.collector_world import git
from tests.taskmcp.support import QueueService

__all__ = [
    "TASK_IN_CONTEXT",
    "agent_setup",
    "claim_of",
    "doctor",
    "lease_in_context",
    "project",
    "queued",
    "token_file",
]

TASK_IN_CONTEXT = re.compile(r'agenttask_checkpoint \{"taskId": "(at_[0-9a-f]+)", "fence": (\d+)\}')
"""The heartbeat call the SessionStart context spells out, with the task id and fence."""


def project(tmp_path: Path) -> Path:
    """A fresh git repository to work in."""
    proj = tmp_path / "proj"
    proj.mkdir()
    git(proj, "init", "-q", "-b", "main")
    return proj


def token_file(queue: QueueService, tmp_path: Path, role: str = "agent1") -> Path:
    """The agent's token in a private file outside the project."""
    secrets = tmp_path / "secrets"
    secrets.mkdir(exist_ok=True, mode=0o700)
    return queue.token_file(role, secrets)


def queued(queue: QueueService, goal: str) -> str:
    """A task queued by the member, with ``goal`` in its payload; its id."""
    created = queue.call(
        "member", "agenttask.create", {"verb": "agent.run", "payload": {"goal": goal}}
    )
    return str(created["taskId"])


def agent_setup(
    harness: str,
    scope: str,
    proj: Path,
    queue: QueueService,
    token: Path,
    env: Mapping[str, str],
    *extra: str,
) -> str:
    """``agent-task agent setup ...`` as a user types it; its stdout."""
    done = subprocess.run(
        [
            str(AGENT_TASK),
            "agent",
            "setup",
            "--harness",
            harness,
            "--scope",
            scope,
            "--project-dir",
            str(proj),
            "--url",
            queue.url,
            "--token-file",
            str(token),
            *extra,
        ],
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def doctor(harness: str, proj: Path, env: Mapping[str, str], *extra: str) -> tuple[int, Any]:
    """``agent-task agent doctor --json``: its exit status and report."""
    done = subprocess.run(
        [
            str(AGENT_TASK),
            "agent",
            "doctor",
            "--harness",
            harness,
            "--project-dir",
            str(proj),
            "--json",
            *extra,
        ],
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, json.loads(done.stdout)


def claim_of(request: Recorded) -> tuple[str, int]:
    """The task id and fence of the ``claimNext`` answer the harness fed back to the model."""
    text = request.text()
    start = text.rindex('{"claimed"')
    answer = json.JSONDecoder().raw_decode(text[start:])[0]
    assert answer["claimed"] is True, answer
    return answer["task"]["taskId"], answer["lease"]["fence"]


def lease_in_context(request: Recorded) -> tuple[str, int]:
    """The task id and fence the SessionStart context told the model (the newest telling)."""
    found = TASK_IN_CONTEXT.findall(request.text())
    assert found, "no SessionStart context in the request"
    task_id, fence = found[-1]
    return task_id, int(fence)
