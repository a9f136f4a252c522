"""Anonymous requests cost no durable write each; refusals and calls are rate-limited (item 6).

The attack: 1,500 unauthenticated requests wrote 1,515 audit rows under the single write lock
and tripled a legitimate caller's latency; ``RATE_LIMITED`` was never raised.
"""

from __future__ import annotations

import threading
import time

import httpx

from tests.adversarial.served import Served, journal_rows

FLOOD = 1500
THREADS = 4


def _flood(url: str, n: int) -> list[httpx.Response]:
    out: list[httpx.Response] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        mine = []
        with httpx.Client(base_url=url, timeout=30) as client:
            for i in range(k):
                auth = {} if i % 2 else {"Authorization": "Bearer atk_nope.0000"}
                mine.append(
                    client.post(
                        "/v/agenttask.list",
                        content=b"{}",
                        headers={"Content-Type": "application/json", **auth},
                    )
                )
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=worker, args=(n // THREADS,)) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


def test_an_unauthenticated_flood_is_counted_not_written_row_by_row_and_rate_limited(tmp_path):
    served = Served(tmp_path / "data")
    token = served.admin
    try:
        before = journal_rows(served.data_dir, "SELECT COUNT(*) FROM audit_event")[0][0]
        answers = _flood(served.url, FLOOD)
        statuses = [r.status_code for r in answers]
        assert len(statuses) == FLOOD
        assert set(statuses) <= {401, 429}
        limited = [r for r in answers if r.status_code == 429]
        assert limited, "the address was never rate-limited"
        for r in limited[:5]:
            assert r.json()["code"] == "RATE_LIMITED"
            assert int(r.headers["Retry-After"]) >= 1
        # A valid token from the same address still gets in, and is not slowed to a crawl.
        with httpx.Client(base_url=served.url, timeout=5) as client:
            r = client.post(
                "/v/agenttask.list",
                content=b"{}",
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
        assert r.status_code == 200, r.text
        rows_during = journal_rows(served.data_dir, "SELECT COUNT(*) FROM audit_event")[0][0]
        # Counted in memory, written in batches (every 5 s at most): far fewer rows than calls.
        assert rows_during - before <= 20, rows_during - before
    finally:
        assert served.stop() == 0
    # On a graceful stop the counts are written: every call is accounted for.
    rows = journal_rows(
        served.data_dir,
        "SELECT outcome, SUM(calls), COUNT(*) FROM audit_event WHERE workspace = '' "
        "GROUP BY outcome",
    )
    calls = {outcome: n for outcome, n, _ in rows}
    assert sum(calls.values()) == FLOOD, rows
    assert calls.get("RATE_LIMITED", 0) == len(limited)
    assert sum(count for _, _, count in rows) <= 20


def test_calls_per_token_are_rate_limited_with_retry_after(tmp_path):
    served = Served(tmp_path / "data", "--token-rate", "5", "--token-burst", "10")
    try:
        busy, quiet = served.admin, served.token("default", "admin", 3)
        statuses = [served.post("/v/agenttask.list", {}, busy).status_code for _ in range(30)]
        assert statuses[:10] == [200] * 10
        assert 429 in statuses
        r = served.post("/v/agenttask.list", {}, busy)
        assert r.status_code == 429
        assert r.json()["code"] == "RATE_LIMITED"
        wait = int(r.headers["Retry-After"])
        assert 1 <= wait <= 2
        assert served.post("/v/agenttask.list", {}, quiet).status_code == 200  # per token
        time.sleep(wait)
        assert served.post("/v/agenttask.list", {}, busy).status_code == 200
    finally:
        assert served.stop() == 0
