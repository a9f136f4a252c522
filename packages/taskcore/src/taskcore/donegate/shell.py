r"""The shell lexer of the done gate: words, operators, redirections, simple commands.

:func:`tokenize` splits shell text into words (quotes removed, ``$(...)``, ``${...}`` and
backquotes kept whole), control operators (``&&``, ``||``, ``;``, ``|``, ``&``, newline, ...)
and redirections (``>``, ``2>&1``, ``<<EOF``, ...), skipping ``#`` comments and the bodies of
here-documents; :func:`segments` groups the tokens into simple commands, each with the files
its redirections write and the operator that ended it. It never raises on any text.

Why not ``shlex.shlex(punctuation_chars=True)``: it returns bare strings, so a quoted ``"&&"``
and the operator ``&&`` look the same; it folds newlines (a command separator here) into
whitespace; it splits ``$(ls; pwd)`` and ``2>&1`` into pieces, knows no here-documents and
raises ``ValueError`` on an unterminated quote, where the gate must classify whatever text an
agent ran. Each of these would change a verdict the tests pin (``test_commands.py``).
:func:`taskcore.donegate.commands.shell_line_from_argv` does use :func:`shlex.join`.

>>> [t.text for t in tokenize("pytest 2>&1 | tail -5")]
['pytest', '>&', '1', '|', 'tail', '-5']
>>> [s.words for s in segments(tokenize("cd app && uv run pytest -q"))]
[['cd', 'app'], ['uv', 'run', 'pytest', '-q']]
"""

from __future__ import annotations

import collections
import re

TYPE_CHECKING = False  # not typing's: the Stop hook's fast path reads transcripts without it
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Segment", "Tok", "segments", "tokenize"]


# -- tokenizing -------------------------------------------------------------------------------

_OPS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
_REDIRECTS = ("&>>", "&>", ">>", ">|", ">&", "<<<", "<<-", "<<", "<&", "<>", ">", "<")


class Tok(collections.namedtuple("Tok", ("kind", "text"))):
    """One token: ``kind`` is ``"w"`` (a word), ``"o"`` (an operator) or ``"r"`` (a redirection).

    A named tuple, not an attrs class: the Stop hook's fast path
    (:mod:`taskcore.donegate.quickhook`) reads transcripts without loading attrs.
    """

    __slots__ = ()
    kind: str  # "w" word, "o" operator, "r" redirection
    text: str


