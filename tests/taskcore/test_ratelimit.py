"""Token buckets per key and the bounded refusal tally."""

import threading

from hypothesis import given
from hypothesis import strategies as st
from taskcore.clock import FakeClock
from taskcore.ratelimit import OVERFLOW, RateLimiter, RateLimits, RefusalTally


def test_a_bucket_allows_its_burst_then_refills_at_its_rate():
    clock = FakeClock()
    limiter = RateLimiter(rate=2.0, burst=3, clock=clock)
    assert [limiter.take("k").allowed for _ in range(4)] == [True, True, True, False]
    clock.advance(500)  # one unit back
    assert limiter.take("k").allowed
    assert not limiter.take("k").allowed


def test_a_refusal_says_when_to_retry_in_whole_seconds():
    clock = FakeClock()
    limiter = RateLimiter(rate=0.25, burst=1, clock=clock)
    assert limiter.take("k").allowed
    decision = limiter.take("k")
    assert (decision.allowed, decision.retry_after) == (False, 4)
    assert limiter.peek("k") == decision
    clock.advance(4000)
    assert limiter.take("k").allowed


def test_keys_are_independent_and_bounded():
    clock = FakeClock()
    limiter = RateLimiter(rate=1.0, burst=1, keys_max=2, clock=clock)
    assert limiter.take("a").allowed
    assert limiter.take("b").allowed
    assert not limiter.take("a").allowed
    assert limiter.take("c").allowed  # forgets the least recently used key ("b")
    assert len(limiter) == 2
    assert limiter.take("b").allowed


def test_a_rate_of_zero_limits_nothing():
    limiter = RateLimiter(rate=0, burst=1)
    assert not limiter.enabled
    assert all(limiter.take("k").allowed for _ in range(100))


def test_threads_never_take_more_than_the_burst():
    limiter = RateLimiter(rate=0.001, burst=50, clock=FakeClock())
    allowed = []

    def worker():
        allowed.extend(d.allowed for d in (limiter.take("k") for _ in range(40)))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert allowed.count(True) == 50


@given(st.lists(st.integers(0, 2000), max_size=50))
def test_allowed_calls_never_exceed_burst_plus_rate_times_time(gaps):
    clock = FakeClock()
    limiter = RateLimiter(rate=3.0, burst=5, clock=clock)
    allowed = 0
    for gap in gaps:
        clock.advance(gap)
        allowed += limiter.take("k").allowed
    assert allowed <= 5 + 3.0 * sum(gaps) / 1000 + 1e-9


def test_the_defaults_are_the_documented_limits():
    limits = RateLimits()
    assert limits.token_calls_burst >= limits.token_calls_per_second
    assert limits.address_refusals_burst > 0


def test_the_tally_counts_drains_and_restores():
    tally = RefusalTally(clock=FakeClock(), flush_seconds=5)
    for _ in range(3):
        tally.add("anonymous", "", "agenttask.list", "UNAUTHENTICATED")
    tally.add("t1", "w", "agenttask.list", "RATE_LIMITED")
    assert tally.pending() == 4
    counts = tally.drain()
    assert counts == {
        ("anonymous", "", "agenttask.list", "UNAUTHENTICATED"): 3,
        ("t1", "w", "agenttask.list", "RATE_LIMITED"): 1,
    }
    assert tally.pending() == 0
    tally.restore(counts)
    assert tally.pending() == 4


def test_the_tally_is_due_only_after_its_interval_and_only_with_counts():
    clock = FakeClock()
    tally = RefusalTally(clock=clock, flush_seconds=5)
    assert not tally.due()
    tally.add("anonymous", "", "x", "UNAUTHENTICATED")
    assert not tally.due()
    clock.advance(5000)
    assert tally.due()


@given(st.lists(st.text(max_size=8), max_size=300))
def test_the_tally_stays_bounded_whatever_the_operations_are(names):
    tally = RefusalTally(clock=FakeClock(), keys_max=16)
    for name in names:
        tally.add("anonymous", "", name, "UNAUTHENTICATED")
    counts = tally.drain()
    assert len(counts) <= 16 + 1  # the keys, plus one overflow key per outcome
    assert sum(counts.values()) == len(names)
    assert all(k[2] != OVERFLOW or k[0] == OVERFLOW for k in counts)


def test_a_call_naming_the_operation_star_never_reads_as_the_overflow_key():
    # Found by the property above: a refused request for the verb "*" was counted under the
    # overflow key's operation, so its audit row looked like an overflow row.
    tally = RefusalTally(clock=FakeClock(), keys_max=16)
    tally.add("anonymous", "", OVERFLOW, "UNAUTHENTICATED")
    assert tally.drain() == {("anonymous", "", "'*'", "UNAUTHENTICATED"): 1}
