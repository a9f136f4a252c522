"""README's "An escalation, start to finish" runs as written against a live ``agent-task serve``.

The shell block is taken from README.md as a user copies it and run by bash (``set -eu``,
``pipefail``) from the repository root, with the first steps' ``D`` and ``T`` pointing at the
live service's data dir and its first admin token; only the port in ``AGENT_TASK_URL`` differs.
Then the journal must show what the README promises: the duplicate cancelled by the grant, the
grant consumed, the worker's task done.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.adversarial.served import Served
from tests.ci import skip_or_fail

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def escalation_block() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n### An escalation, start to finish\n")
    end = text.index("\n#", start + 1)
    blocks = re.findall(r"```sh\n(.*?)```", text[start:end], flags=re.DOTALL)
    assert len(blocks) == 1, "expected one sh block in README's escalation section"
    return blocks[0]


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    """The README's loop runs on SQLite and on PostgreSQL (tests/conftest.py)."""
    return backend


@pytest.fixture
def served(tmp_path):
    server = Served(tmp_path / "data")
    yield server
    server.stop()


def test_the_readme_escalation_completes_against_a_live_service(served, tmp_path):
    if shutil.which("jq") is None:
        skip_or_fail("the README's escalation uses jq: apt-get install -y jq")
    agent_task = ROOT / ".venv" / "bin" / "agent-task"
    assert Path(sys.executable).parent == agent_task.parent, "run from the project's ./.venv"
    block = escalation_block()
    assert "export AGENT_TASK_URL=http://127.0.0.1:8787\n" in block
    script = block.replace("http://127.0.0.1:8787", served.url)
    env = {
        **os.environ,
        "D": str(served.data_dir),
        "T": str(served.data_dir / "admin.token"),
    }
    env.pop("AGENT_TASK_TOKEN", None)
    env.pop("AGENT_TASK_TOKEN_FILE", None)
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script + "\necho TASK=$TASK DUP=$DUP GATE=$GATE\n"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # The refused direct cancel is shown to the user, with its code.
    assert "AUTONOMY_EXCEEDED" in done.stderr + done.stdout
    ids = dict(re.findall(r"(TASK|DUP|GATE)=(\S+)", done.stdout.splitlines()[-1]))
    admin = {"Authorization": f"Bearer {served.admin}"}

    def read(verb: str, body: dict) -> dict:
        answer = httpx.post(f"{served.url}/v/{verb}", json=body, headers=admin, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()

    assert read("agenttask.get", {"taskId": ids["DUP"]})["status"] == "CANCELLED"
    assert read("agenttask.get", {"taskId": ids["TASK"]})["status"] == "DONE"
    gate = read("agenttask.gate.get", {"gateId": ids["GATE"]})
    assert (gate["status"], gate["targetVerb"]) == ("CONSUMED", "agenttask.cancel")
    # The worker's token file was written private, as the README says.
    assert (served.data_dir / "worker.token").stat().st_mode & 0o077 == 0
