"""A client process of tests/replicas/test_waiting_claims.py: a waiting claimer or a creator.

Run as ``python -m tests.replicas.waiting_client claim URL TOKEN STOP_FILE WAIT_MS`` or
``python -m tests.replicas.waiting_client create URL TOKEN COUNT SEED``. It prints one JSON
object on stdout when it ends:

* a claimer calls ``agenttask.claimNext {waitMs}`` in a loop and checkpoints every task it is
  handed ``DONE`` at the lease's fence; it stops at the first ``claimed: false`` once
  ``STOP_FILE`` exists (the creators are done) and prints
  ``{"done": [[taskId, fence], ...], "woken": n, "calls": n, "failures": [...]}``, where
  ``woken`` counts the claims answered with a task after the call had waited at least 50 ms;
* a creator creates ``COUNT`` tasks with a short random pause between them (so the claimers
  find the queue empty and wait) and prints ``{"created": [taskId, ...], "calls": n,
  "failures": [...]}``.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import httpx


def _post(client: httpx.Client, verb: str, body: object, token: str) -> httpx.Response:
    return client.post(
        f"/v/{verb}",
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )


def claim(url: str, token: str, stop_file: Path, wait_ms: int) -> dict[str, Any]:
    """Claim with ``waitMs`` and finish what is handed out, until empty after the stop."""
    done: list[list[Any]] = []
    failures: list[str] = []
    calls = woken = 0
    with httpx.Client(base_url=url, timeout=wait_ms / 1000 + 60) as client:
        while True:
            stopping = stop_file.exists()  # read before the claim: a later empty answer ends
            started = time.monotonic()
            r = _post(client, "agenttask.claimNext", {"waitMs": wait_ms}, token)
            calls += 1
            if r.status_code != 200:
                failures.append(f"claimNext {r.status_code} {r.text}")
                break
            answer = r.json()
            if not answer["claimed"]:
                if stopping:
                    break
                continue
            if time.monotonic() - started >= 0.05:
                woken += 1
            task_id, fence = answer["task"]["taskId"], answer["lease"]["fence"]
            body = {"taskId": task_id, "status": "DONE", "fence": fence}
            r = _post(client, "agenttask.checkpoint", body, token)
            calls += 1
            if r.status_code != 200:
                failures.append(f"checkpoint {task_id} {r.status_code} {r.text}")
                continue
            done.append([task_id, fence])
    return {"done": done, "woken": woken, "calls": calls, "failures": failures}


def create(url: str, token: str, count: int, seed: int) -> dict[str, Any]:
    """Create ``count`` tasks, pausing 0-30 ms between them."""
    rng = random.Random(seed)
    created: list[str] = []
    failures: list[str] = []
    calls = 0
    with httpx.Client(base_url=url, timeout=60) as client:
        for _ in range(count):
            time.sleep(rng.uniform(0, 0.03))
            r = _post(client, "agenttask.create", {"verb": "agent.run"}, token)
            calls += 1
            if r.status_code != 200:
                failures.append(f"create {r.status_code} {r.text}")
                continue
            created.append(r.json()["taskId"])
    return {"created": created, "calls": calls, "failures": failures}


def main(argv: list[str]) -> None:
    """Run one role (see the module) and print its JSON summary."""
    role, url, token = argv[0], argv[1], argv[2]
    if role == "claim":
        out = claim(url, token, Path(argv[3]), int(argv[4]))
    else:
        out = create(url, token, int(argv[3]), int(argv[4]))
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
