"""The shell lexer: token kinds, here-documents, comments, never an exception."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from taskcore.donegate.shell import segments, tokenize


def _kinds(line: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(line)]


def test_a_quoted_operator_is_a_word_and_a_bare_one_an_operator():
    assert _kinds('echo "&&" && pytest') == [
        ("w", "echo"),
        ("w", "&&"),
        ("o", "&&"),
        ("w", "pytest"),
    ]


def test_command_substitution_and_fd_redirections_stay_whole():
    assert _kinds("x=$(ls; pwd) make 2>&1") == [
        ("w", "x=$(ls; pwd)"),
        ("w", "make"),
        ("r", ">&"),
        ("w", "1"),
    ]


def test_here_document_bodies_and_comments_are_skipped():
    toks = _kinds("cat > notes.md <<EOF\npytest\nEOF\necho hi # pytest")
    assert ("w", "pytest") not in toks
    assert toks[-1] == ("w", "hi")


def test_segments_carry_their_writes_and_the_operator_that_ended_them():
    segs = segments(tokenize("pytest > out.txt | tail -5; echo done"))
    assert [(s.words, s.writes, s.op) for s in segs] == [
        (["pytest"], ["out.txt"], "|"),
        (["tail", "-5"], [], ";"),
        (["echo", "done"], [], ""),
    ]


@given(st.text(max_size=200))
def test_any_text_lexes_without_an_exception(text):
    for seg in segments(tokenize(text)):
        assert all(isinstance(w, str) for w in seg.words)
