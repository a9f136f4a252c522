"""The gate's standard-library helpers agree with the config and index they serve."""

from __future__ import annotations

import hashlib
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
