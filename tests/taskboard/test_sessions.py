"""Board sessions: idle and absolute expiry, the bound on live sessions, CSRF comparison."""

from __future__ import annotations

from taskboard.sessions import SessionStore
from taskcore.testing import FakeClock


def test_a_session_ends_after_its_idle_time_and_a_request_refreshes_it():
    clock = FakeClock(0)
    store = SessionStore(idle_ms=1000, absolute_ms=10_000, now_ms=clock.now_ms)
    session = store.create("atk_secret", "t1", "w1")
    clock.set(900)
    assert store.get(session.session_id) is session
    clock.set(1800)  # 900 ms after the last request
    assert store.get(session.session_id) is session
    clock.set(2801)
    assert store.get(session.session_id) is None
    assert len(store) == 0


def test_a_session_ends_at_its_absolute_age_however_busy():
    clock = FakeClock(0)
    store = SessionStore(idle_ms=1000, absolute_ms=3000, now_ms=clock.now_ms)
    session = store.create("atk_secret", "t1", "w1")
    for now in range(500, 3001, 500):
        clock.set(now)
        assert store.get(session.session_id) is session
    clock.set(3001)
    assert store.get(session.session_id) is None


def test_sign_out_forgets_the_session_and_ids_are_unguessable():
    store = SessionStore()
    a = store.create("atk_a", "t1", "w1")
    b = store.create("atk_b", "t2", "w1")
    assert a.session_id != b.session_id
    assert len(a.session_id) >= 40
    store.end(a.session_id)
    assert store.get(a.session_id) is None
    assert store.get(b.session_id) is b


def test_the_oldest_sessions_go_beyond_the_bound():
    store = SessionStore(max_sessions=2)
    first = store.create("atk_1", "t1", "w")
    store.create("atk_2", "t2", "w")
    store.create("atk_3", "t3", "w")
    assert store.get(first.session_id) is None
    assert len(store) == 2


def test_csrf_is_compared_exactly_and_never_shown_in_repr():
    session = SessionStore().create("atk_secret", "t1", "w1")
    assert session.csrf_ok(session.csrf)
    assert not session.csrf_ok(session.csrf + "x")
    assert not session.csrf_ok(None)
    assert session.csrf not in repr(session)
    assert "atk_secret" not in repr(session)
