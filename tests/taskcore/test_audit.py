"""The one audit writer: rows in the caller's transaction, refusals, counted floods."""

from __future__ import annotations

from taskcore.audit import AGGREGATED_DIGEST, ANONYMOUS, AuditLog, append, input_digest
from taskcore.clock import FakeClock
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import AUDIT_VERB_MAX_CHARS
from taskcore.store import open_storage


def _events(storage, workspace="w"):
    with storage.read() as tx:
        return tx.audit.recent(workspace=workspace, limit=100)


def test_append_writes_in_the_callers_transaction_and_rolls_back_with_it(tmp_path):
    storage = open_storage(tmp_path / "d", create=True)
    try:
        try:
            with storage.write() as tx:
                append(
                    tx,
                    at_ms=1,
                    actor="a",
                    workspace="w",
                    operation="x.y",
                    input_digest=input_digest(b"{}"),
                    outcome="OK",
                )
                raise RuntimeError("the act failed after its audit row")
        except RuntimeError:
            pass
        assert _events(storage) == ()
        with storage.write() as tx:
            seq = append(
                tx,
                at_ms=2,
                actor="a",
                workspace="w",
                operation="o" * 500,
                input_digest=input_digest({"k": 1}),
                outcome="OK",
                subject="t1",
            )
        [event] = _events(storage)
        assert event.seq == seq
        assert len(event.operation) == AUDIT_VERB_MAX_CHARS
        assert (event.subject, event.calls) == ("t1", 1)
        assert input_digest({"k": 1}) == input_digest(b'{"k":1}')
    finally:
        storage.close()


def test_refusals_are_written_alone_and_floods_are_counted(tmp_path):
    storage = open_storage(tmp_path / "d", create=True)
    log = AuditLog(storage.write, FakeClock())
    try:
        log.refusal("t1", "w", "op.a", input_digest(b"{}"), TaskError(ErrorCode.NOT_FOUND, "x"))
        for _ in range(3):
            log.refusal(ANONYMOUS, "", "op.b", "d", TaskError(ErrorCode.UNAUTHENTICATED, "x"))
        limited = TaskError(ErrorCode.RATE_LIMITED, "x", retry_after=1)
        log.refusal("t2", "w", "op.c", "d", limited)
        assert [(e.operation, e.outcome) for e in _events(storage)] == [("op.a", "NOT_FOUND")]
        assert log.flush() == 4
        assert log.flush() == 0
        anonymous = [e for e in _events(storage, "") if e.actor == ANONYMOUS]
        assert [(e.calls, e.input_digest) for e in anonymous] == [(3, AGGREGATED_DIGEST)]
        assert [
            (e.operation, e.calls) for e in _events(storage) if e.outcome == "RATE_LIMITED"
        ] == [("op.c", 1)]
    finally:
        log.close()
        storage.close()


def test_a_refusal_storage_cannot_take_is_kept_and_written_later(tmp_path):
    storage = open_storage(tmp_path / "d", create=True)
    broken = {"on": True}

    def write():
        if broken["on"]:
            raise OSError("disk gone")
        return storage.write()

    log = AuditLog(write, FakeClock())
    try:
        log.refusal("t1", "w", "op.a", "d", TaskError(ErrorCode.CONFLICT, "x"))  # never raises
        assert log.flush() == 0  # still failing: the count is kept
        broken["on"] = False
        assert log.flush() == 1
        assert [(e.outcome, e.calls) for e in _events(storage)] == [("CONFLICT", 1)]
    finally:
        log.close()
        storage.close()
