r"""The receipt: at most six lines, one rendering path for every door.

Glyphs are limited to ASCII, the box-drawing and block range U+2500-U+259F, and ``● ○ · — →``;
anything else a command or path brings in is replaced with ``?``. No emoji, no mascot. The
per-repository line comes from the local index with its n; the last line is an ask.

>>> from taskcore.donegate.ladder import Verdict
>>> v = Verdict(rung=2, rung_name="artifact_changed", below_line=True,
...             missing="no test, build, or lint command ran in this session", stale=False,
...             ask="→ could you run the check, or say in one line why there isn't one?",
...             files_written=14, checks_run=0, commits=0, ships=0, claimed=True)
>>> print("\n".join(render(v, RepoHistory(n=102, reached=96))))
done gate  ○ this session is at rung 2 of 5 — artifact_changed
─────────────────────────────────────────────────────────────
evidence   14 files written   0 test, build or lint commands
missing    no test, build, or lint command ran in this session
this repo  96 of 102 past sessions here reached rung 3+   (n=102)
→ could you run the check, or say in one line why there isn't one?
"""

from __future__ import annotations

import collections

from taskcore.limits import (
    DONE_GATE_RECEIPT_MAX_LINES,
    DONE_GATE_RUNGS,
    GATE_MIN_N,
    GATE_RECEIPT_LINE_MAX_CHARS,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from taskcore.donegate.ladder import Verdict

__all__ = ["ALLOWED_EXTRA", "RepoHistory", "allowed_char", "render", "sanitize"]

ALLOWED_EXTRA = frozenset("●○·—→")
"""Non-ASCII glyphs allowed besides U+2500-U+259F."""


def allowed_char(ch: str) -> bool:
    """Whether one character may appear in a receipt.

    >>> [allowed_char(c) for c in "a─●é😀"]
    [True, True, True, False, False]
    """
    o = ord(ch)
    return (32 <= o < 127) or 0x2500 <= o <= 0x259F or ch in ALLOWED_EXTRA


def sanitize(line: str) -> str:
    """Replace every disallowed character (and control characters) with ``?``; clip."""
    out = "".join(c if allowed_char(c) else "?" for c in line)
    if len(out) > GATE_RECEIPT_LINE_MAX_CHARS:
        out = out[: GATE_RECEIPT_LINE_MAX_CHARS - 3] + "..."
    return out


class RepoHistory(collections.namedtuple("RepoHistory", ("n", "reached"))):
    """Past sessions of the same repository in the local index (this one excluded).

    A named tuple, not an attrs class: the Stop hook's fast path renders receipts without
    loading attrs (or the ladder: :func:`render` reads a verdict's fields only).
    """

    __slots__ = ()
    n: int
    reached: int


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def render(verdict: Verdict, history: RepoHistory | None) -> tuple[str, ...]:
    """Render the receipt lines for ``verdict``."""
    glyph = "○" if verdict.rung < 3 else "●"
    lines = [
        f"done gate  {glyph} this session is at rung {verdict.rung} of {DONE_GATE_RUNGS} — "
        f"{verdict.rung_name}",
        "─" * 61,
    ]
    evidence = (
        f"evidence   {_plural(verdict.files_written, 'file')} written   "
        f"{verdict.checks_run} test, build or lint "
        f"{'command' if verdict.checks_run == 1 else 'commands'}"
    )
    if verdict.commits:
        evidence += f"   {_plural(verdict.commits, 'commit')}"
    lines.append(evidence)
    lines.append(f"missing    {verdict.missing}")
    if history is None:
        lines.append("this repo  the local index could not be read   (n=?)")
    elif history.n == 0:
        lines.append("this repo  no past sessions here in the local index yet   (n=0)")
    else:
        floor = "" if history.n >= GATE_MIN_N else f", below the n>={GATE_MIN_N} floor"
        lines.append(
            f"this repo  {history.reached} of {history.n} past sessions here reached "
            f"rung 3+   (n={history.n}{floor})"
        )
    lines.append(verdict.ask)
    out = tuple(sanitize(line) for line in lines)
    assert len(out) <= DONE_GATE_RECEIPT_MAX_LINES
    return out
