"""The SessionStart hook with the CLI's OAuth grant (``agent setup --oauth``), against its budget.

One live server (``BackgroundServer`` on 127.0.0.1, a fresh SQLite journal); the grant comes
from the real ``agent-task agent login`` flow (consent by the approval operation, the browser's
redirect as an HTTP GET of the loopback listener). Rounds interleave, in one invocation:

* ``python -c pass`` (the baseline: the budget is <= 3x);
* ``session-start --token-file`` (the bearer token's hook, ``/v/agenttask.leases``);
* ``session-start --grant-file``, a fresh access token (``agenttask_leases`` over ``/mcp``);
* the same with a stale access token: one refresh at ``/token`` (rotation) first.

Each hook's answer is checked (silent: nothing held, no ``systemMessage``).

    .venv/bin/python benchmarks/bench_session_grant.py --rounds 15
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from taskcore import Service, Tier
from taskcore.auth import TokenAdmin
from taskhttp import BackgroundServer, create_app

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_all import AGENT_TASK, PY, interleaved, process_ms, row, table


def _login(url: str, person: str, grant: Path) -> None:
    proc = subprocess.Popen(
        [AGENT_TASK, "agent", "login", "--url", url, "--grant-file", str(grant), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    seen = b""
    found = None
    while found is None:
        select.select([proc.stderr], [], [], 30)
        chunk = os.read(proc.stderr.fileno(), 65536)
        if not chunk:
            raise RuntimeError(f"login printed no URL: {seen!r}")
        seen += chunk
        found = re.search(r"(http://127\.0\.0\.1:\d+/authorize\?\S+)", seen.decode())
    consent = httpx.get(found.group(1), follow_redirects=False, timeout=30).headers["location"]
    decided = httpx.post(
        url + "/v/oauth.request.approve",
        json={"requestId": consent.rsplit("/", 1)[1], "tier": "agent", "autonomy": 1},
        headers={"Authorization": f"Bearer {person}"},
        timeout=30,
    ).json()
    httpx.get(decided["redirectTo"], timeout=30)
    if proc.wait(timeout=60) != 0:
        raise RuntimeError(f"login failed: {proc.stderr.read()!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-grant-") as tmp_text:
        tmp = Path(tmp_text)
        data = tmp / "service"
        with TokenAdmin(data, create=True) as admin:
            person = admin.create(workspace="w1", tier=Tier.MEMBER, autonomy=2, name="person")
            agent = admin.create(workspace="w1", tier=Tier.AGENT, autonomy=1, name="agent")
        token_file = tmp / "agent.token"
        token_file.write_text(agent.token + "\n")
        service = Service.open(data)
        server = BackgroundServer(create_app(service))
        url = server.start()
        try:
            fresh, stale = tmp / "fresh.json", tmp / "stale.json"
            _login(url, person.token, fresh)
            _login(url, person.token, stale)

            def hook(*credential: str, expire: Path | None = None) -> float:
                if expire is not None:
                    grant = json.loads(expire.read_text())
                    grant["expiresAtMs"] = 0
                    expire.write_text(json.dumps(grant))
                argv = [AGENT_TASK, "session-start", "--url", url, *credential]
                started = time.perf_counter()
                done = subprocess.run(
                    argv, input=b'{"source": "startup"}', capture_output=True, check=False
                )
                elapsed = (time.perf_counter() - started) * 1000
                if done.returncode != 0 or done.stdout:
                    raise RuntimeError(f"session-start answered {done.stdout[:300]!r}")
                return elapsed

            got = interleaved(
                {
                    "pass": lambda: process_ms([PY, "-c", "pass"]),
                    "token": lambda: hook("--token-file", str(token_file)),
                    "grant": lambda: hook("--grant-file", str(fresh)),
                    "refresh": lambda: hook("--grant-file", str(stale), expire=stale),
                },
                args.rounds,
            )
        finally:
            server.stop()
            service.close()
    base = got["pass"]
    rows = [
        row(
            "session-start --token-file (silent)",
            got["token"],
            "python -c pass",
            base,
            "<= 3x",
            3.0,
        ),
        row(
            "session-start --grant-file, fresh (silent)",
            got["grant"],
            "python -c pass",
            base,
            "<= 3x",
            3.0,
        ),
        row(
            "session-start --grant-file, refresh first",
            got["refresh"],
            "python -c pass",
            base,
            "(informational)",
            1e9,
        ),
    ]
    print(table(rows))


if __name__ == "__main__":
    main()
