"""``agent-task gate-stop``'s command line: the plain forms, argparse, the deadline."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from taskcli import gate_stop
from taskcore.donegate.config import GateConfig

from tests.taskcore.donegate.conftest import FIXTURES
from tests.taskcore.donegate.test_hook import BELOW, claude_payload, env_for


@pytest.mark.parametrize(
    ("argv", "parsed"),
    [
        (["--harness", "claude-code"], ("claude-code", False, 8000, None)),
        (["--harness=codex", "--subagent", "--index", "/x"], ("codex", True, 8000, "/x")),
        (["--harness", "codex", "--deadline-ms", "300"], ("codex", False, 300, None)),
        (["--harness", "cursor"], None),
        (["--harness", "codex", "--harness", "codex"], None),
        (["--harn", "codex"], None),
        (["--harness", "codex", "--deadline-ms", "1_000"], None),
        (["--harness", "codex", "-h"], None),
        ([], None),
    ],
)
def test_only_the_plain_command_lines_take_the_fast_path(argv, parsed):
    from taskcore.limits import GATE_HOOK_DEADLINE_MS

    if parsed is not None and parsed[2] == 8000:
        parsed = (parsed[0], parsed[1], GATE_HOOK_DEADLINE_MS, parsed[3])
    assert gate_stop._args(argv) == parsed


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GateConfig:
    """The done-gate tests' fixture roots, copied, and an environment that points at them."""
    shutil.copytree(FIXTURES / "claude", tmp_path / "claude")
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    config = GateConfig(
        index_path=tmp_path / "data" / "gate-index.sqlite",
        claude_root=tmp_path / "claude" / "projects",
        codex_root=tmp_path / "codex" / "sessions",
    )
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env_for(config, tmp_path).items():
        monkeypatch.setenv(key, value)
    return config


def test_full_main_in_process_reports_the_hooks_shapes(
    roots: GateConfig,
) -> None:
    out = io.StringIO()
    payload = json.dumps(claude_payload(roots, BELOW)).encode()
    code = gate_stop.full_main(
        ["--harness", "claude-code"], stdin=io.BytesIO(payload), stdout=out, exit_on_timeout=False
    )
    assert code == 0
    assert "additionalContext" in json.loads(out.getvalue())["hookSpecificOutput"]


def test_a_wrong_command_line_answers_one_line_in_process(tmp_path: Path) -> None:
    out = io.StringIO()
    code = gate_stop.full_main(
        ["--harness", "cursor"], stdin=io.BytesIO(b"{}"), stdout=out, exit_on_timeout=False
    )
    assert code == 0
    assert "reinstall" in json.loads(out.getvalue())["systemMessage"]


def test_the_argparse_reading_agrees_with_the_plain_forms() -> None:
    argv = ["--harness=codex", "--subagent", "--index", "/x", "--deadline-ms", "300"]
    assert gate_stop._parse(argv) == gate_stop._args(argv) == ("codex", True, 300, "/x")
    with pytest.raises(SystemExit):
        gate_stop._parse(["--harness", "cursor"])
