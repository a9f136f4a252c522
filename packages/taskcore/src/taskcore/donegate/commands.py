r"""The shell-command classifier: which parts of a shell line are checks, ships or writes.

A shell line is split into simple commands (on ``&&``, ``||``, ``;``, ``|``, ``&`` and
newlines, outside quotes, here-documents skipped). Each simple command loses its wrappers
(``cd``, ``VAR=x``, ``env``, ``timeout``, ``uv run``, ``npx``, ``python -m``, ``bash -c`` and
friends) and is then classified as a test, build, lint, commit, push, deploy or CI watch, or
as nothing. Help, version, ``--collect-only``, list and dry-run invocations are nothing, and
so is ``echo ... pytest`` (the command is ``echo``).

Whether a command *passed* is a property of the whole line: a zero exit status of
``pytest | tail -5`` is ``tail``'s, of ``pytest || true`` may be ``true``'s, of
``pytest; echo done`` is ``echo``'s. Each hit therefore carries ``proven``: whether a zero
exit status of the whole line proves that this command ran and exited 0 (pipes count only
under ``set -o pipefail``; ``;`` only under ``set -e``).

Redirections (``>``, ``>>``, ``&>``), ``tee``, ``sed -i``, ``perl -i``, ``cp``, ``mv``,
``rm``, ``touch``, formatters that rewrite files and git commands that rewrite the work tree
are writes. Nothing here runs anything or touches a file; unparseable text is never an error.

>>> [(h.kind.value, h.proven) for h in analyze("cd app && uv run pytest -q").hits]
[('test', True)]
>>> [(h.kind.value, h.proven) for h in analyze("pytest | tail -5").hits]
[('test', False)]
>>> [(h.kind.value, h.proven) for h in analyze("set -o pipefail; pytest | tail -5").hits]
[('test', True)]
>>> analyze("echo run pytest later").hits
()
>>> analyze("pytest --collect-only").hits
()
>>> analyze("sed -i s/a/b/ src/x.py && cat > notes.md <<EOF\npytest\nEOF").writes
('src/x.py', 'notes.md')
"""

from __future__ import annotations

import collections

from taskcore.donegate.shell import segments, tokenize
from taskcore.donegate.tools import Kind, classify
from taskcore.donegate.unwrap import SHELLS, base
from taskcore.donegate.writes import harmless_target

TYPE_CHECKING = False  # not typing's: the Stop hook's fast path reads transcripts without it
if TYPE_CHECKING:
    from collections.abc import Sequence

    from taskcore.donegate.shell import Segment

__all__ = ["Hit", "Kind", "ShellAnalysis", "analyze", "shell_line_from_argv"]


class Hit(collections.namedtuple("Hit", ("kind", "command", "proven", "index"))):
    """One classified simple command of a shell line.

    Named tuples here, not attrs classes: the Stop hook's fast path
    (:mod:`taskcore.donegate.quickhook`) classifies commands without loading attrs.
    """

    __slots__ = ()
    kind: Kind
    command: str
    proven: bool
    index: int


class ShellAnalysis(
    collections.namedtuple("ShellAnalysis", ("hits", "writes", "last_write_index", "segments"))
):
    """Everything the gate needs from one shell line.

    ``writes`` are the paths (or ``(tool)`` labels) the line may change; ``last_write_index``
    is the index of the last simple command that writes, or ``-1``. A hit at that index or
    later ran after every write of the line (``pytest > out.txt`` checks what it wrote next to).
    """

    __slots__ = ()
    hits: tuple[Hit, ...]
    writes: tuple[str, ...]
    last_write_index: int
    segments: int


def _options(words: Sequence[str], pipefail: bool, errexit: bool) -> tuple[bool, bool]:
    if words[:1] != ["set"]:
        return pipefail, errexit
    on = True
    for w in words[1:]:
        if w in ("-o", "+o"):
            on = w == "-o"
            continue
        if w == "pipefail":
            pipefail = on
        elif w.startswith("-") and not w.startswith("--"):
            if "e" in w:
                errexit = True
        elif w.startswith("+") and "e" in w:
            errexit = False
    return pipefail, errexit


