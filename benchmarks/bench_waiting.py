"""Waiting claims (issue 28): wake-up latency, and what 1,000 waiting claims cost a server.

    .venv/bin/python benchmarks/bench_waiting.py [--backends sqlite,postgresql] [--wakes 200]
        [--waiters 1000] [--calls 300] [--rounds 3] [--server postgresql://postgres@127.0.0.1/postgres]

Per backend, two real ``agent-task serve`` processes on one journal (SQLite: one data dir;
PostgreSQL: one database created here and dropped after), driven by lean asyncio HTTP/1.1
clients on kept-alive connections (no client library in the timings):

* **wake-up latency**: a claimer's ``agenttask.claimNext {waitMs: 30000}`` waits on server A
  (sent 20 ms before); another connection sends ``agenttask.create``, to A (same server) or to
  B (another process: SQLite's polled check, PostgreSQL's ``LISTEN``/``NOTIFY``). Timed from
  the create's first byte sent to the claimer's answer read; p50 and p99 over ``--wakes``
  rounds (goals p50 <= 5 ms, p99 <= 50 ms). The baseline beside it, in the same rounds: a
  create's round trip then a ``claimNext``'s without waiting, one after the other (what the
  two durable commits a wake-up needs cost without any waiting machinery).
* **1,000 waiting claims on one server** (A; 5 tokens of 200, under the per-token bound), in
  ``--rounds`` rounds, each first with none waiting, then with them all waiting:
  - memory growth: A's resident set with them waiting minus before (goal <= 100 MB);
  - CPU while idle: A's CPU time over 5 s with them waiting, as % of one core, beside the same
    5 s with none waiting (goal <= 5 %);
  - other calls: p99 of ``--calls`` sequential calls (create, claimNext, checkpoint DONE, in
    another workspace) with them waiting, against the same calls with none waiting (goal:
    within 20 %, ratio <= 1.2).

Run alone it prints the table; ``benchmarks/run_all.py --only waiting`` adds the same rows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

AGENT_TASK = str(Path(sys.executable).with_name("agent-task"))
WAITERS_PER_TOKEN = 200
IDLE_S = 5.0

Row = dict[str, Any]


# -- servers --------------------------------------------------------------------------------


class Journal:
    """Where both servers keep the journal: a SQLite data dir, or a fresh PostgreSQL database."""

    def __init__(self, backend: str, server: str) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="bench-waiting-"))
        self.url: str | None = None
        self._server = server
        if backend == "postgresql":
            self._name = f"bench_waiting_{os.getpid()}"
            self._admin(f'DROP DATABASE IF EXISTS "{self._name}" WITH (FORCE)')
            self._admin(f"CREATE DATABASE \"{self._name}\" TEMPLATE template0 ENCODING 'UTF8'")
            self.url = urlunsplit(urlsplit(server)._replace(path=f"/{self._name}"))

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self._server, autocommit=True) as conn:
            conn.execute(sql)

    def data_dir(self, i: int) -> Path:
        """Server ``i``'s data dir: the one shared dir on SQLite, one each on PostgreSQL."""
        return self.root / ("data" if self.url is None else f"replica-{i}")

    def tokens(self, workspace: str, tier: str, n: int) -> list[str]:
        from taskcore.actors import Tier
        from taskcore.auth import issue_token
        from taskcore.clock import SystemClock
        from taskcore.store import open_storage

        storage = open_storage(self.data_dir(0), database=self.url)
        try:
            return [
                issue_token(
                    storage,
                    SystemClock(),
                    workspace=workspace,
                    tier=Tier[tier.upper()],
                    autonomy=1,
                    name=f"{workspace}-{tier}-{i}",
                ).token
                for i in range(n)
            ]
        finally:
            storage.close()

    def close(self) -> None:
        if self.url is not None:
            self._admin(f'DROP DATABASE IF EXISTS "{self._name}" WITH (FORCE)')
        shutil.rmtree(self.root, ignore_errors=True)


