"""``agent-task serve`` as a child process on 127.0.0.1, as an attacker meets it.

Each adversarial test starts the real console script (the same one a supervisor runs) on an
ephemeral port with its own data directory, talks to it over real sockets, and stops it with
SIGTERM. Helpers here read the server's memory (``/proc``), its log and its journal file.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

AGENT_TASK = str(Path(sys.executable).with_name("agent-task"))


def _limit_descriptors(n: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    return apply


class Served:
    """One ``agent-task serve`` child: ``url``, ``admin`` token, ``log()``, ``stop()``."""

    def __init__(
        self,
        data_dir: Path,
        *args: str,
        env: dict[str, str] | None = None,
        descriptors: int | None = None,
        expect_start: bool = True,
    ) -> None:
        self.data_dir = data_dir
        self.proc = subprocess.Popen(
            [AGENT_TASK, "serve", "--data-dir", str(data_dir), "--port", "0", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
            preexec_fn=_limit_descriptors(descriptors) if descriptors else None,
        )
        self.lines: list[str] = []
        self.url = ""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if "serving http://" in line:
                self.url = line.split("serving ", 1)[1].split(" ", 1)[0]
                break
        if not self.url:
            self.proc.wait(60)
            if expect_start:
                raise AssertionError("the service did not start:\n" + "".join(self.lines))
            return
        # Keep draining stderr so the child never blocks on a full pipe.
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        # One client (building one per request costs ~100 ms of TLS set-up in httpx).
        self.client = httpx.Client(base_url=self.url, timeout=30)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    @property
    def admin(self) -> str:
        return (self.data_dir / "admin.token").read_text().strip()

    def headers(self, token: str | None = None, **extra: str) -> dict[str, str]:
        out = {"Content-Type": "application/json"}
        if token is not None:
            out["Authorization"] = f"Bearer {token}"
        out.update(extra)
        return out

    def post(self, path: str, body: object, token: str | None) -> httpx.Response:
        return self.client.post(
            path, content=json.dumps(body).encode(), headers=self.headers(token)
        )

    def token(self, workspace: str, tier: str = "agent", autonomy: int = 1) -> str:
        """Issue a token with the operator command, against the running service's journal."""
        done = subprocess.run(
            [
                AGENT_TASK,
                "admin",
                "token",
                "create",
                "--data-dir",
                str(self.data_dir),
                "--workspace",
                workspace,
                "--tier",
                tier,
                "--autonomy",
                str(autonomy),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    def rss_peak_kib(self) -> int:
        """The child's peak resident memory so far (``VmHWM``), KiB."""
        return _status_kib(self.proc.pid, "VmHWM")

    def rss_kib(self) -> int:
        return _status_kib(self.proc.pid, "VmRSS")

    def reset_peak(self) -> None:
        """Reset ``VmHWM`` to the current RSS (Linux: write 5 to clear_refs)."""
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as handle:
            handle.write("5")

    def log(self) -> str:
        return "".join(self.lines)

    def stop(self) -> int:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        time.sleep(0.05)
        return self.proc.returncode


def _status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/{pid}/status")


def journal_rows(data_dir: Path, sql: str, args: tuple = ()) -> list[tuple]:
    """Run a read-only query against the served journal (the service may be stopped).

    The SQLite file of ``data_dir``, or on PostgreSQL the database ``AGENT_TASK_DATABASE``
    names (``?`` placeholders become ``%s``).
    """
    url = os.environ.get("AGENT_TASK_DATABASE")
    if url:
        import psycopg

        with psycopg.connect(url) as conn:
            return [tuple(row) for row in conn.execute(sql.replace("?", "%s"), args).fetchall()]
    conn = sqlite3.connect(f"file:{data_dir / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def journal_write(data_dir: Path, sql: str, args: tuple = ()) -> None:
    """Run one statement against the served journal while no service runs (test set-up)."""
    url = os.environ.get("AGENT_TASK_DATABASE")
    if url:
        import psycopg

        with psycopg.connect(url) as conn:
            conn.execute(sql.replace("?", "%s"), args)
        return
    conn = sqlite3.connect(data_dir / "journal.sqlite")
    try:
        with conn:
            conn.execute(sql, args)
    finally:
        conn.close()
