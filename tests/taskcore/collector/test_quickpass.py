"""The slim pass's own refusals; the whole flow is held to the full hook by
``tests/taskcli/test_task_stop.py`` (every scenario run both ways, real processes)."""

from __future__ import annotations

import pytest
from taskcore.collector.quickpass import Asked, slim_pass
from taskcore.collector.quickstop import UndecidedError


def _never(*_args):
    raise AssertionError("the slim pass asked the service before deciding it could")


def _slim(tmp_path, asked: list[Asked], *, data_dir: str, token_file: str) -> None:
    """The slim pass for Change ``c1`` of ``r``/``p``, with a service that must not be asked."""
    slim_pass(
        b'{"session_id": "s1"}',
        change="c1",
        repository="r",
        profile="p",
        workspace=str(tmp_path),
        data_dir=data_dir,
        token_file=token_file,
        request=_never,
        post=_never,
        failure=OSError,
        asked=asked,
    )


def test_a_relative_token_file_goes_to_the_full_hook_before_any_exchange(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    asked: list[Asked] = []
    with pytest.raises(UndecidedError, match="relative token file"):
        _slim(tmp_path, asked, data_dir=str(tmp_path / "data"), token_file="token")
    assert asked == []


def test_no_subject_in_a_missing_data_dir_goes_to_the_full_hook(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    asked: list[Asked] = []
    with pytest.raises(UndecidedError):
        _slim(
            tmp_path, asked, data_dir=str(tmp_path / "no-data"), token_file=str(tmp_path / "token")
        )
    assert asked == []
