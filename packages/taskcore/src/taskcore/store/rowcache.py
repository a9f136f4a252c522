"""Rows that never change once committed, shared by the transactions of one storage.

>>> rows = CommittedRows(limit=2)
>>> rows.learn({("requirement", "r", "d1"): ("row",)})
>>> rows.get(("requirement", "r", "d1"))
('row',)
>>> rows.learn({("policy", "r", 1): ("a",), ("policy", "r", 2): ("b",)})
>>> rows.get(("requirement", "r", "d1")) is None
True
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["CommittedRows"]


class CommittedRows:
    """Authority rows that never change once committed, shared by one storage's transactions.

    An installed requirement (by repository and digest) and a policy epoch (by repository and
    epoch) are written once and never updated or deleted, so once a row is known to be
    committed every later transaction may reuse it instead of reading it again. A transaction
    hands over what it read (:meth:`SqliteAuthorityStore.learned`) only once it is known
    committed: a read transaction at its end, a write transaction after its commit returned.
    """

    def __init__(self, limit: int = 1024) -> None:
        self._rows: dict[tuple[Any, ...], Any] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> Any:
        """The committed row under ``key``, or ``None``."""
        return self._rows.get(key)

    def learn(self, rows: dict[tuple[Any, ...], Any]) -> None:
        """Keep ``rows`` (all committed); forget everything first when full."""
        if not rows:
            return
        with self._lock:
            if len(self._rows) + len(rows) > self._limit:
                self._rows.clear()
            self._rows.update(rows)