def _read_balanced(s: str, i: int, open_ch: str, close_ch: str) -> int:
    """Return the index after the matching ``close_ch`` (or the end), from ``s[i] == open_ch``."""
    depth = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and open_ch != "'":
            j = s.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def tokenize(s: str) -> list[Tok]:
    """Split shell text into words, operators and redirections; never raises."""
    toks: list[Tok] = []
    heredocs: list[tuple[str, bool]] = []
    n = len(s)
    i = 0
    word: list[str] = []
    in_word = False

    def end_word() -> None:
        nonlocal in_word
        if in_word:
            toks.append(Tok("w", "".join(word)))
            word.clear()
            in_word = False

    while i < n:
        c = s[i]
        if c == "\\":
            if i + 1 < n and s[i + 1] == "\n":
                i += 2
                continue
            if i + 1 < n:
                word.append(s[i + 1])
            in_word = True
            i += 2
            continue
        if c == "'":
            j = s.find("'", i + 1)
            j = n if j < 0 else j
            word.append(s[i + 1 : j])
            in_word = True
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            buf: list[str] = []
            while j < n and s[j] != '"':
                if s[j] == "\\" and j + 1 < n and s[j + 1] in '"\\$`\n':
                    buf.append(s[j + 1])
                    j += 2
                    continue
                if s.startswith("$(", j):
                    k = _read_balanced(s, j + 1, "(", ")")
                    buf.append(s[j:k])
                    j = k
                    continue
                buf.append(s[j])
                j += 1
            word.append("".join(buf))
            in_word = True
            i = j + 1
            continue
        if c == "$" and i + 1 < n and s[i + 1] in "({":
            k = _read_balanced(s, i + 1, s[i + 1], ")" if s[i + 1] == "(" else "}")
            word.append(s[i:k])
            in_word = True
            i = k
            continue
        if c == "`":
            j = s.find("`", i + 1)
            j = n if j < 0 else j
            word.append(s[i : j + 1])
            in_word = True
            i = j + 1
            continue
        if c == "#" and not in_word:
            j = s.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in " \t\r":
            end_word()
            i += 1
            continue
        if c == "\n":
            end_word()
            toks.append(Tok("o", "\n"))
            i += 1
            if heredocs:
                i = _skip_heredocs(s, i, heredocs)
                heredocs.clear()
            continue
        # A redirection may start with a file descriptor number: ``2>``, ``2>&1``.
        if c.isdigit() and not in_word:
            j = i
            while j < n and s[j].isdigit():
                j += 1
            if j < n and s[j] in "<>":
                i = j
                c = s[i]
        matched = False
        for r in _REDIRECTS:
            if s.startswith(r, i):
                end_word()
                toks.append(Tok("r", r))
                i += len(r)
                if r in ("<<", "<<-"):
                    # The delimiter is the next word, quotes removed.
                    while i < n and s[i] in " \t":
                        i += 1
                    m = re.match(r"""['"]?([^\s'";|&<>()]+)['"]?""", s[i:])
                    if m:
                        heredocs.append((m.group(1), r == "<<-"))
                        toks.append(Tok("w", m.group(1)))
                        i += m.end()
                matched = True
                break
        if matched:
            continue
        for op in _OPS:
            if s.startswith(op, i):
                end_word()
                toks.append(Tok("o", op))
                i += len(op)
                matched = True
                break
        if matched:
            continue
        word.append(c)
        in_word = True
        i += 1
    end_word()
    return toks


def _skip_heredocs(s: str, i: int, heredocs: Sequence[tuple[str, bool]]) -> int:
    """Skip the bodies of pending here-documents starting at line offset ``i``."""
    n = len(s)
    for delim, strip_tabs in heredocs:
        while i < n:
            j = s.find("\n", i)
            line = s[i:] if j < 0 else s[i:j]
            i = n if j < 0 else j + 1
            if (line.lstrip("\t") if strip_tabs else line) == delim:
                break
    return i


# -- segments ---------------------------------------------------------------------------------


class Segment:
    """One simple command: its words, the files its redirections write, the operator after it."""

    __slots__ = ("op", "words", "writes")

    def __init__(
        self, words: list[str] | None = None, writes: list[str] | None = None, op: str = ""
    ) -> None:
        self.words: list[str] = [] if words is None else words
        self.writes: list[str] = [] if writes is None else writes
        self.op = op  # operator that ended it

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Segment):
            return NotImplemented
        return (self.words, self.writes, self.op) == (other.words, other.writes, other.op)

    __hash__ = None  # type: ignore[assignment]  # mutable, as attrs.define made it

    def __repr__(self) -> str:
        return f"Segment(words={self.words!r}, writes={self.writes!r}, op={self.op!r})"


def segments(toks: Sequence[Tok]) -> list[Segment]:
    """Group tokens into simple commands (subshell parentheses neither end nor start one)."""
    segs: list[Segment] = []
    cur = Segment()
    k = 0
    while k < len(toks):
        t = toks[k]
        if t.kind == "w":
            cur.words.append(t.text)
        elif t.kind == "r":
            target = toks[k + 1].text if k + 1 < len(toks) and toks[k + 1].kind == "w" else ""
            if k + 1 < len(toks) and toks[k + 1].kind == "w":
                k += 1
            writes_file = t.text in (">", ">>", ">|", "&>", "&>>") or (
                t.text == ">&" and not target.isdigit() and target != "-"
            )
            if writes_file and target:
                cur.writes.append(target)
        elif t.text in ("(", ")"):
            pass  # a subshell groups segments; it neither ends one nor names a command
        else:
            cur.op = t.text
            segs.append(cur)
            cur = Segment()
        k += 1
    segs.append(cur)
    return [s for s in segs if s.words or s.writes or s.op in ("&&", "||", "|", "|&")]
