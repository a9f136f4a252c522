import os
import stat
import threading

import pytest
from taskcore.actors import Actor, Tier
from taskcore.auth import (
    FIRST_ADMIN_TOKEN_FILENAME,
    RecentAdmissions,
    TokenAdmin,
    authenticate,
    bearer_from_header,
    issue_first_admin_token,
    issue_token,
    list_tokens,
    parse_token,
    read_token_file,
    revoke_token,
)
from taskcore.clock import FakeClock
from taskcore.errors import ErrorCode, TaskError
from taskcore.testing import temp_journal


@pytest.fixture
def storage(tmp_path):
    with temp_journal(tmp_path) as s:
        yield s


def _code(fn, *args, **kwargs):
    with pytest.raises(TaskError) as info:
        fn(*args, **kwargs)
    return info.value.code


def test_issued_token_authenticates_to_its_binding(storage):
    issued = issue_token(
        storage, FakeClock(), workspace="w1", tier=Tier.MEMBER, autonomy=2, name="ci"
    )
    actor = authenticate(storage, issued.token)
    assert (actor.workspace, actor.tier, actor.autonomy, actor.name) == ("w1", Tier.MEMBER, 2, "ci")
    assert actor.token_id == issued.record.token_id


def test_only_the_hash_of_the_secret_is_stored(storage, tmp_path):
    issued = issue_token(storage, FakeClock(), workspace="w1", tier=Tier.AGENT)
    _, secret = parse_token(issued.token)
    assert issued.record.secret_hash != secret
    storage.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert secret.encode() not in blob


@pytest.mark.parametrize("token", ["", "atk_x", "atk_" + "0" * 16 + "_" + "0" * 63, "Bearer x"])
def test_malformed_tokens_are_unauthenticated(storage, token):
    assert _code(authenticate, storage, token) is ErrorCode.UNAUTHENTICATED


def test_right_id_with_wrong_secret_is_unauthenticated(storage):
    issued = issue_token(storage, FakeClock(), workspace="w1", tier=Tier.AGENT)
    forged = issued.token[:-1] + ("0" if issued.token[-1] != "0" else "1")
    assert _code(authenticate, storage, forged) is ErrorCode.UNAUTHENTICATED


def test_revoked_token_is_refused_and_revoke_reports_liveness(storage):
    issued = issue_token(storage, FakeClock(), workspace="w1", tier=Tier.AGENT)
    assert revoke_token(storage, FakeClock(), issued.record.token_id) is True
    assert revoke_token(storage, FakeClock(), issued.record.token_id) is False
    assert _code(authenticate, storage, issued.token) is ErrorCode.TOKEN_REVOKED
    assert _code(revoke_token, storage, FakeClock(), "0" * 16) is ErrorCode.NOT_FOUND


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"workspace": "a b"}, ErrorCode.INVALID_VALUE),
        ({"workspace": "w", "autonomy": 4}, ErrorCode.OUT_OF_BOUNDS),
        ({"workspace": "w", "name": "n" * 129}, ErrorCode.OUT_OF_BOUNDS),
    ],
)
def test_token_bindings_are_validated(storage, kwargs, code):
    assert _code(issue_token, storage, FakeClock(), tier=Tier.AGENT, **kwargs) is code
    assert list_tokens(storage) == ()


def test_list_filters_by_workspace(storage):
    issue_token(storage, FakeClock(), workspace="w1", tier=Tier.AGENT)
    issue_token(storage, FakeClock(), workspace="w2", tier=Tier.AGENT)
    assert [r.workspace for r in list_tokens(storage, workspace="w2")] == ["w2"]
    assert len(list_tokens(storage)) == 2


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer atk_1", "atk_1"),
        ("bearer   atk_1 ", "atk_1"),
        ("Basic abc", None),
        ("Bearer", None),
        ("Bearer a b", None),
        (None, None),
        ("", None),
    ],
)
def test_bearer_header_parsing(header, token):
    assert bearer_from_header(header) == token


