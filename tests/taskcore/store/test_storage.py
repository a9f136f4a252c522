"""The storage interface: a JoinedStorage runs Storage code inside an open transaction."""

from __future__ import annotations

import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage
from taskcore.store.storage import JoinedStorage
from taskcore.store.tokens_api import TokenRecord


def _token(token_id: str) -> TokenRecord:
    return TokenRecord(
        token_id=token_id,
        name="",
        workspace="w",
        tier="agent",
        autonomy=1,
        secret_hash="0" * 64,
        created_at_ms=1,
    )


def test_joined_blocks_neither_begin_nor_commit(tmp_path):
    storage = open_storage(tmp_path / "d", create=True)
    try:

        def failing_call() -> None:
            with storage.write() as tx:
                joined = JoinedStorage(tx)
                with joined.write() as inner:
                    assert inner is tx
                    inner.tokens.insert(_token("a"))
                with joined.read() as seen:  # sees the uncommitted row of its own transaction
                    assert seen.tokens.get("a") is not None
                raise RuntimeError("the call fails after the joined block ended")

        with pytest.raises(RuntimeError):
            failing_call()
        with storage.read() as tx:  # the joined write rolled back with the call
            assert tx.tokens.get("a") is None
        with storage.write() as tx, JoinedStorage(tx).write() as inner:
            inner.tokens.insert(_token("b"))
        with storage.read() as tx:  # and commits with it
            assert tx.tokens.get("b") is not None
    finally:
        storage.close()


def test_a_joined_read_transaction_refuses_writes(tmp_path):
    storage = open_storage(tmp_path / "d", create=True)
    try:
        with storage.read() as tx:
            joined = JoinedStorage(tx, writable=False)
            with pytest.raises(TaskError) as info, joined.write():
                pass
            assert info.value.code is ErrorCode.INTERNAL
            joined.ping()
            joined.close()  # the transaction is its opener's: nothing is released
            assert tx.tokens.get("x") is None
    finally:
        storage.close()
