"""Queue cycles over HTTP beside a trivial JSON echo route on the same server, same run.

    .venv/bin/python benchmarks/bench_http.py [--clients 1,4,16] [--cycles 400] [--rounds 3]

One ``agent-task`` service (``taskhttp.create_app`` under uvicorn, the embedded SQLite journal,
WAL with ``synchronous=FULL``) runs in a child process with one extra route, ``POST
/bench/echo``, that reads the body with the same bounded reader, parses it with the same
strict ``parse_json`` and returns it: the ceiling of the stack (socket, uvicorn, Starlette,
JSON) with no journal, no authentication and no audit.

For each number of concurrent clients (threads in this process, one keep-alive ``httpx``
client each):

* **queue cycle**: ``POST /v/agenttask.claimNext`` then ``POST /v/agenttask.checkpoint``
  with ``status: DONE`` and the lease's fence, until the queue (pre-filled with ``--cycles``
  tasks per client count) is empty. Each call is authenticated, tier/autonomy checked,
  strictly decoded, run in one write transaction with its audit event, and committed with
  fsync before the answer is sent.
* **echo**: the same number of requests (two per cycle) with a body of the checkpoint's size.

Reported per client count: cycles/s and requests/s, p50/p99 latency of one request for both,
and the ratio of echo requests/s to queue requests/s. Rounds interleave queue and echo so disk
and CPU noise hits both alike; the median round is reported.
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
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ECHO_BODY = json.dumps(
    {"taskId": "at_0123456789abcdef0123456789abcdef", "status": "DONE", "fence": 1}
).encode()


# -- the server (child process) -----------------------------------------------------------------
def serve(data_dir: str) -> None:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route
    from taskcore import Service
    from taskcore.codec import dumps, parse_json
    from taskhttp import create_app, serve
    from taskhttp.body import read_body

    async def echo(request: Request) -> Response:
        body = await read_body(request, 256 * 1024)
        return Response(dumps(parse_json(body)), media_type="application/json")

    service = Service.open(data_dir)
    app = create_app(service, routes=[Route("/bench/echo", echo, methods=["POST"])])

    def ready(url: str) -> None:
        print(url, flush=True)

    try:
        serve(app, host="127.0.0.1", port=0, on_ready=ready, log_level="error")
    finally:
        service.close()


# -- the clients ----------------------------------------------------------------------------------
def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _run_threads(n: int, target: Any) -> float:
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def queue_round(url: str, token: str, clients: int, expected: int) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    latencies: list[float] = []
    done: list[str] = []
    lock = threading.Lock()

    def worker(_: int) -> None:
        mine: list[float] = []
        finished: list[str] = []
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            while True:
                t0 = time.perf_counter()
                r = client.post("/v/agenttask.claimNext", content=b"{}")
                t1 = time.perf_counter()
                r.raise_for_status()
                answer = r.json()
                mine.append(t1 - t0)
                if not answer["claimed"]:
                    break
                task_id = answer["lease"]["taskId"]
                body = json.dumps(
                    {"taskId": task_id, "status": "DONE", "fence": answer["lease"]["fence"]}
                )
                t2 = time.perf_counter()
                r = client.post("/v/agenttask.checkpoint", content=body)
                mine.append(time.perf_counter() - t2)
                r.raise_for_status()
                finished.append(task_id)
        with lock:
            latencies.extend(mine)
            done.extend(finished)

    elapsed = _run_threads(clients, worker)
    if len(done) != expected or len(set(done)) != expected:
        raise SystemExit(f"expected {expected} distinct DONE tasks, got {len(done)}")
    requests = len(latencies)
    return {
        "cycles_s": expected / elapsed,
        "req_s": requests / elapsed,
        "p50": _pct(latencies, 0.50),
        "p99": _pct(latencies, 0.99),
    }


def echo_round(url: str, clients: int, total: int) -> dict[str, float]:
    latencies: list[float] = []
    lock = threading.Lock()
    per = total // clients

    def worker(_: int) -> None:
        mine: list[float] = []
        headers = {"Content-Type": "application/json"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            for _ in range(per):
                t0 = time.perf_counter()
                r = client.post("/bench/echo", content=ECHO_BODY)
                mine.append(time.perf_counter() - t0)
                r.raise_for_status()
        with lock:
            latencies.extend(mine)

    elapsed = _run_threads(clients, worker)
    return {
        "req_s": len(latencies) / elapsed,
        "p50": _pct(latencies, 0.50),
        "p99": _pct(latencies, 0.99),
    }


def fill(data_dir: Path, n: int) -> None:
    from taskcore import Actor, Service, Tier

    creator = Actor(token_id="bench-creator", workspace="bench", tier=Tier.MEMBER, autonomy=1)
    service = Service.open(data_dir)
    try:
        for i in range(n):
            body = {"verb": "agent.run", "payload": {"i": i}}
            service.dispatch(creator, "agenttask.create", body)
    finally:
        service.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--cycles", type=int, default=400, help="tasks drained per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return

    from taskcore import Tier
    from taskcore.auth import TokenAdmin

    data = Path(tempfile.mkdtemp(prefix="bench-http-", dir=os.environ.get("BENCH_DIR")))
    with TokenAdmin(data, create=True) as admin:
        token = admin.create(workspace="bench", tier=Tier.AGENT, autonomy=1).token
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(data)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        print(
            f"server {url}, data dir {data}, {args.cycles} cycles per round, "
            f"{args.rounds} rounds (median reported)"
        )
        print()
        header = (
            f"{'clients':>7}  {'queue cycles/s':>14}  {'queue req/s':>11}  {'p50 ms':>7}  "
            f"{'p99 ms':>7}  {'echo req/s':>10}  {'p50 ms':>7}  {'p99 ms':>7}  {'echo/queue':>10}"
        )
        print(header)
        for clients in [int(c) for c in args.clients.split(",")]:
            echo_round(url, clients, 200)  # warm-up: connections, imports, page cache
            queues, echoes = [], []
            for _ in range(args.rounds):
                fill(data, args.cycles)
                queues.append(queue_round(url, token, clients, args.cycles))
                echoes.append(echo_round(url, clients, args.cycles * 2))
            q = sorted(queues, key=lambda r: r["req_s"])[len(queues) // 2]
            e = sorted(echoes, key=lambda r: r["req_s"])[len(echoes) // 2]
            print(
                f"{clients:>7}  {q['cycles_s']:>14.1f}  {q['req_s']:>11.1f}  {q['p50']:>7.2f}  "
                f"{q['p99']:>7.2f}  {e['req_s']:>10.1f}  {e['p50']:>7.2f}  {e['p99']:>7.2f}  "
                f"{e['req_s'] / q['req_s']:>9.1f}x",
                flush=True,
            )
        spread = statistics.pstdev([r["req_s"] for r in queues]) if len(queues) > 1 else 0.0
        print(f"\n(last client count: queue req/s spread over rounds {spread:.1f})")
    finally:
        child.terminate()
        child.wait(60)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
