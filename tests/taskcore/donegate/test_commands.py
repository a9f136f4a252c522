"""The shell classifier: segments, wrappers, exclusions, proof of a pass, writes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.donegate.commands import Kind, analyze, shell_line_from_argv


def kinds(line: str) -> list[tuple[str, bool]]:
    return [(h.kind.value, h.proven) for h in analyze(line).hits]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("pytest -q", [("test", True)]),
        ("cd app && uv run pytest", [("test", True)]),
        ("FOO=1 BAR=2 timeout 60 env X=1 python -m pytest tests", [("test", True)]),
        ("npx jest --ci", [("test", True)]),
        ("poetry run tox -e py311", [("test", True)]),
        ("./node_modules/.bin/vitest run", [("test", True)]),
        ("bash -lc 'cargo test --workspace'", [("test", True)]),
        ("go test ./... && go vet ./...", [("test", True), ("lint", True)]),
        ("npm run build", [("build", True)]),
        ("make", [("build", True)]),
        ("make lint", [("lint", True)]),
        ("uv run ruff check src && uv run mypy --strict src", [("lint", True), ("lint", True)]),
        ("cargo clippy -- -D warnings", [("lint", True)]),
        ("tsc --noEmit", [("lint", True)]),
        ("git commit -m 'x'", [("commit", True)]),
        ("git -C repo commit -am fix", [("commit", True)]),
        ("git push origin main", [("push", True)]),
        ("vercel --prod", [("deploy", True)]),
        ("kubectl apply -f k8s/", [("deploy", True)]),
        ("gh run watch 42 --exit-status", [("ci_watch", True)]),
        ("gh pr checks 17 --watch", [("ci_watch", True)]),
        ("python manage.py test", [("test", True)]),
        ("./gradlew test", [("test", True)]),
    ],
)
def test_classifies_each_kind_through_wrappers(line: str, expected: list[tuple[str, bool]]) -> None:
    assert kinds(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        "pytest --help",
        "pytest -h",
        "cargo test --version",
        "pytest --collect-only -q",
        "pytest --co",
        "jest --listTests",
        "git push --dry-run",
        "git push -n origin main",
        "git commit --dry-run",
        "make -n test",
        "npm publish --dry-run",
        "echo pytest",
        "echo 'now run pytest -q'",
        "printf 'cargo test'",
        "grep -rn pytest .",
        "cat pytest.ini",
        "ls tests",
        "gh run watch 42",
        "npm install",
    ],
)
def test_help_dry_runs_and_mentions_are_not_checks(line: str) -> None:
    assert analyze(line).hits == ()


@pytest.mark.parametrize(
    ("line", "proven"),
    [
        ("pytest | tail -5", False),
        ("pytest 2>&1 | tee log.txt", False),
        ("set -o pipefail; pytest | tail -5", True),
        ("set -euo pipefail\npytest | tail -5", True),
        ("pytest || true", False),
        ("pytest || echo failed", False),
        ("pytest; echo done", False),
        ("set -e; pytest; echo done", True),
        ("pytest &", False),
        ("! pytest", False),
        ("false || pytest", False),
        ("pytest && echo ok", True),
    ],
)
def test_a_pass_is_proven_only_when_the_lines_exit_status_is_the_checks(
    line: str, proven: bool
) -> None:
    hits = [h for h in analyze(line).hits if h.kind is Kind.TEST]
    assert [h.proven for h in hits] == [proven]


def test_each_segment_of_and_or_semicolon_and_pipe_is_classified() -> None:
    a = analyze("ruff check . && pytest; git commit -m x || cargo build | cat")
    assert [h.kind for h in a.hits] == [Kind.LINT, Kind.TEST, Kind.COMMIT, Kind.BUILD]
    assert a.segments == 5


@pytest.mark.parametrize(
    ("line", "writes"),
    [
        ("echo x > src/a.py", ("src/a.py",)),
        ("cat >> notes.md <<'EOF'\npytest -q\nEOF", ("notes.md",)),
        ("sed -i 's/a/b/' src/a.py src/b.py", ("src/a.py", "src/b.py")),
        ("sed -i.bak -e s/a/b/ cfg.ini", ("cfg.ini",)),
        ("perl -pi -e 's/a/b/' x.txt", ("x.txt",)),
        ("git diff | tee patch.diff", ("patch.diff",)),
        ("cp a.py b.py", ("b.py",)),
        ("ruff format .", ("(formatter)",)),
        ("git apply fix.patch", ("(git apply)",)),
        ("pytest > /dev/null 2>&1", ()),
        ("make 2>&1 >/dev/null", ()),
    ],
)
def test_redirection_sed_i_and_rewriting_tools_are_writes(
    line: str, writes: tuple[str, ...]
) -> None:
    assert analyze(line).writes == writes


def test_heredoc_body_is_not_read_as_commands() -> None:
    a = analyze("cat > t.sh <<EOF\npytest -q\ngit push\nEOF\necho done")
    assert a.hits == ()
    assert a.writes == ("t.sh",)


def test_a_check_after_a_write_of_the_same_line_is_after_it() -> None:
    a = analyze("sed -i s/a/b/ x.py && pytest")
    assert a.last_write_index == 0
    assert a.hits[0].index > a.last_write_index
    b = analyze("pytest && sed -i s/a/b/ x.py")
    assert b.hits[0].index < b.last_write_index


def test_argv_of_a_login_shell_is_unwrapped() -> None:
    assert shell_line_from_argv(["/bin/zsh", "-lc", "npm test"]) == "npm test"
    assert shell_line_from_argv(["pytest", "-k", "a b"]) == "pytest -k 'a b'"


def check_analysis(line: str) -> None:
    """The properties every analysis has, whatever the line holds."""
    a = analyze(line)
    assert analyze(line) == a  # a function of the line alone
    assert a.segments >= 0
    for hit in a.hits:
        assert isinstance(hit.kind, Kind)
        assert isinstance(hit.proven, bool)
        assert 0 <= hit.index < a.segments
        assert isinstance(hit.command, str)
        assert len(hit.command) <= 200
    assert [h.index for h in a.hits] == sorted(h.index for h in a.hits)  # in line order
    assert len(set(a.writes)) == len(a.writes)  # each path once
    assert all(isinstance(w, str) and w for w in a.writes)
    assert -1 <= a.last_write_index < max(a.segments, 1)
    assert (a.last_write_index == -1) == (a.writes == ())
    # The same line run by a login shell is the same evidence: ``bash -lc '<line>'`` is
    # unwrapped (for a line that needs no quoting inside single quotes).
    if "'" not in line:
        wrapped = analyze(f"bash -lc '{line}'")
        assert [(h.kind, h.command, h.proven) for h in wrapped.hits] == [
            (h.kind, h.command, h.proven) for h in a.hits
        ]
        assert wrapped.writes == a.writes


@given(st.text(max_size=300))
def test_any_text_gives_a_well_formed_analysis(line: str) -> None:
    check_analysis(line)


@given(
    st.lists(
        st.sampled_from(
            [
                "pytest",
                "git commit -m x",
                "echo hi",
                "cd x",
                "'",
                '"',
                "$(",
                "`",
                "<<EOF",
                "|",
                "&&",
                "||",
                ";",
                "\n",
                ">",
                "2>&1",
                "(",
                ")",
                "\\",
            ]
        ),
        max_size=30,
    )
)
def test_shell_shaped_noise_gives_a_well_formed_analysis(parts: list[str]) -> None:
    line = " ".join(parts)
    check_analysis(line)
    # Nothing that is no test runner is taken for one: a test hit names pytest.
    assert all("pytest" in h.command for h in analyze(line).hits if h.kind is Kind.TEST)
