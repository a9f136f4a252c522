"""The managed "Workflow tasks" block in the agent instruction files."""

from __future__ import annotations

from taskcore.collector.instructions import (
    BLOCK,
    INSTRUCTION_FILES,
    MANAGED_BEGIN,
    MANAGED_END,
    write_instruction_files,
    write_managed_block,
)


def test_init_repo_writes_and_replaces_the_managed_block_in_place(tmp_path):
    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Project\n\nKeep this.\n")
    assert write_managed_block(agents)
    first = agents.read_text()
    assert first.startswith("# Project\n\nKeep this.\n")
    assert first.count(MANAGED_BEGIN) == 1
    agents.write_text(first.replace("## Workflow tasks", "## Old title") + "\nAfter.\n")
    assert write_managed_block(agents)
    second = agents.read_text()
    assert "## Old title" not in second
    assert second.endswith(MANAGED_END + "\n\nAfter.\n")
    assert not write_managed_block(agents)


def test_a_new_file_starts_with_its_header_and_holds_only_the_block(tmp_path):
    rules = tmp_path / "rules" / "agent-task.mdc"
    assert write_managed_block(rules, header="---\nalwaysApply: true\n---\n")
    assert (
        rules.read_text() == f"---\nalwaysApply: true\n---\n{MANAGED_BEGIN}\n{BLOCK}{MANAGED_END}\n"
    )


def test_a_file_without_a_final_newline_gets_one_before_the_block(tmp_path):
    agents = tmp_path / "AGENTS.md"
    agents.write_text("no newline")
    write_managed_block(agents)
    assert agents.read_text().startswith(f"no newline\n\n{MANAGED_BEGIN}\n")


def test_init_repo_writes_every_instruction_file(tmp_path):
    assert write_instruction_files(tmp_path) == {
        "AGENTS.md": True,
        ".cursor/rules/agent-task.mdc": True,
        ".github/copilot-instructions.md": True,
    }
    assert [name for name, _ in INSTRUCTION_FILES] == list(write_instruction_files(tmp_path))
    assert (tmp_path / ".cursor/rules/agent-task.mdc").read_text().startswith("---\n")
    assert set(write_instruction_files(tmp_path).values()) == {False}
