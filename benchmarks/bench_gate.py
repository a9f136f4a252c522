"""Done-gate figures: Stop-hook wall time and index throughput, beside same-run baselines.

    .venv/bin/python benchmarks/bench_gate.py [--sizes 1,20,100] [--runs 5]

For each transcript size (MB) a realistic Claude Code transcript is generated (prompts, big
Read results, edits, test runs, agent text, in the record shapes of the fixtures). Measured:

* hook wall time, process start to answer, of ``agent-task gate-stop --harness claude-code``
  with a real Stop payload on stdin: *cold* (empty index, the whole file is read) and *after
  indexing* (``gate index`` ran first; the hook reads only what is new, here nothing), beside
  ``python -c pass`` and ``python -c "import taskcore"`` started the same way in the same run;
* the same indexed run through ``python -m taskcli.gate_stop`` ("core"): the full hook without the
  ``agent-task`` entry point's own module imports;
* index throughput (``GateIndex.scan`` over all generated files, fresh index) in MB/s, beside a
  bare ``json.loads`` of every line of the same files.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENT_TASK = str(Path(sys.executable).parent / "agent-task")
SESSION = "9f1e2d3c-4b5a-4697-8877-665544332211"
CWD = "/home/dev/src/acme-api"


def _rec(kind: str, n: int, **fields: object) -> str:
    base = {
        "parentUuid": f"u{n - 1}",
        "isSidechain": False,
        "type": kind,
        "uuid": f"u{n}",
        "timestamp": f"2026-09-20T{10 + n // 36000 % 10:02d}:{n // 600 % 60:02d}:"
        f"{n // 10 % 60:02d}.{n % 1000:03d}Z",
        "userType": "external",
        "cwd": CWD,
        "sessionId": SESSION,
        "version": "2.1.241",
        "gitBranch": "main",
    }
    base.update(fields)
    return json.dumps(base, separators=(",", ":"))


def _assistant(n: int, content: list[dict[str, object]]) -> str:
    return _rec(
        "assistant",
        n,
        message={
            "model": "claude-opus-5",
            "id": f"msg_{n:024d}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 80},
        },
    )


def _result(n: int, tid: str, content: str, tur: object) -> str:
    return _rec(
        "user",
        n,
        message={
            "role": "user",
            "content": [{"tool_use_id": tid, "type": "tool_result", "content": content}],
        },
        toolUseResult=tur,
    )


def make_transcript(path: Path, megabytes: int) -> int:
    """Write a transcript of about ``megabytes`` MB; end below the line (an edit, no check)."""
    target = megabytes * 1_000_000
    body = "\n".join(f"{i:>6}\u2192    value_{i} = compute(value_{i - 1})" for i in range(600))
    n = 0
    size = 0
    with open(path, "w", encoding="utf-8") as f:

        def put(line: str) -> None:
            nonlocal size
            f.write(line + "\n")
            size += len(line.encode()) + 1

        while size < target:
            n += 1
            put(_rec("user", n * 10, message={"role": "user", "content": f"step {n}: refactor"}))
            tid = f"toolu_r{n}"
            put(
                _assistant(
                    n * 10 + 1,
                    [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Read",
                            "input": {"file_path": f"{CWD}/src/m{n % 50}.py"},
                        }
                    ],
                )
            )
            put(
                _result(
                    n * 10 + 2,
                    tid,
                    body,
                    {
                        "type": "text",
                        "file": {
                            "filePath": f"{CWD}/src/m{n % 50}.py",
                            "content": body,
                            "numLines": 600,
                        },
                    },
                )
            )
            tid = f"toolu_e{n}"
            put(
                _assistant(
                    n * 10 + 3,
                    [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Edit",
                            "input": {
                                "file_path": f"{CWD}/src/m{n % 50}.py",
                                "old_string": "a",
                                "new_string": "b",
                            },
                        }
                    ],
                )
            )
            put(
                _result(
                    n * 10 + 4,
                    tid,
                    "The file has been updated successfully.",
                    {
                        "filePath": f"{CWD}/src/m{n % 50}.py",
                        "oldString": "a",
                        "newString": "b",
                        "structuredPatch": [],
                    },
                )
            )
            tid = f"toolu_b{n}"
            put(
                _assistant(
                    n * 10 + 5,
                    [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Bash",
                            "input": {
                                "command": "cd /home/dev/src/acme-api && uv run pytest -q",
                                "description": "t",
                            },
                        }
                    ],
                )
            )
            put(
                _result(
                    n * 10 + 6,
                    tid,
                    "120 passed in 3.1s",
                    {
                        "stdout": "120 passed in 3.1s",
                        "stderr": "",
                        "interrupted": False,
                        "isImage": False,
                    },
                )
            )
            put(_assistant(n * 10 + 7, [{"type": "text", "text": f"Step {n} is done."}]))
        tid = "toolu_last"
        put(
            _assistant(
                n * 10 + 11,
                [
                    {
                        "type": "tool_use",
                        "id": tid,
                        "name": "Edit",
                        "input": {
                            "file_path": f"{CWD}/src/final.py",
                            "old_string": "x",
                            "new_string": "y",
                        },
                    }
                ],
            )
        )
        put(_result(n * 10 + 12, tid, "updated", {"filePath": f"{CWD}/src/final.py"}))
        put(_assistant(n * 10 + 13, [{"type": "text", "text": "Done, all refactored."}]))
    return size


def wall(cmd: list[str], env: dict[str, str], stdin: bytes = b"") -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, input=stdin, env=env, capture_output=True, check=True)
    return time.perf_counter() - t0


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,20,100")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-gate-"))
    project = tmp / "claude" / "projects" / "-home-dev-src-acme-api"
    project.mkdir(parents=True)
    (tmp / "codex" / "sessions").mkdir(parents=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENT_TASK_", "CLAUDE_", "CODEX_"))
    }
    env.update(
        {
            "HOME": str(tmp / "home"),
            "AGENT_TASK_CLAUDE_PROJECTS_DIR": str(tmp / "claude" / "projects"),
            "AGENT_TASK_CODEX_SESSIONS_DIR": str(tmp / "codex" / "sessions"),
        }
    )
    py = sys.executable
    base_pass = [wall([py, "-c", "pass"], env) for _ in range(args.runs)]
    base_core = [wall([py, "-c", "import taskcore"], env) for _ in range(args.runs)]
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print(
        f"baseline python -c pass           {median_ms(base_pass):8.1f} ms (median of {args.runs})"
    )
    print(f"baseline python -c 'import taskcore' {median_ms(base_core):5.1f} ms")
    files: list[tuple[int, Path, int]] = []
    for mb in sizes:
        sid = f"{mb:04d}{SESSION[4:]}"
        path = project / f"{sid}.jsonl"
        files.append((mb, path, make_transcript(path, mb)))
    print(
        f"\n{'size':>6}  {'bytes':>11}  {'cold ms':>9}  {'indexed ms':>10}  "
        f"{'cold/pass':>9}  {'indexed/pass':>12}  {'core ms':>8}  answer"
    )
    for mb, path, size in files:
        payload = json.dumps(
            {
                "session_id": path.stem,
                "transcript_path": str(path),
                "cwd": CWD,
                "hook_event_name": "Stop",
                "stop_hook_active": True,
                "last_assistant_message": "Done.",
            }
        ).encode()
        cold = []
        runs = args.runs if mb < 100 else max(3, args.runs // 2)
        for i in range(runs):
            index = tmp / f"cold-{mb}-{i}.sqlite"
            cold.append(
                wall(
                    [
                        AGENT_TASK,
                        "gate-stop",
                        "--harness",
                        "claude-code",
                        "--deadline-ms",
                        "120000",
                    ],
                    {**env, "AGENT_TASK_GATE_INDEX": str(index)},
                    payload,
                )
            )
        warm_index = tmp / f"warm-{mb}.sqlite"
        warm_env = {**env, "AGENT_TASK_GATE_INDEX": str(warm_index)}
        subprocess.run(
            [AGENT_TASK, "gate", "--transcript", str(path)],
            env=warm_env,
            capture_output=True,
            check=True,
        )
        warm = [
            wall([AGENT_TASK, "gate-stop", "--harness", "claude-code"], warm_env, payload)
            for _ in range(args.runs)
        ]
        # The hook core alone, without the agent-task entry point's module imports.
        core = [
            wall([py, "-m", "taskcli.gate_stop", "--harness", "claude-code"], warm_env, payload)
            for _ in range(args.runs)
        ]
        answer = subprocess.run(
            [AGENT_TASK, "gate", "--transcript", str(path), "--json"],
            env=warm_env,
            capture_output=True,
            check=True,
            text=True,
        )
        rung = json.loads(answer.stdout)["rung_name"]
        p = median_ms(base_pass)
        print(
            f"{mb:>4}MB  {size:>11,}  {median_ms(cold):9.0f}  {median_ms(warm):10.0f}  "
            f"{median_ms(cold) / p:8.1f}x  {median_ms(warm) / p:11.1f}x  "
            f"{median_ms(core):8.0f}  {rung}"
        )

    # Index throughput, in process, against a bare json.loads of the same lines.
    sys.path[:0] = [str(ROOT / "packages" / "taskcore" / "src")]
    from taskcore.donegate.config import GateConfig
    from taskcore.donegate.index import GateIndex

    total = sum(s for _mb, _p, s in files)
    t0 = time.perf_counter()
    for _mb, path, _s in files:
        with open(path, "rb") as f:
            for line in f:
                json.loads(line)
    parse_s = time.perf_counter() - t0
    cfg = GateConfig(
        index_path=tmp / "scan.sqlite",
        claude_root=tmp / "claude" / "projects",
        codex_root=tmp / "codex" / "sessions",
    )
    index = GateIndex(cfg)
    report = index.scan()
    again = index.scan()
    index.close()
    print(
        f"\nindex scan (fresh)    {report.bytes_read / 1e6:8.1f} MB in {report.seconds:6.2f} s"
        f"  = {report.mb_per_s:6.1f} MB/s"
    )
    print(
        f"json.loads baseline   {total / 1e6:8.1f} MB in {parse_s:6.2f} s  = "
        f"{total / 1e6 / parse_s:6.1f} MB/s   (scan/json.loads = "
        f"{report.mb_per_s / (total / 1e6 / parse_s):.2f})"
    )
    print(f"index rescan          {again.bytes_read} bytes read in {again.seconds * 1000:.1f} ms")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
