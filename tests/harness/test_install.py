"""The pinned-harness installer: where the cache is, what a missing npm says."""

from __future__ import annotations

import pytest

from tests.harness import install


def test_the_cache_follows_the_override_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENT_TASK_HARNESS_CACHE", str(tmp_path / "c"))
    assert install.cache_root() == tmp_path / "c"
    monkeypatch.delenv("AGENT_TASK_HARNESS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert install.cache_root() == tmp_path / "x" / "agent-task" / "harness"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert install.cache_root() == tmp_path / "h" / ".cache" / "agent-task" / "harness"


def test_a_finished_install_is_found_without_npm(monkeypatch, tmp_path):
    pin = install.PINS["codex"]
    prefix = tmp_path / f"codex@{pin.version}"
    prefix.mkdir()
    (prefix / ".complete").write_text("x\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    found = install.ensure("codex", root=tmp_path)
    assert found.prefix == prefix
    assert found.binary == prefix / "node_modules" / ".bin" / "codex"


def test_without_npm_the_error_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(install.InstallError, match="npm is not on PATH"):
        install.ensure("codex", root=tmp_path)
    assert not (tmp_path / f"codex@{install.PINS['codex'].version}").exists()


def test_every_pin_is_exact():
    for pin in install.PINS.values():
        assert pin.version[0].isdigit()
        assert not any(c in pin.version for c in "^~*<> ")
