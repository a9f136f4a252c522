"""Committed immutable rows shared by a storage's transactions."""

import threading

from taskcore.store.rowcache import CommittedRows


def test_learned_rows_are_found_until_the_bound_forgets_them():
    rows = CommittedRows(limit=3)
    rows.learn({("requirement", "r", "a"): ("a",), ("policy", "r", 1): ("p",)})
    assert rows.get(("requirement", "r", "a")) == ("a",)
    assert rows.get(("policy", "r", 1)) == ("p",)
    assert rows.get(("policy", "r", 2)) is None
    rows.learn({("policy", "r", 2): ("q",), ("policy", "r", 3): ("s",)})
    assert rows.get(("requirement", "r", "a")) is None  # over the bound: started afresh
    assert rows.get(("policy", "r", 3)) == ("s",)


def test_threads_learn_at_once():
    rows = CommittedRows(limit=10_000)

    def learn(t: int) -> None:
        for i in range(500):
            rows.learn({("policy", str(t), i): (t, i)})

    pool = [threading.Thread(target=learn, args=(t,)) for t in range(8)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert all(rows.get(("policy", str(t), i)) == (t, i) for t in range(8) for i in range(500))
