"""The gate's standard-library helpers agree with the config and index they serve."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

import pytest
from taskcore.donegate import light
from taskcore.donegate.config import GateConfig, harness_of


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"CLAUDE_CONFIG_DIR": "~/cc", "CODEX_HOME": "/x/codex"},
        {
            "AGENT_TASK_CLAUDE_PROJECTS_DIR": "/p",
            "AGENT_TASK_CODEX_SESSIONS_DIR": "~/s",
            "AGENT_TASK_DSH_SESSIONS_DIR": "/d",
            "AGENT_TASK_GATE_INDEX": "~/i.sqlite",
        },
        {"XDG_DATA_HOME": "/xdg"},
    ],
)
def test_locations_are_the_configs(monkeypatch, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    config = GateConfig.from_env()
    index, claude, codex, dsh = light.env_locations()
    assert (Path(index), Path(claude), Path(codex)) == (
        config.index_path,
        config.claude_root,
        config.codex_root,
    )
    assert (Path(dsh) if dsh else None) == config.dsh_root
    assert (
        Path(light.env_locations("/given")[0])
        == GateConfig.from_env(index_path=Path("/given")).index_path
    )


def test_the_harness_is_found_by_root_then_by_the_first_line(roots: GateConfig, tmp_path):
    for path in [*roots.claude_root.rglob("*.jsonl"), *roots.codex_root.rglob("*.jsonl")]:
        real = str(path.resolve())
        assert light.harness_of_real(real, [(h, str(r)) for h, r in roots.roots()]) == (
            harness_of(path, roots)
        )
    loose = tmp_path / "loose.jsonl"
    loose.write_text('{"type":"session_meta","payload":{}}\n')
    assert light.harness_of_real(str(loose), []) == "codex"


def test_the_head_digest_is_of_the_first_complete_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}')
    assert light.head_digest(str(path)) == ""
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    assert light.head_digest(str(path)) == hashlib.sha256(b'{"a": 1}').hexdigest()[:32]
    assert light.head_digest(str(tmp_path / "missing")) == ""


def test_the_repository_is_the_nearest_ancestor_with_git(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    assert light.repository_of(str(tmp_path / "repo" / "a" / "b")) == str(tmp_path / "repo")
    assert light.repository_of("") == ""


# -- a Codex rollout written behind the turn -------------------------------------------------


def _late(path: Path, text: bytes, after_s: float) -> threading.Thread:
    def append() -> None:
        time.sleep(after_s)
        with open(path, "ab") as f:
            f.write(text)

    thread = threading.Thread(target=append)
    thread.start()
    return thread


def test_wait_for_rollout_returns_once_the_last_message_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(light.ROLLOUT_WAIT_ENV)  # the conftest's "0": the bound as installed
    rollout = tmp_path / "rollout-2026-12-02T10-00-00-x.jsonl"
    rollout.write_bytes(b'{"type":"session_meta"}\n')
    message = 'Done: "add" is in calc.py\n\u00e9t\u00e9 \u2713'
    line = json.dumps({"last_agent_message": message}, ensure_ascii=False).encode() + b"\n"
    thread = _late(rollout, line, 0.3)
    started = time.monotonic()
    assert light.wait_for_rollout(str(rollout), message, 5_000) is True
    waited = time.monotonic() - started
    thread.join()
    assert 0.25 <= waited < 4


def test_wait_for_rollout_does_not_wait_for_what_is_there_or_for_nothing(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout-2026-12-02T10-00-00-x.jsonl"
    rollout.write_text(json.dumps({"text": "x" * 500 + "all 42 tests pass."}) + "\n")
    started = time.monotonic()
    assert light.wait_for_rollout(str(rollout), "x" * 500 + "all 42 tests pass.", 5_000)
    assert light.wait_for_rollout(str(rollout), None, 5_000)
    assert light.wait_for_rollout(str(rollout), "   ", 5_000)
    assert light.wait_for_rollout(str(tmp_path / "rollout-gone.jsonl"), "anything", 5_000)
    other = tmp_path / "session.jsonl"  # not a Codex rollout (a dsh session): no wait
    other.write_text("{}\n")
    assert light.wait_for_rollout(str(other), "never written", 5_000)
    assert time.monotonic() - started < 1


def test_wait_for_rollout_gives_up_after_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rollout = tmp_path / "rollout-2026-12-02T10-00-00-x.jsonl"
    rollout.write_bytes(b'{"type":"session_meta"}\n')
    monkeypatch.delenv(light.ROLLOUT_WAIT_ENV)
    started = time.monotonic()
    assert light.wait_for_rollout(str(rollout), "never written", 200) is False
    assert 0.2 <= time.monotonic() - started < 2
    monkeypatch.setenv(light.ROLLOUT_WAIT_ENV, "0")  # the operator's bound: look once
    started = time.monotonic()
    assert light.wait_for_rollout(str(rollout), "never written", 60_000) is False
    assert time.monotonic() - started < 1
