"""The queue cycle's PostgreSQL round trips, per verb (issue 30): what docs/performance.md says.

Counted as the benchmark's pass counted them: psycopg's ``Cursor.execute`` patched around
one steady-state cycle (create + claimNext + checkpoint DONE through ``Service.dispatch``),
after warm-up cycles (statements prepared once per connection are not counted again).
"""

from __future__ import annotations

import psycopg
import pytest
from taskcore import Actor, FakeClock, Service, Tier

MEMBER = Actor(token_id="rt-member", workspace="rt", tier=Tier.MEMBER, autonomy=1)
WORKER = Actor(token_id="rt-worker", workspace="rt", tier=Tier.AGENT, autonomy=1)
CREATE = b'{"verb":"agent.run","payload":{"n":1}}'


def test_a_queue_cycle_is_eight_round_trips(
    postgres_url: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_TASK_DATABASE", postgres_url)
    service = Service.open(tmp_path / "data", clock=FakeClock(1_700_000_000_000))
    sent: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(self, query, *args, **kwargs):  # type: ignore[no-untyped-def]
        sent.append(str(query))
        return execute(self, query, *args, **kwargs)

    def cycle() -> dict[str, list[str]]:
        trips: dict[str, list[str]] = {}
        sent.clear()
        service.dispatch(MEMBER, "agenttask.create", CREATE)
        trips["create"], sent[:] = list(sent), []
        claim = service.dispatch(WORKER, "agenttask.claimNext", b"{}").json()
        assert claim["claimed"]
        trips["claimNext"], sent[:] = list(sent), []
        lease = claim["lease"]
        body = {"taskId": lease["taskId"], "status": "DONE", "fence": lease["fence"]}
        assert service.dispatch(WORKER, "agenttask.checkpoint", body).json()["status"] == "DONE"
        trips["checkpoint"] = list(sent)
        return trips

    try:
        monkeypatch.setattr(psycopg.Cursor, "execute", counted)
        for _ in range(8):  # warm: psycopg's prepared statements, the pool
            cycle()
        trips = cycle()
    finally:
        monkeypatch.undo()
        service.close()
    counts = {verb: len(statements) for verb, statements in trips.items()}
    assert counts == {"create": 2, "claimNext": 3, "checkpoint": 3}, trips
    # create: BEGIN + lock + token re-check; then task insert + audit + NOTIFY + COMMIT.
    assert trips["create"][1].startswith("INSERT INTO queue_task")
    assert trips["create"][1].rstrip().endswith("COMMIT")
    # checkpoint: the task read goes with the token re-check (two reads after the BEGIN).
    first = trips["checkpoint"][0]
    assert first.startswith("BEGIN")
    assert first.count("SELECT ") == 3  # the writer lock, the token, the task
    assert "EXECUTE " not in first  # no SQL-level prepared statement (PgBouncer: deploy.md)
    assert "FOR UPDATE" in first.split(";")[-1]
