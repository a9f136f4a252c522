"""Load: 16 concurrent HTTP clients drain 5,000 queue tasks, each DONE exactly once.

The real queue verbs through the real app over a real socket: ``agenttask.claimNext`` then
``agenttask.checkpoint`` with ``status: DONE`` and the lease's fence, until the queue is empty.
No timing is asserted (figures live in ``benchmarks/bench_http.py``).
"""

import json
import threading
from collections import Counter

import httpx
import pytest
from taskcore import Actor, Service, Tier
from taskcore.auth import issue_token
from taskhttp import BackgroundServer, create_app

TASKS = 5_000
CLIENTS = 16
CREATOR = Actor(token_id="load-creator", workspace="load", tier=Tier.ADMIN, autonomy=3)


@pytest.mark.slow
def test_sixteen_clients_drain_five_thousand_tasks_each_done_exactly_once(tmp_path):
    service = Service.open(tmp_path)
    created = {
        service.dispatch(
            CREATOR, "agenttask.create", {"verb": "agent.run", "payload": {"i": i}}
        ).json()["taskId"]
        for i in range(TASKS)
    }
    assert len(created) == TASKS
    token = issue_token(service.storage, service.clock, workspace="load", tier=Tier.AGENT).token
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    claims: list[str] = []
    dones: list[str] = []
    failures: list[str] = []
    lock = threading.Lock()

    def worker():
        mine_claims, mine_dones = [], []
        with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
            while True:
                r = client.post("/v/agenttask.claimNext", content=b"{}")
                if r.status_code != 200:
                    failures.append(r.text)
                    return
                answer = r.json()
                if not answer["claimed"]:
                    break
                lease = answer["lease"]
                mine_claims.append(lease["taskId"])
                body = {"taskId": lease["taskId"], "status": "DONE", "fence": lease["fence"]}
                r = client.post("/v/agenttask.checkpoint", content=json.dumps(body))
                if r.status_code != 200 or r.json()["status"] != "DONE":
                    failures.append(r.text)
                    return
                mine_dones.append(lease["taskId"])
        with lock:
            claims.extend(mine_claims)
            dones.extend(mine_dones)

    server = BackgroundServer(create_app(service))
    server.start()
    try:
        threads = [threading.Thread(target=worker) for _ in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        server.stop()
    assert failures == []
    assert Counter(claims).most_common(1)[0][1] == 1, "a task was claimed twice"
    assert Counter(dones).most_common(1)[0][1] == 1, "a task was finished twice"
    assert set(dones) == created
    # The journal agrees: every task is DONE, none is left queued or leased.
    seen, cursor = [], None
    while True:
        request = {"status": "DONE", "limit": 1000, **({"cursor": cursor} if cursor else {})}
        page = service.dispatch(CREATOR, "agenttask.list", request).json()
        seen.extend(t["taskId"] for t in page["tasks"])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(created)
    assert service.dispatch(CREATOR, "agenttask.claimNext", {}).json() == {"claimed": False}
    service.close()