def test_token_file_is_read_and_stripped(tmp_path):
    path = tmp_path / "t"
    path.write_text("  atk_x\n")
    assert read_token_file(path) == "atk_x"
    (tmp_path / "empty").write_text("\n")
    assert _code(read_token_file, tmp_path / "empty") is ErrorCode.UNAUTHENTICATED
    assert _code(read_token_file, tmp_path / "missing") is ErrorCode.UNAUTHENTICATED


def test_first_admin_token_is_written_once_with_mode_0600(storage, tmp_path):
    path = issue_first_admin_token(storage, FakeClock(), tmp_path)
    assert path == tmp_path / FIRST_ADMIN_TOKEN_FILENAME
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    actor = authenticate(storage, path.read_text().strip())
    assert (actor.tier, actor.autonomy, actor.workspace) == (Tier.ADMIN, 3, "default")
    assert issue_first_admin_token(storage, FakeClock(), tmp_path) is None
    path.unlink()
    assert issue_first_admin_token(storage, FakeClock(), tmp_path) is None
    assert not path.exists()


def test_concurrent_first_starts_issue_one_token(tmp_path):
    data = tmp_path / "data"
    results = []

    def start():
        with TokenAdmin(data, create=True) as admin:
            results.append(admin.first_admin_token())

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r is not None for r in results) == 1
    with TokenAdmin(data) as admin:
        assert len(admin.list()) == 1


def test_a_stale_token_file_on_a_fresh_journal_is_refused_and_nothing_is_issued(storage, tmp_path):
    (tmp_path / FIRST_ADMIN_TOKEN_FILENAME).write_text("old\n")
    assert _code(issue_first_admin_token, storage, FakeClock(), tmp_path) is (
        ErrorCode.ALREADY_EXISTS
    )
    assert list_tokens(storage) == ()


def test_token_admin_without_create_never_creates_a_journal(tmp_path):
    assert _code(TokenAdmin, tmp_path / "none") is ErrorCode.NOT_FOUND
    assert not (tmp_path / "none").exists()


def test_token_admin_create_list_revoke(tmp_path):
    with TokenAdmin(tmp_path, create=True) as admin:
        issued = admin.create(workspace="w", tier=Tier.ADMIN, autonomy=3)
        assert admin.revoke(issued.record.token_id)
        assert admin.list()[0].revoked_at_ms is not None


def test_recent_admissions_remember_for_their_memory_only():
    now = [100.0]
    recent = RecentAdmissions(memory_ms=1000, clock=lambda: now[0])
    actor = Actor(token_id="t1", workspace="w1", tier=Tier.AGENT, autonomy=1)
    recent.remember("atk_a", actor)
    assert recent.recall("atk_a") == actor
    assert recent.recall("atk_b") is None
    now[0] = 100.999
    assert recent.recall("atk_a") == actor
    now[0] = 101.0
    assert recent.recall("atk_a") is None
    recent.remember("atk_a", actor)  # admitted again: remembered from now
    assert recent.recall("atk_a") == actor
    recent.forget("atk_a")
    assert recent.recall("atk_a") is None


def test_recent_admissions_keep_hashes_only_and_drop_the_oldest_past_their_bound():
    recent = RecentAdmissions(memory_ms=1000, keys_max=2)
    actors = [Actor(token_id=f"t{i}", workspace="w1", tier=Tier.AGENT) for i in range(3)]
    for i, actor in enumerate(actors):
        recent.remember(f"atk_secret{i}", actor)
    assert recent.recall("atk_secret0") is None  # the oldest went first
    assert [recent.recall(f"atk_secret{i}") for i in (1, 2)] == actors[1:]
    assert not any("secret" in key for key in recent._entries)


def test_recent_admissions_with_no_memory_remember_nothing():
    recent = RecentAdmissions(memory_ms=0)
    recent.remember("atk_a", Actor(token_id="t1", workspace="w1", tier=Tier.AGENT))
    assert recent.recall("atk_a") is None
    assert recent._entries == {}
