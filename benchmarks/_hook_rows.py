"""The hook and CLI rows of ``run_all.py``: gate-stop, task-stop, session-start, the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _measure import (
    AGENT_TASK,
    FIXTURES,
    PY,
    Row,
    blocked,
    interleaved,
    process_ms,
    row,
    silent,
)

# -- hooks and CLI --------------------------------------------------------------------------


def _gate_setup(tmp: Path) -> tuple[dict[str, str], Path, Path]:
    shutil.copytree(FIXTURES / "claude", tmp / "claude")
    shutil.copytree(FIXTURES / "codex", tmp / "codex")
    env = {
        **os.environ,
        "HOME": str(tmp / "home"),
        "AGENT_TASK_GATE_INDEX": str(tmp / "gate-index.sqlite"),
        "AGENT_TASK_CLAUDE_PROJECTS_DIR": str(tmp / "claude" / "projects"),
        "AGENT_TASK_CODEX_SESSIONS_DIR": str(tmp / "codex" / "sessions"),
    }
    subprocess.run([AGENT_TASK, "gate", "index"], env=env, check=True, capture_output=True)
    projects = tmp / "claude" / "projects" / "-home-dev-src-acme-api"
    return (
        env,
        projects / "3d4b6fa4-4c77-4e31-a0a1-5f8ebc4b9d04.jsonl",
        projects / ("2c3a5e93-3b66-4d20-9f90-4e7dab3a8c03.jsonl"),
    )


def _failing_turn(session: str) -> bytes:
    """An agent turn: a test run that fails (exit 1), then a claim (the session stays below)."""

    def line(kind: str, second: int, content: Any) -> str:
        return json.dumps(
            {
                "type": kind,
                "timestamp": f"2026-09-20T10:01:{second:02d}.000Z",
                "cwd": "/home/dev/src/acme-api",
                "sessionId": session,
                "isSidechain": False,
                "message": {"role": kind, "content": content},
            }
        )

    use = {"type": "tool_use", "id": "toolu_bench", "name": "Bash"}
    use["input"] = {"command": "uv run pytest -q tests/test_handlers.py"}
    result = {"type": "tool_result", "tool_use_id": "toolu_bench", "is_error": True}
    result["content"] = "Exit code 1\n1 failed, 12 passed"
    text = {"type": "text", "text": "Done: the timeout is in place."}
    lines = [line("assistant", 1, [use]), line("user", 2, [result]), line("assistant", 3, [text])]
    return "".join(f"{x}\n" for x in lines).encode()


def _stop_payload(path: Path) -> bytes:
    return json.dumps(
        {
            "session_id": "bench",
            "transcript_path": str(path),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
        }
    ).encode()


def hooks_and_cli(rounds: int, with_task_stop: bool) -> list[Row]:
    import apsw
    from taskcore import Service, Tier
    from taskcore.auth import TokenAdmin
    from taskhttp import BackgroundServer, create_app

    tmp = Path(tempfile.mkdtemp(prefix="run-all-"))
    env, above, below = _gate_setup(tmp)
    index = env["AGENT_TASK_GATE_INDEX"]
    gate = [AGENT_TASK, "gate-stop", "--harness", "claude-code"]
    grown = below.read_bytes().splitlines()[-1] + b"\n"
    turn = _failing_turn(below.stem)

    def quiet() -> float:
        return process_ms(gate, _stop_payload(above), env, expect=silent, what="nothing")

    def block() -> float:
        conn = apsw.Connection(index)  # a fresh budget each time: the hook blocks and writes
        conn.execute("DELETE FROM gate_budget")
        conn.close()
        return process_ms(gate, _stop_payload(below), env, expect=blocked, what="a block")

    subagent = subprocess.run(
        ["find", str(tmp / "claude"), "-path", "*/subagents/*.jsonl"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[0]
    sub_payload = json.dumps(
        {
            "session_id": "bench",
            "transcript_path": str(below),
            "hook_event_name": "SubagentStop",
            "stop_hook_active": False,
            "agent_id": "bench-sub",
            "agent_transcript_path": subagent,
        }
    ).encode()

    def sub_stop() -> float:
        conn = apsw.Connection(index)  # a fresh budget each time, as for "block"
        conn.execute("DELETE FROM gate_budget")
        conn.close()
        return process_ms([*gate, "--subagent"], sub_payload, env, expect=silent, what="nothing")

    def grew() -> float:
        with open(below, "ab") as f:  # one more line since the last stop: the full hook
            f.write(grown)
        conn = apsw.Connection(index)
        conn.execute("DELETE FROM gate_budget")
        conn.close()
        return process_ms(gate, _stop_payload(below), env, expect=blocked, what="a block")

    def grew_turn() -> float:
        with open(below, "ab") as f:  # a turn with a shell command: the classifier loads too
            f.write(turn)
        conn = apsw.Connection(index)
        conn.execute("DELETE FROM gate_budget")
        conn.close()
        return process_ms(gate, _stop_payload(below), env, expect=blocked, what="a block")

    data = tmp / "service"
    with TokenAdmin(data, create=True) as admin:
        issued = admin.create(workspace="w1", tier=Tier.ADMIN, autonomy=3, name="bench")
        idle = admin.create(workspace="w1", tier=Tier.AGENT, autonomy=1, name="idle")
        busy = admin.create(workspace="w1", tier=Tier.AGENT, autonomy=1, name="busy")
    token_file = tmp / "admin.token"
    token_file.write_text(issued.token + "\n")
    for name, agent in (("idle", idle), ("busy", busy)):
        (tmp / f"{name}.token").write_text(agent.token + "\n")
    service = Service.open(data)
    server = BackgroundServer(create_app(service))
    url = server.start()
    created = json.loads(
        subprocess.run(
            [
                AGENT_TASK,
                "call",
                "agenttask.create",
                "--url",
                url,
                "--token-file",
                str(token_file),
                "--json",
                "--request",
                '{"verb": "agent.run"}',
            ],
            capture_output=True,
            check=True,
        ).stdout
    )
    held = service.call(issued.token, "agenttask.create", b'{"verb": "agent.run"}').json()
    service.call(busy.token, "agenttask.claim", json.dumps({"taskId": held["taskId"]}).encode())

    def session_start(name: str, expect_output: bool) -> float:
        argv = [AGENT_TASK, "session-start", "--harness", "claude-code", "--url", url]
        argv += ["--token-file", str(tmp / f"{name}.token")]
        started = time.perf_counter()
        done = subprocess.run(
            argv, input=b'{"source": "startup"}', capture_output=True, check=False
        )
        elapsed = (time.perf_counter() - started) * 1000
        said = b"additionalContext" in done.stdout
        if done.returncode != 0 or said != expect_output or b"systemMessage" in done.stdout:
            raise RuntimeError(f"session-start answered {done.stdout[:300]!r}")
        return elapsed

    get = [
        AGENT_TASK,
        "call",
        "agenttask.get",
        "--url",
        url,
        "--token-file",
        str(token_file),
        "--json",
        "--request",
        json.dumps({"taskId": created["taskId"]}),
    ]
    cases: dict[str, Callable[[], float]] = {
        "pass": lambda: process_ms([PY, "-c", "pass"], expect=silent, what="nothing"),
        "gate-stop silent": quiet,
        "gate-stop block": block,
        "gate-stop grew": grew,
        "gate-stop grew turn": grew_turn,
        "gate-stop subagent": sub_stop,
        "session-start silent": lambda: session_start("idle", False),
        "session-start held": lambda: session_start("busy", True),
        "help": lambda: process_ms(
            [AGENT_TASK, "--help"], expect=lambda out: b"Usage:" in out, what="the usage"
        ),
        "call": lambda: process_ms(
            get,
            expect=lambda out: json.loads(out).get("taskId") == created["taskId"],
            what="the task",
        ),
    }
    task_stop: Any = None
    if with_task_stop:
        task_stop = _task_stop_case(tmp)
        cases["task-stop"] = task_stop.run
    try:
        got = interleaved(cases, rounds)
    finally:
        server.stop()
        service.close()
        if task_stop is not None:
            task_stop.close()
        shutil.rmtree(tmp, ignore_errors=True)
    base = got["pass"]
    rows = [
        row(
            "gate-stop, fast path, silent",
            got["gate-stop silent"],
            "python -c pass",
            base,
            "<= 3x",
            3.0,
        ),
        row(
            "gate-stop, fast path, block",
            got["gate-stop block"],
            "python -c pass",
            base,
            "<= 3x",
            3.0,
        ),
        row(
            "gate-stop, transcript grew (one message)",
            got["gate-stop grew"],
            "python -c pass",
            base,
            "<= 3x",
            3.0,
        ),
        row(
            "gate-stop, transcript grew (a turn with a test run)",
            got["gate-stop grew turn"],
            "python -c pass",
            base,
            "<= 3x",
            3.0,
        ),
        row(
            "gate-stop --subagent, SubagentStop (fast path)",
            got["gate-stop subagent"],
            "python -c pass",
            base,
            "<= 3x",
            3.0,
        ),
    ]
    rows.append(
        row(
            "session-start, nothing held (silent)",
            got["session-start silent"],
            "python -c pass",
            base,
            "<= 3x",
            3.0,
        )
    )
    rows.append(
        row(
            "session-start, one lease held (context)",
            got["session-start held"],
            "python -c pass",
            base,
            "<= 3x",
            3.0,
        )
    )
    if "task-stop" in got:
        rows.append(row("task-stop, pass", got["task-stop"], "python -c pass", base, "<= 3x", 3.0))
    rows.append(row("agent-task --help", got["help"], "python -c pass", base, "<= 10x", 10.0))
    rows.append(row("agent-task call", got["call"], "python -c pass", base, "<= 10x", 10.0))
    return rows


class _TaskStop:
    """A qualified subject (one real collection of /bin/true), and its task-stop command."""

    def __init__(self, tmp: Path) -> None:
        from bench_collector import Bench
        from taskcore.collector.client import collect_once

        self.bench = Bench(tmp, ("/bin/true",), "hook")
        self.bench.new_subject("hook")
        collect_once(
            self.bench.client,
            repository="calc",
            profile="default",
            change="hook",
            data_dir=self.bench.data,
            state=self.bench.state,
            lease_ms=600_000,
        )
        self.env = dict(os.environ, AGENT_TASK_STOP_DIR=str(tmp / "stop"))
        b = self.bench
        self.argv = [
            AGENT_TASK,
            "task-stop",
            "hook",
            "--endpoint",
            b.url,
            "--repository",
            "calc",
            "--profile",
            "default",
            "--token-file",
            str(b.token_file),
            "--workspace",
            str(b.repo),
            "--data-dir",
            str(b.data),
        ]

    def run(self) -> float:
        started = time.perf_counter()
        done = subprocess.run(
            self.argv,
            input=b'{"session_id": "bench", "hook_event_name": "Stop"}',
            capture_output=True,
            env=self.env,
            check=False,
        )
        elapsed = (time.perf_counter() - started) * 1000
        if done.returncode != 0 or done.stdout.strip():
            raise RuntimeError(f"task-stop did not pass: {done.stdout!r} {done.stderr!r}")
        return elapsed

    def close(self) -> None:
        self.bench.close()


def _task_stop_case(tmp: Path) -> _TaskStop:
    return _TaskStop(tmp)