class Server:
    """One ``agent-task serve`` child on 127.0.0.1 (no token rate limit, room for 1,000+)."""

    def __init__(self, journal: Journal, i: int) -> None:
        argv = [AGENT_TASK, "serve", "--data-dir", str(journal.data_dir(i)), "--port", "0"]
        if journal.url is not None:
            argv += ["--database", journal.url]
        argv += ["--token-rate", "0", "--max-connections", "1500"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
        )
        assert self.proc.stderr is not None
        lines: list[str] = []
        for line in self.proc.stderr:
            lines.append(line)
            if "serving http://" in line:
                url = line.split("serving ", 1)[1].split(" ", 1)[0]
                self.host, port = url.removeprefix("http://").split(":")
                self.port = int(port)
                break
        else:
            raise RuntimeError("agent-task serve did not start:\n" + "".join(lines))
        self.lines = lines
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def log(self) -> str:
        """What the server wrote to stderr (for a failure's report)."""
        return "".join(self.lines[-40:])

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


# -- a lean HTTP/1.1 client -----------------------------------------------------------------


class Conn:
    """One kept-alive connection; ``send`` writes a request, ``answer`` reads its response."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, server: Server) -> Conn:
        reader, writer = await asyncio.open_connection(server.host, server.port)
        return cls(reader, writer)

    def send(self, verb: str, body: object, token: str) -> None:
        data = json.dumps(body).encode()
        self.writer.write(
            f"POST /v/{verb} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {token}\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )

    async def answer(self) -> Any:
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
        body = await self.reader.readexactly(length)
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {body[:300]!r}")
        return json.loads(body)

    async def call(self, verb: str, body: object, token: str) -> Any:
        self.send(verb, body, token)
        return await self.answer()

    def close(self) -> None:
        self.writer.close()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# -- wake-up latency ------------------------------------------------------------------------


async def _create_then_claim(creator: Conn, claimer: Conn, member: str, agent: str) -> float:
    """The baseline: a create's round trip, then a claimNext's (no wait), in ms; then DONE."""
    started = time.perf_counter()
    created = await creator.call("agenttask.create", {"verb": "agent.run"}, member)
    claim = await claimer.call("agenttask.claimNext", {}, agent)
    took = (time.perf_counter() - started) * 1000
    if claim["task"]["taskId"] != created["taskId"]:
        raise RuntimeError(f"claimNext answered {claim}")
    done = {"taskId": created["taskId"], "status": "DONE", "fence": claim["lease"]["fence"]}
    await claimer.call("agenttask.checkpoint", done, agent)
    return took


async def wake_latency(
    a: Server, b: Server, member: str, agent: str, rounds: int
) -> dict[str, list[float]]:
    """Per round, a create on A then on B wakes a claimer waiting on A (ms; see the module)."""
    claimer = await Conn.open(a)
    creators = {"same": await Conn.open(a), "cross": await Conn.open(b)}
    out: dict[str, list[float]] = {"same": [], "cross": [], "serial": []}
    try:
        for i in range(rounds + 5):  # the first 5 warm up
            for where, creator in creators.items():
                claimer.send("agenttask.claimNext", {"waitMs": 30_000}, agent)
                await asyncio.sleep(0.02)  # the claim found nothing and waits
                started = time.perf_counter()
                creator.send("agenttask.create", {"verb": "agent.run"}, member)
                claim_task = asyncio.ensure_future(claimer.answer())
                created = await creator.answer()
                try:
                    claim = await asyncio.wait_for(claim_task, 10.0)
                except TimeoutError:
                    raise RuntimeError(f"a wake-up was lost ({where}): no answer in 10 s") from None
                woke_ms = (time.perf_counter() - started) * 1000
                if not claim["claimed"] or claim["task"]["taskId"] != created["taskId"]:
                    raise RuntimeError(f"the waiting claim answered {claim}")
                done = {"taskId": created["taskId"], "status": "DONE"}
                await claimer.call(
                    "agenttask.checkpoint", {**done, "fence": claim["lease"]["fence"]}, agent
                )
                if i >= 5:
                    out[where].append(woke_ms)
                    if where == "same":
                        out["serial"].append(
                            await _create_then_claim(creator, claimer, member, agent)
                        )
    finally:
        claimer.close()
        for conn in creators.values():
            conn.close()
    return out


# -- 1,000 waiting claims -------------------------------------------------------------------


async def other_calls(server: Server, token: str, calls: int) -> list[float]:
    """Latency (ms) of each call of ``calls // 3`` create + claimNext + checkpoint cycles."""
    conn = await Conn.open(server)
    out: list[float] = []
    try:
        for _ in range(max(1, calls // 3)):
            started = time.perf_counter()
            await conn.call("agenttask.create", {"verb": "agent.run"}, token)
            t1 = time.perf_counter()
            claim = await conn.call("agenttask.claimNext", {}, token)
            t2 = time.perf_counter()
            done = {"taskId": claim["task"]["taskId"], "status": "DONE"}
            await conn.call(
                "agenttask.checkpoint", {**done, "fence": claim["lease"]["fence"]}, token
            )
            t3 = time.perf_counter()
            out += [(t1 - started) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000]
    finally:
        conn.close()
    return out


async def idle_cpu(server: Server) -> float:
    """``server``'s CPU over ``IDLE_S`` seconds, % of one core."""
    before = server.cpu_s()
    await asyncio.sleep(IDLE_S)
    return (server.cpu_s() - before) * 100 / IDLE_S


async def quiet(server: Server, timeout_s: float = 60.0) -> None:
    """Return once ``server`` used under 4 % of a core over half a second (or at the timeout)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        before = server.cpu_s()
        await asyncio.sleep(0.5)
        if server.cpu_s() - before < 0.02:
            return


async def hold_waiters(server: Server, tokens: list[str], n: int) -> list[Conn]:
    """Open ``n`` connections each with a waiting claim (``waitMs`` 30 s) on ``server``."""
    conns: list[Conn] = []
    for i in range(n):
        conn = await Conn.open(server)
        conn.send("agenttask.claimNext", {"waitMs": 30_000}, tokens[i // WAITERS_PER_TOKEN])
        conns.append(conn)
        if i % 100 == 99:
            await asyncio.sleep(0.05)  # let the server read them as they come
    await asyncio.sleep(2.0)  # every first attempt found nothing and waits
    for conn in conns:
        if conn.reader.at_eof() or len(conn.reader._buffer) > 0:  # type: ignore[attr-defined]
            raise RuntimeError("a waiting claim answered early (refused, or woken)")
    return conns


async def many_waiters(
    server: Server, waiter_tokens: list[str], other: str, n: int, calls: int, rounds: int
) -> dict[str, list[float]]:
    """Rounds of none waiting, then ``n`` waiting: RSS, idle CPU and the other calls' latencies.

    The latencies of every round are pooled per case (``calls`` per round each), so the p99s
    compare as many samples, taken alternately on the same server.
    """
    out: dict[str, list[float]] = {
        k: [] for k in ("rss0", "grow", "cpu0", "cpu", "ms0", "ms", "cpu_call0", "cpu_call")
    }
    await other_calls(server, other, calls)  # warm-up
    await quiet(server)
    for _ in range(rounds):
        before = server.cpu_s()
        out["ms0"] += await other_calls(server, other, calls)
        out["cpu_call0"].append((server.cpu_s() - before) * 1000 / calls)
        out["cpu0"].append(await idle_cpu(server))
        rss0 = server.rss_mb()
        started = time.monotonic()
        conns = await hold_waiters(server, waiter_tokens, n)
        out["rss0"].append(rss0)
        out["grow"].append(server.rss_mb() - rss0)
        before = server.cpu_s()
        out["ms"] += await other_calls(server, other, calls)
        out["cpu_call"].append((server.cpu_s() - before) * 1000 / calls)
        out["cpu"].append(await idle_cpu(server))
        if time.monotonic() - started > 28:
            raise RuntimeError("the waits ran out before the measurements ended")
        for conn in conns:
            conn.close()
        await quiet(server)  # each left claim's last attempt is audited: let them all finish
    return out


# -- the rows -------------------------------------------------------------------------------


def _row(
    figure: str, value: float, baseline: str, base: float, unit: str, goal: str, ok: bool | None
) -> Row:
    """One table row; ``ok`` ``None``: a figure for context, with no goal of its own."""
    return {
        "figure": f"{figure}: {value:.3g} {unit}",
        "baseline": f"{baseline}: {base:.3g} {unit}",
        "ratio": f"{value / base:.2f}x" if base else "-",
        "goal": goal,
        "meets": "-" if ok is None else "yes" if ok else "no",
    }


def measure(
    backend: str,
    *,
    server: str,
    wakes: int,
    waiters: int,
    calls: int,
    rounds: int,
) -> list[Row]:
    """The rows of one backend (see the module)."""
    journal = Journal(backend, server)
    servers: list[Server] = []
    try:
        servers = [Server(journal, 0), Server(journal, 1)]
        a, b = servers
        member = journal.tokens("wake", "member", 1)[0]
        agent = journal.tokens("wake", "agent", 1)[0]
        waiter_tokens = journal.tokens("idle", "agent", -(-waiters // WAITERS_PER_TOKEN))
        other = journal.tokens("other", "member", 1)[0]
        wake = asyncio.run(wake_latency(a, b, member, agent, wakes))
        many = asyncio.run(many_waiters(a, waiter_tokens, other, waiters, calls, rounds))
    except Exception:
        for s in servers:
            sys.stderr.write(f"server {s.proc.pid} (exit {s.proc.poll()}):\n{s.log()}\n")
        raise
    finally:
        for s in servers:
            s.close()
        journal.close()
    rows: list[Row] = []
    serial50 = _pct(wake["serial"], 0.5)
    base = "create then claimNext, no wait, p50"
    for where, label in (("same", "same server"), ("cross", "another process")):
        p50, p99 = _pct(wake[where], 0.5), _pct(wake[where], 0.99)
        rows.append(
            _row(
                f"{backend} wake-up p50, {label}",
                p50,
                base,
                serial50,
                "ms",
                "p50 <= 5 ms",
                p50 <= 5,
            )
        )
        rows.append(
            _row(
                f"{backend} wake-up p99, {label}",
                p99,
                base,
                serial50,
                "ms",
                "p99 <= 50 ms",
                p99 <= 50,
            )
        )
    grow, rss0 = max(many["grow"]), statistics.median(many["rss0"])
    cpu, cpu0 = statistics.median(many["cpu"]), statistics.median(many["cpu0"])
    p99, p99_0 = _pct(many["ms"], 0.99), _pct(many["ms0"], 0.99)
    p50, p50_0 = _pct(many["ms"], 0.5), _pct(many["ms0"], 0.5)
    rows += [
        _row(
            f"{backend} RSS growth, {waiters} waiting (max of {rounds})",
            grow,
            "RSS with none waiting",
            rss0,
            "MB",
            "<= 100 MB",
            grow <= 100,
        ),
        _row(
            f"{backend} CPU idle, {waiters} waiting",
            cpu,
            "none waiting",
            cpu0,
            "% of a core",
            "<= 5 %",
            cpu <= 5,
        ),
        _row(
            f"{backend} other calls p99, {waiters} waiting",
            p99,
            "none waiting",
            p99_0,
            "ms",
            "ratio <= 1.2",
            p99 <= 1.2 * p99_0,
        ),
        _row(
            f"{backend} other calls p50, {waiters} waiting",
            p50,
            "none waiting",
            p50_0,
            "ms",
            "(context)",
            None,
        ),
        _row(
            f"{backend} server CPU per other call, {waiters} waiting",
            statistics.median(many["cpu_call"]),
            "none waiting",
            statistics.median(many["cpu_call0"]),
            "ms",
            "(context)",
            None,
        ),
    ]
    return rows


def table(rows: list[Row]) -> str:
    heads = ["figure", "baseline", "ratio", "goal", "meets"]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(str(r[h]) for h in heads) + " |" for r in rows]
    return "\n".join(lines)


def run(
    *,
    backends: str = "sqlite,postgresql",
    server: str | None = None,
    wakes: int = 200,
    waiters: int = 1000,
    calls: int = 300,
    rounds: int = 3,
) -> list[Row]:
    """Every backend's rows (``run_all.py`` calls this)."""
    server = server or os.environ.get(
        "AGENT_TASK_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    rows: list[Row] = []
    for backend in backends.split(","):
        rows += measure(
            backend, server=server, wakes=wakes, waiters=waiters, calls=calls, rounds=rounds
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--server", default=None, help="PostgreSQL server to create a db on")
    parser.add_argument("--wakes", type=int, default=200)
    parser.add_argument("--waiters", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = run(
        backends=args.backends,
        server=args.server,
        wakes=args.wakes,
        waiters=args.waiters,
        calls=args.calls,
        rounds=args.rounds,
    )
    print(
        f"machine: {platform.machine()} cpus={os.cpu_count()} "
        f"load={os.getloadavg()[0]:.1f} python={platform.python_version()}"
    )
    print(table(rows))


if __name__ == "__main__":
    main()