def analyze(line: str, *, _depth: int = 0) -> ShellAnalysis:
    """Classify every simple command of shell ``line``; never raises on any text."""
    try:
        segs = segments(tokenize(line))
    except RecursionError:  # pragma: no cover - the tokenizer does not recurse
        segs = []
    pipefail = errexit = False
    # Which segments would a zero exit status of the whole line prove?
    n = len(segs)
    raw: list[tuple[int, Kind, str, bool]] = []
    writes: list[str] = []
    last_write_index = -1
    opts: list[tuple[bool, bool]] = []
    for seg in segs:
        pipefail, errexit = _options(seg.words, pipefail, errexit)
        opts.append((pipefail, errexit))
    for idx, seg in enumerate(segs):
        pf, ee = opts[idx]
        proven = _proven(segs, idx, pf, ee)
        if seg.words and seg.words[0] == "!":
            proven = False
        kind, seg_writes, nested = classify(list(seg.words))
        if nested is not None and _depth < 4:
            inner = analyze(nested, _depth=_depth + 1)
            for h in inner.hits:
                raw.append((idx, h.kind, h.command, proven and h.proven))
            if inner.writes:
                seg_writes = list(inner.writes)
        all_writes = [w for w in (*seg.writes, *seg_writes) if not harmless_target(w)]
        if all_writes:
            writes.extend(all_writes)
            last_write_index = idx
        if kind is not None:
            text = " ".join(seg.words)
            raw.append((idx, kind, text[:200], proven))
    del n
    hits = tuple(Hit(kind=k, command=c, proven=p, index=i) for i, k, c, p in raw)
    return ShellAnalysis(
        hits=hits,
        writes=tuple(dict.fromkeys(writes)),
        last_write_index=last_write_index,
        segments=len(segs),
    )


def _proven(segs: Sequence[Segment], idx: int, pipefail: bool, errexit: bool) -> bool:
    """Whether exit status 0 of the whole line proves that segment ``idx`` ran and passed."""
    seg = segs[idx]
    # A pipeline member whose output feeds another command: its status is lost without
    # pipefail.
    if seg.op in ("|", "|&") and not pipefail:
        return False
    if seg.op == "&":
        return False
    # Find the and-or list containing idx: bounded by ';', '&', newline.
    start = idx
    while start > 0 and segs[start - 1].op not in (";", "&", "\n", ";;"):
        start -= 1
    end = idx
    while end < len(segs) - 1 and segs[end].op not in (";", "&", "\n", ";;"):
        end += 1
    if segs[end].op == "&":
        return False
    if end < len(segs) - 1 and not errexit:
        return False  # a later list decides the exit status
    # Within the list, only segments after the first command that follows the last '||'.
    last_or = -1
    for k in range(start, end):
        if segs[k].op == "||":
            last_or = k
    if last_or >= 0:
        # segs[last_or + 1] may not have run; its pipeline runs up to the next && / ||.
        j = last_or + 1
        while j < end and segs[j].op in ("|", "|&"):
            j += 1
        if idx <= j:
            return False
    return True


def shell_line_from_argv(argv: Sequence[str]) -> str:
    """Turn an argv (Codex ``shell`` calls) into one shell line, unwrapping ``bash -lc``.

    >>> shell_line_from_argv(["bash", "-lc", "cargo test"])
    'cargo test'
    >>> shell_line_from_argv(["git", "commit", "-m", "fix it"])
    "git commit -m 'fix it'"
    """
    args = [str(a) for a in argv]
    if len(args) >= 3 and base(args[0]) in SHELLS and args[1].startswith("-") and "c" in args[1]:
        return args[2]
    import shlex

    return shlex.join(args)
