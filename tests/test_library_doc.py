"""docs/library.md runs: every example on the page, in order, as one doctest.

The page is the library guide (issue 27): a program that opens a journal, creates, claims
and finishes a task through ``Service.dispatch``, signs and verifies an observation and
checks the golden vectors. An example that stops matching the code fails here.
"""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "library.md"


def test_every_example_in_the_library_guide_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # anything an example creates lands in a temporary directory
    monkeypatch.delenv("AGENT_TASK_DATABASE", raising=False)  # the page opens SQLite journals
    monkeypatch.setenv("AGENT_TASK_DATA_DIR", str(tmp_path / "default-data"))
    test = doctest.DocTestParser().get_doctest(
        DOC.read_text(encoding="utf-8"), {}, DOC.name, str(DOC), 0
    )
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    runner.run(test, out=report.append)
    if runner.failures:
        pytest.fail("".join(report), pytrace=False)
    assert runner.tries >= 40  # the page's examples were found and run
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no stray directory was made


def test_the_public_modules_table_names_what_exists():
    import importlib
    import re

    table = DOC.read_text(encoding="utf-8").split("## The public modules", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) >= 8
    for row in rows:
        modules_cell, names_cell = row.split("|")[1:3]
        modules = [importlib.import_module(m) for m in re.findall(r"`([\w.]+)`", modules_cell)]
        for name in re.findall(r"`(\w+)`", names_cell):
            assert any(hasattr(m, name) for m in modules), (name, modules_cell)
