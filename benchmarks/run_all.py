"""Every goal of issues 14 and 30 in one table: figure, baseline, ratio, goal, meets.

    .venv/bin/python benchmarks/run_all.py [--rounds 15] [--quick]
                                           [--only intake,hooks,queue,workers,postgres]

Each figure is measured beside its baseline in the same process, interleaved (one run of
each case per round, in the same order every round), and reported as the median with its
spread (the middle half of the rounds: p25-p75). Ratios are of medians. Start-up figures
time real processes from ``fork`` to exit with bytecode compiled (``./dev`` compiles it,
as an install does).

Rows:

* intake: ``Codec.decode(TaskResultAssertion)`` + ``verify_observation`` against
  ``json.loads`` + ``hashlib.sha256`` + PyNaCl verify of the same bytes (goal: >= 0.5x the
  baseline's rate);
* hooks: ``agent-task gate-stop`` (a session above the line, silent; below the line, a
  block with the budget written; a transcript that grew by one assistant message since the
  last index pass, and one that grew by a turn with a failing test run: the hook reads the
  new lines, writes the index and blocks; a SubagentStop with ``--subagent`` on a subagent's
  transcript) and ``agent-task task-stop`` (the pass path: two
  local reads of the journal and the work tree, ``qualification`` over HTTP) and
  ``agent-task session-start`` (the SessionStart hook: ``agenttask.leases`` over HTTP, silent
  with nothing held, the context of one held lease), each against ``python -c pass`` (goal
  <= 3x);
* cli: ``agent-task --help`` and ``agent-task call agenttask.get`` against a live service on
  a socket (goal <= 10x ``python -c pass``);
* queue: create + claimNext + checkpoint(DONE) through ``Service.dispatch`` against
  litequeue 0.9 put + pop + done with ``synchronous=FULL`` (read back from the connection),
  one caller (goal >= 0.6x), 8 threads of one service and 8 lean asyncio clients of the HTTP
  app in a child process, each against 8 litequeue threads (goal >= 2x: group commit); the WAL
  frames each commit of one caller's cycle writes (goal <= 8), the statements SQLite runs per
  workflow claim + heartbeat + result cycle (goal <= 30) and the HTTP server's CPU per queue
  request, beside an echo route of the same size driven by the same lean asyncio client (goal
  <= 1.0 ms): the lean-verb goals; the WAL frames of each verb's commit (goal <= 4 per
  verb, issue 30);
* workers: 8 HTTP clients on ``agent-task serve --workers 2`` against ``--workers 1``
  (``bench_workers.py``, goal >= 1.4x);
* postgres: the queue cycle on PostgreSQL against Procrastinate at 1 and 8 workers
  (``bench_postgres.py``, goals >= 0.8x and >= 1.0x).

The machine's load average is printed at the start and the end of the run: on a shared
machine the ratios (same run, interleaved) mean more than the absolute rates.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _goals30 as goals30  # the rows of issue 30's goals
import _hook_rows as hook_rows  # the hook and CLI rows
from _hook_rows import hooks_and_cli
from _measure import (  # re-exported: other benchmarks import them from here
    AGENT_TASK,
    BIN,
    FIXTURES,
    PY,
    ROOT,
    Row,
    blocked,
    interleaved,
    process_ms,
    row,
    silent,
    spread,
    table,
)
from _queue_rows import (  # the queue and lean-verb rows
    _cpu_seconds,
    _lean_post,
    http_cpu,
    journal_statements,
    queue,
    wal_frames,
)

__all__ = [
    "AGENT_TASK",
    "BIN",
    "FIXTURES",
    "PY",
    "ROOT",
    "Row",
    "_cpu_seconds",
    "_lean_post",
    "blocked",
    "interleaved",
    "main",
    "process_ms",
    "row",
    "silent",
    "spread",
    "table",
]


# -- intake ---------------------------------------------------------------------------------


def intake(rounds: int, calls: int) -> list[Row]:
    import nacl.signing
    from bench_observation import SEED, typical_observation
    from taskcore.codec import Codec
    from taskcore.contract import (
        TaskResultAssertion,
        observation_signing_bytes,
        verify_observation,
    )
    from taskcore.digest import OBSERVATION_DOMAIN
    from taskcore.limits import ASSERTION_MAX_BYTES
    from taskcore.signing import public_key_hex

    codec = Codec()
    signed = typical_observation()
    raw = codec.dumps(signed)
    public = public_key_hex(SEED)
    assert signed.executor_provenance is not None
    signing = observation_signing_bytes(signed)
    prefix = OBSERVATION_DOMAIN.encode() + b"\x00" + len(signing).to_bytes(8, "big")
    signature = bytes.fromhex(signed.executor_provenance.signature)
    verify_key = nacl.signing.VerifyKey(bytes.fromhex(public))

    def ours() -> None:
        verify_observation(
            codec.decode(TaskResultAssertion, raw, max_bytes=ASSERTION_MAX_BYTES), public
        )

    def bare() -> None:
        json.loads(raw)
        verify_key.verify(hashlib.sha256(prefix + signing).digest(), signature)

    def rate(fn: Callable[[], None]) -> Callable[[], float]:
        def run() -> float:
            started = time.perf_counter()
            for _ in range(calls):
                fn()
            return calls / (time.perf_counter() - started)

        return run

    got = interleaved({"ours": rate(ours), "bare": rate(bare)}, rounds)
    return [
        row(
            "intake, decode + verify",
            got["ours"],
            "json.loads + sha256 + verify",
            got["bare"],
            ">= 0.5x",
            0.5,
            unit="/s",
            higher_is_better=True,
        )
    ]


def main() -> None:
    global AGENT_TASK  # one switch for every process this script starts
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="few rounds: a smoke run")
    parser.add_argument(
        "--only",
        default="intake,hooks,queue,workers,postgres",
        help="sections (postgres needs a server: AGENT_TASK_TEST_POSTGRES or 127.0.0.1:5432)",
    )
    parser.add_argument(
        "--agent-task",
        default=AGENT_TASK,
        help="the agent-task command to time (to compare another build; default: this venv's)",
    )
    parser.add_argument(
        "--no-task-stop",
        action="store_true",
        help="skip task-stop (it needs a real collection, bubblewrap or netns)",
    )
    args = parser.parse_args()
    AGENT_TASK = args.agent_task
    hook_rows.AGENT_TASK = AGENT_TASK  # where the hook rows read it
    rounds = 3 if args.quick else args.rounds
    only = set(args.only.split(","))
    rows: list[Row] = []
    load_at_start = os.getloadavg()[0]
    if "intake" in only:
        rows += intake(rounds, 50 if args.quick else 300)
    if "hooks" in only:
        rows += hooks_and_cli(rounds, with_task_stop=not args.no_task_stop)
    if "queue" in only:
        rows += queue(rounds, 20 if args.quick else 120, 8)
        rows += wal_frames(20 if args.quick else 100)
        rows += journal_statements(10 if args.quick else 50)
        rows += http_cpu(rounds, 50 if args.quick else 200)
    if "workers" in only:
        rows += goals30.workers(1 if args.quick else 5, 40 if args.quick else 400)
    if "postgres" in only:
        rows += goals30.postgres(1 if args.quick else 3, 24 if args.quick else 240)
    if "waiting" in only:  # issue 28: waiting claims (benchmarks/bench_waiting.py)
        from bench_waiting import run as waiting_rows

        rows += waiting_rows(wakes=30 if args.quick else 200, rounds=1 if args.quick else 3)
    print(
        f"machine: {platform.machine()} cpus={os.cpu_count()} load (1 min) "
        f"{load_at_start:.1f} at start, {os.getloadavg()[0]:.1f} at end "
        f"python={platform.python_version()}"
    )
    print(f"rounds: {rounds} (median [p25-p75])")
    print(table(rows))


if __name__ == "__main__":
    main()
