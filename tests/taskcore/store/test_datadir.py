"""No new journal over the state of an earlier one; --init sets that state aside."""

import threading

import pytest
from taskcore.auth import FIRST_ADMIN_TOKEN_FILENAME
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.authority_key import AUTHORITY_KEY_FILE
from taskcore.store import open_storage
from taskcore.store.datadir import JOURNAL_NAME, check_new_journal, prior_state

pytestmark = pytest.mark.backend_only(
    "sqlite",
    reason="the data-dir journal checks guard DATA_DIR/journal.sqlite; a PostgreSQL journal is not in the data dir",
)


def test_an_empty_or_unrelated_directory_has_no_prior_state(tmp_path):
    assert prior_state(tmp_path) == ()
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "collector").mkdir()
    (tmp_path / "collector" / "key.json").write_text("{}")
    assert prior_state(tmp_path) == ()
    assert check_new_journal(tmp_path) == ()


@pytest.mark.parametrize(
    "name",
    [
        FIRST_ADMIN_TOKEN_FILENAME,
        AUTHORITY_KEY_FILE,
        JOURNAL_NAME + "-wal",
        JOURNAL_NAME + "-shm",
        JOURNAL_NAME + "-journal",
    ],
)
def test_each_artefact_of_an_earlier_service_counts(tmp_path, name):
    (tmp_path / name).write_bytes(b"x")
    assert prior_state(tmp_path) == (name,)
    with pytest.raises(TaskError) as err:
        open_storage(tmp_path, create=True)
    assert err.value.code is ErrorCode.JOURNAL_MISSING
    assert name in err.value.message
    assert not (tmp_path / JOURNAL_NAME).exists()


def test_a_zero_length_journal_counts_and_is_left_alone(tmp_path):
    (tmp_path / JOURNAL_NAME).write_bytes(b"")
    with pytest.raises(TaskError) as err:
        open_storage(tmp_path, create=True)
    assert "empty" in err.value.message
    assert (tmp_path / JOURNAL_NAME).stat().st_size == 0


def test_collector_attempts_count(tmp_path):
    (tmp_path / "collector" / "attempts" / "abc").mkdir(parents=True)
    assert prior_state(tmp_path) == ("collector/attempts",)


def test_init_renames_the_artefacts_aside_and_creates_the_journal(tmp_path):
    (tmp_path / FIRST_ADMIN_TOKEN_FILENAME).write_text("old")
    (tmp_path / (JOURNAL_NAME + "-wal")).write_bytes(b"stale frames")
    storage = open_storage(tmp_path, create=True, init=True)
    try:
        moved = sorted(p.name.split(".orphaned-")[0] for p in storage.set_aside)
        assert moved == [FIRST_ADMIN_TOKEN_FILENAME, JOURNAL_NAME + "-wal"]
        assert all(p.exists() for p in storage.set_aside)
        assert not (tmp_path / FIRST_ADMIN_TOKEN_FILENAME).exists()
        with storage.write() as tx:
            assert tx.audit.count() == 0
    finally:
        storage.close()


def test_an_existing_journal_is_opened_whatever_lies_beside_it(tmp_path):
    open_storage(tmp_path, create=True).close()
    (tmp_path / FIRST_ADMIN_TOKEN_FILENAME).write_text("token")
    storage = open_storage(tmp_path, create=True)
    assert storage.set_aside == ()
    storage.close()


def test_concurrent_first_opens_of_an_empty_directory_all_succeed(tmp_path):
    errors = []

    def opener():
        try:
            open_storage(tmp_path / "data", create=True).close()
        except TaskError as err:  # a concurrent creator must never look like a lost journal
            errors.append(err)

    threads = [threading.Thread(target=opener) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
