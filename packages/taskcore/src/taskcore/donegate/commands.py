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

import enum
import re
from collections.abc import Callable, Sequence

import attrs

__all__ = ["Hit", "Kind", "ShellAnalysis", "analyze", "shell_line_from_argv"]


class Kind(enum.Enum):
    """What a classified command is evidence of."""

    TEST = "test"
    BUILD = "build"
    LINT = "lint"
    CI_WATCH = "ci_watch"
    COMMIT = "commit"
    PUSH = "push"
    DEPLOY = "deploy"

    @property
    def is_check(self) -> bool:
        """Checks are what can lift a session to ``verified``: test, build, lint, CI watch."""
        return self in (Kind.TEST, Kind.BUILD, Kind.LINT, Kind.CI_WATCH)

    @property
    def is_ship(self) -> bool:
        """Ships are what can lift a committed session to ``shipped``: push and deploy."""
        return self in (Kind.PUSH, Kind.DEPLOY)


@attrs.frozen(kw_only=True)
class Hit:
    """One classified simple command of a shell line."""

    kind: Kind
    command: str
    proven: bool
    index: int


@attrs.frozen(kw_only=True)
class ShellAnalysis:
    """Everything the gate needs from one shell line.

    ``writes`` are the paths (or ``(tool)`` labels) the line may change; ``last_write_index``
    is the index of the last simple command that writes, or ``-1``. A hit at that index or
    later ran after every write of the line (``pytest > out.txt`` checks what it wrote next to).
    """

    hits: tuple[Hit, ...]
    writes: tuple[str, ...]
    last_write_index: int
    segments: int


# -- tokenizing -------------------------------------------------------------------------------

_OPS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
_REDIRECTS = ("&>>", "&>", ">>", ">|", ">&", "<<<", "<<-", "<<", "<&", "<>", ">", "<")


@attrs.frozen
class _Tok:
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


def _tokenize(s: str) -> list[_Tok]:
    """Split shell text into words, operators and redirections; never raises."""
    toks: list[_Tok] = []
    heredocs: list[tuple[str, bool]] = []
    n = len(s)
    i = 0
    word: list[str] = []
    in_word = False

    def end_word() -> None:
        nonlocal in_word
        if in_word:
            toks.append(_Tok("w", "".join(word)))
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
            toks.append(_Tok("o", "\n"))
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
                toks.append(_Tok("r", r))
                i += len(r)
                if r in ("<<", "<<-"):
                    # The delimiter is the next word, quotes removed.
                    while i < n and s[i] in " \t":
                        i += 1
                    m = re.match(r"""['"]?([^\s'";|&<>()]+)['"]?""", s[i:])
                    if m:
                        heredocs.append((m.group(1), r == "<<-"))
                        toks.append(_Tok("w", m.group(1)))
                        i += m.end()
                matched = True
                break
        if matched:
            continue
        for op in _OPS:
            if s.startswith(op, i):
                end_word()
                toks.append(_Tok("o", op))
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


@attrs.define
class _Segment:
    words: list[str] = attrs.Factory(list)
    writes: list[str] = attrs.Factory(list)
    op: str = ""  # operator that ended it


def _segments(toks: Sequence[_Tok]) -> list[_Segment]:
    segs: list[_Segment] = []
    cur = _Segment()
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
            cur = _Segment()
        k += 1
    segs.append(cur)
    return [s for s in segs if s.words or s.writes or s.op in ("&&", "||", "|", "|&")]


# -- unwrapping -------------------------------------------------------------------------------

_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
_PY = re.compile(r"(python|python3|python3\.\d+|python2|py|pypy3?)")
# Wrappers followed directly by the wrapped command, after their own options.
_SIMPLE_WRAPPERS = frozenset(
    {
        "time",
        "command",
        "exec",
        "nohup",
        "builtin",
        "caffeinate",
        "chronic",
        "unbuffer",
        "nice",
        "ionice",
        "stdbuf",
        "sudo",
        "doas",
        "xvfb-run",
        "npx",
        "pnpx",
        "bunx",
        "uvx",
        "dotenv",
        "env",
        "timeout",
        "gtimeout",
        "watchexec",
        "with-contenv",
    }
)
# Options of wrappers that take a value (so the value is not the command).
_VALUE_OPTS = frozenset(
    {
        "-u",
        "-g",
        "-n",
        "-s",
        "-k",
        "-c",
        "-p",
        "--package",
        "--with",
        "--python",
        "--from",
        "--extra",
        "--group",
        "--project",
        "--directory",
        "--env-file",
        "--signal",
        "--kill-after",
        "-C",
        "--dir",
        "--filter",
        "-F",
        "--workspace",
        "-w",
        "-e",
        "--env",
        "--cwd",
    }
)
# ``X run`` / ``X exec`` style wrappers: (tool, subcommand).
_RUN_WRAPPERS = {
    "uv": ("run",),
    "poetry": ("run",),
    "pipenv": ("run",),
    "pdm": ("run",),
    "rye": ("run",),
    "hatch": ("run",),
    "conda": ("run",),
    "mamba": ("run",),
    "micromamba": ("run",),
    "pnpm": ("exec", "dlx"),
    "yarn": ("dlx", "exec"),
    "npm": ("exec",),
    "bundle": ("exec",),
    "mise": ("exec", "x"),
    "asdf": ("exec",),
    "devbox": ("run",),
    "op": ("run",),
    "direnv": ("exec",),
    "nix": ("develop", "shell"),
    "coverage": ("run",),
}


def _base(word: str) -> str:
    name = word.rsplit("/", 1)[-1].lower()
    return name[:-4] if name.endswith(".exe") else name


def _skip_opts(words: list[str], i: int) -> int:
    """Skip wrapper options from ``i``; return the index of the wrapped command."""
    while i < len(words):
        w = words[i]
        if w == "--":
            return i + 1
        if _ASSIGN.match(w):
            i += 1
            continue
        if not w.startswith("-") or w == "-":
            return i
        i += 2 if (w in _VALUE_OPTS and "=" not in w) else 1
    return i


def _unwrap(words: list[str], depth: int = 0) -> tuple[list[str], str | None]:
    """Strip wrappers; return the command words, or a nested shell script to analyze."""
    i = 0
    for _ in range(16):
        while i < len(words) and (_ASSIGN.match(words[i]) or words[i] in ("!", "{", "}")):
            i += 1
        if i >= len(words):
            return [], None
        name = _base(words[i])
        if name in ("timeout", "gtimeout"):
            i = _skip_opts(words, i + 1)
            i += 1  # the duration
            continue
        if name == "nice" or name == "ionice":
            i = _skip_opts(words, i + 1)
            continue
        if name in _SIMPLE_WRAPPERS:
            i = _skip_opts(words, i + 1)
            continue
        if name in _RUN_WRAPPERS and i + 1 < len(words):
            j = _skip_opts(words, i + 1)
            if j < len(words) and words[j] in _RUN_WRAPPERS[name]:
                if name == "coverage":
                    # ``coverage run -m pytest`` -> ``python -m pytest``
                    rest = words[j + 1 :]
                    return (["python", *rest] if rest[:1] == ["-m"] else rest), None
                i = _skip_opts(words, j + 1)
                continue
            return words[i:], None
        if name in _SHELLS and i + 1 < len(words):
            j = i + 1
            while j < len(words) and words[j].startswith("-"):
                if "c" in words[j].lstrip("-") and not words[j].startswith("--"):
                    if j + 1 < len(words):
                        return [], words[j + 1]
                    return [], None
                j += 1
            return words[i:], None
        if _PY.fullmatch(name):
            j = i + 1
            while j < len(words) and words[j].startswith("-") and words[j] not in ("-m", "-c"):
                j += 1
            if j < len(words) and words[j] == "-m" and j + 1 < len(words):
                i = j + 1
                continue
            return words[i:], None
        return words[i:], None
    return words[i:], None


# -- classification ---------------------------------------------------------------------------

_HELP = frozenset(
    {
        "--help",
        "-h",
        "-help",
        "--version",
        "-v",
        "--collect-only",
        "--co",
        "--collectonly",
        "--list",
        "--list-tests",
        "--listtests",
        "--dry-run",
        "--dryrun",
        "--just-print",
        "--recon",
        "--show-config",
        "--showconfig",
        "help",
    }
)


def _target_kind(target: str) -> Kind | None:
    """Classify a task-runner target name (``make test``, ``npm run lint:ci``)."""
    t = target.lower()
    parts = set(re.split(r"[:_\-./]", t))
    if parts & {"deploy", "release", "publish", "ship"}:
        return Kind.DEPLOY
    if parts & {
        "lint",
        "lints",
        "typecheck",
        "types",
        "mypy",
        "clippy",
        "vet",
        "tsc",
        "eslint",
        "flake8",
        "ruff",
        "stylelint",
        "pylint",
        "pyright",
        "shellcheck",
    }:
        return Kind.LINT
    if "fmt" in parts or "format" in parts:
        return Kind.LINT if parts & {"check", "ci", "verify"} else None
    if parts & {
        "test",
        "tests",
        "spec",
        "specs",
        "e2e",
        "check",
        "checks",
        "ci",
        "verify",
        "coverage",
        "cov",
        "unit",
        "integration",
        "pytest",
        "jest",
        "vitest",
    }:
        return Kind.TEST
    if parts & {"build", "compile", "dist", "bundle", "package", "assemble"}:
        return Kind.BUILD
    return None


def _first_nonopt(args: Sequence[str], value_opts: frozenset[str] = frozenset()) -> int:
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return i + 1
        if not a.startswith("-"):
            return i
        i += 2 if (a in value_opts and "=" not in a) else 1
    return i


_JS_BUILTINS = frozenset(
    {
        "install",
        "i",
        "add",
        "remove",
        "rm",
        "uninstall",
        "update",
        "upgrade",
        "up",
        "init",
        "create",
        "link",
        "unlink",
        "info",
        "view",
        "why",
        "outdated",
        "audit",
        "config",
        "cache",
        "ci",
        "list",
        "ls",
        "pack",
        "login",
        "logout",
        "whoami",
        "dedupe",
        "prune",
        "import",
        "set",
        "version",
        "dlx",
        "exec",
        "store",
        "env",
        "patch",
        "rebuild",
        "root",
        "bin",
    }
)


def _js_pm(args: Sequence[str]) -> Kind | None:
    i = _first_nonopt(
        args, frozenset({"--filter", "-F", "-C", "--dir", "--prefix", "-w", "--workspace", "--cwd"})
    )
    if i >= len(args):
        return None
    sub = args[i].lower()
    if sub in ("test", "t", "tst"):
        return Kind.TEST
    if sub in ("run", "run-script", "rs"):
        j = i + 1 + _first_nonopt(args[i + 1 :])
        return _target_kind(args[j]) if j < len(args) else None
    if sub == "publish":
        return Kind.DEPLOY
    if sub in _JS_BUILTINS:
        return None
    return _target_kind(sub)


def _git(args: Sequence[str]) -> tuple[Kind | None, list[str]]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if i >= len(args):
        return None, []
    sub, rest = args[i], args[i + 1 :]
    if sub == "commit":
        return (None if "--dry-run" in rest else Kind.COMMIT), []
    if sub == "push":
        return (None if ("-n" in rest or "--dry-run" in rest) else Kind.PUSH), []
    if sub in ("apply", "am", "cherry-pick", "revert", "merge", "rebase", "pull", "restore"):
        if "--check" in rest or "--stat" in rest or "--abort" in rest:
            return None, []
        return None, [f"(git {sub})"]
    if sub == "checkout" and "--" in rest:
        return None, [f"(git {sub})"]
    if sub == "reset" and "--hard" in rest:
        return None, ["(git reset --hard)"]
    if sub == "stash" and rest[:1] in (["pop"], ["apply"]):
        return None, ["(git stash)"]
    return None, []


def _gh(args: Sequence[str]) -> Kind | None:
    if args[:2] == ["run", "watch"]:
        return Kind.CI_WATCH if "--exit-status" in args else None
    if args[:2] == ["run", "view"]:
        return Kind.CI_WATCH if "--exit-status" in args else None
    if args[:2] == ["pr", "checks"]:
        return Kind.CI_WATCH
    if args[:2] == ["pr", "merge"]:
        return Kind.PUSH
    if args[:2] == ["release", "create"]:
        return Kind.DEPLOY
    return None


def _sub(
    table: dict[str, Kind], value_opts: frozenset[str] = frozenset()
) -> Callable[[Sequence[str]], Kind | None]:
    def classify(args: Sequence[str]) -> Kind | None:
        i = _first_nonopt(args, value_opts)
        return table.get(args[i].lower()) if i < len(args) else None

    return classify


def _always(kind: Kind) -> Callable[[Sequence[str]], Kind | None]:
    return lambda _args: kind


def _make(args: Sequence[str]) -> Kind | None:
    if "-n" in args or "--question" in args or "-q" in args:
        return None
    targets = [a for a in args if not a.startswith("-") and "=" not in a]
    if not targets:
        return Kind.BUILD
    kinds = [k for k in (_target_kind(t) for t in targets) if k is not None]
    return kinds[-1] if kinds else None


def _runner(args: Sequence[str]) -> Kind | None:
    i = _first_nonopt(
        args, frozenset({"-f", "--file", "-C", "--dir", "-d", "--justfile", "--taskfile", "-t"})
    )
    if i < len(args) and args[i] in ("run", "run-many", "affected") and i + 1 < len(args):
        rest = [a for a in args[i + 1 :] if not a.startswith("-")]
        for flag in ("-t", "--target", "--targets"):
            if flag in args:
                j = list(args).index(flag)
                if j + 1 < len(args):
                    return _target_kind(args[j + 1])
        return _target_kind(rest[0]) if rest else None
    return _target_kind(args[i]) if i < len(args) else None


def _deploy_word(args: Sequence[str]) -> Kind | None:
    return (
        Kind.DEPLOY
        if any(a in ("deploy", "up", "apply", "publish", "release") for a in args)
        else None
    )


def _python_script(args: Sequence[str]) -> Kind | None:
    # ``python manage.py test``, ``python setup.py test``, ``python -m pytest`` was unwrapped.
    if len(args) >= 2 and args[0].endswith(".py") and args[1] in ("test", "tests", "check"):
        return Kind.TEST
    if (
        len(args) >= 2
        and args[0].endswith(".py")
        and args[1] in ("build", "bdist_wheel", "sdist", "build_ext")
    ):
        return Kind.BUILD
    return None


_WRITE_FMT = "(formatter)"


def _fmt(check_flags: frozenset[str]) -> Callable[[Sequence[str]], tuple[Kind | None, list[str]]]:
    def classify(args: Sequence[str]) -> tuple[Kind | None, list[str]]:
        if any(a in check_flags or a.startswith("--check") for a in args):
            return Kind.LINT, []
        return None, [_WRITE_FMT]

    return classify


def _ruff(args: Sequence[str]) -> tuple[Kind | None, list[str]]:
    sub = args[0] if args else ""
    if sub == "format":
        return (Kind.LINT, []) if ("--check" in args or "--diff" in args) else (None, [_WRITE_FMT])
    if sub in ("check", "") or sub.startswith("-") or "/" in sub or sub == ".":
        writes = [_WRITE_FMT] if ("--fix" in args or "--unsafe-fixes" in args) else []
        return Kind.LINT, writes
    return None, []


def _cargo(args: Sequence[str]) -> tuple[Kind | None, list[str]]:
    i = _first_nonopt(args, frozenset({"--manifest-path", "-p", "--package", "-Z"}))
    sub = args[i] if i < len(args) else ""
    rest = args[i + 1 :]
    if sub.startswith("+"):
        return _cargo(args[i + 1 :])
    if sub in ("test", "t", "nextest", "miri"):
        return Kind.TEST, []
    if sub in ("build", "b", "check", "c", "doc"):
        return Kind.BUILD, []
    if sub == "clippy":
        return Kind.LINT, ([_WRITE_FMT] if "--fix" in rest else [])
    if sub == "fmt":
        return (Kind.LINT, []) if "--check" in rest else (None, [_WRITE_FMT])
    if sub == "publish":
        return (None if "--dry-run" in rest else Kind.DEPLOY), []
    return None, []


def _eslint(args: Sequence[str]) -> tuple[Kind | None, list[str]]:
    return Kind.LINT, ([_WRITE_FMT] if "--fix" in args else [])


def _prettier(args: Sequence[str]) -> tuple[Kind | None, list[str]]:
    if "--write" in args or "-w" in args:
        return None, [_WRITE_FMT]
    if "--check" in args or "-c" in args or "--list-different" in args or "-l" in args:
        return Kind.LINT, []
    return None, []


def _tsc(args: Sequence[str]) -> Kind | None:
    if "--noEmit" in args or "--noemit" in args:
        return Kind.LINT
    return Kind.BUILD


def _pip(args: Sequence[str]) -> Kind | None:
    return None


_SIMPLE: dict[str, Callable[[Sequence[str]], Kind | None]] = {
    # tests
    "pytest": _always(Kind.TEST),
    "py.test": _always(Kind.TEST),
    "tox": _always(Kind.TEST),
    "nox": _always(Kind.TEST),
    "unittest": _always(Kind.TEST),
    "nose2": _always(Kind.TEST),
    "jest": _always(Kind.TEST),
    "vitest": _always(Kind.TEST),
    "mocha": _always(Kind.TEST),
    "ava": _always(Kind.TEST),
    "karma": _always(Kind.TEST),
    "jasmine": _always(Kind.TEST),
    "rspec": _always(Kind.TEST),
    "phpunit": _always(Kind.TEST),
    "pest": _always(Kind.TEST),
    "ctest": _always(Kind.TEST),
    "bats": _always(Kind.TEST),
    "behave": _always(Kind.TEST),
    "ward": _always(Kind.TEST),
    "hypothesis": _always(Kind.TEST),
    "tap": _always(Kind.TEST),
    "playwright": _sub({"test": Kind.TEST}),
    "cypress": _sub({"run": Kind.TEST}),
    "go": _sub({"test": Kind.TEST, "build": Kind.BUILD, "vet": Kind.LINT, "install": Kind.BUILD}),
    "deno": _sub(
        {
            "test": Kind.TEST,
            "lint": Kind.LINT,
            "check": Kind.LINT,
            "compile": Kind.BUILD,
            "bench": Kind.TEST,
        }
    ),
    "bun": _sub({"test": Kind.TEST, "build": Kind.BUILD}),
    "mix": _sub(
        {"test": Kind.TEST, "compile": Kind.BUILD, "credo": Kind.LINT, "dialyzer": Kind.LINT}
    ),
    "dotnet": _sub({"test": Kind.TEST, "build": Kind.BUILD, "format": Kind.LINT}),
    "swift": _sub({"test": Kind.TEST, "build": Kind.BUILD}),
    "xcodebuild": lambda a: Kind.TEST if "test" in a else (Kind.BUILD if "build" in a else None),
    "meson": _sub({"test": Kind.TEST, "compile": Kind.BUILD}),
    "bazel": _sub({"test": Kind.TEST, "build": Kind.BUILD}, frozenset({"--config"})),
    "bazelisk": _sub({"test": Kind.TEST, "build": Kind.BUILD}),
    "rake": lambda a: _target_kind(a[0]) if a else Kind.TEST,
    "rails": _sub({"test": Kind.TEST}),
    "lein": _sub({"test": Kind.TEST, "uberjar": Kind.BUILD, "compile": Kind.BUILD}),
    "sbt": lambda a: next((k for k in (_target_kind(x) for x in a) if k), None),
    "hatch": _sub({"test": Kind.TEST, "build": Kind.BUILD, "publish": Kind.DEPLOY}),
    "ng": _sub({"test": Kind.TEST, "build": Kind.BUILD, "lint": Kind.LINT, "e2e": Kind.TEST}),
    # builds
    "make": _make,
    "gmake": _make,
    "ninja": _always(Kind.BUILD),
    "cmake": lambda a: Kind.BUILD if "--build" in a else None,
    "mvn": lambda a: _mvn(a),
    "mvnw": lambda a: _mvn(a),
    "gradle": lambda a: _gradle(a),
    "gradlew": lambda a: _gradle(a),
    "tsc": _tsc,
    "webpack": _always(Kind.BUILD),
    "rollup": _always(Kind.BUILD),
    "esbuild": _always(Kind.BUILD),
    "vite": _sub({"build": Kind.BUILD}),
    "next": _sub({"build": Kind.BUILD, "lint": Kind.LINT}),
    "nuxt": _sub({"build": Kind.BUILD}),
    "astro": _sub({"build": Kind.BUILD, "check": Kind.LINT}),
    "parcel": _sub({"build": Kind.BUILD}),
    "gcc": _always(Kind.BUILD),
    "g++": _always(Kind.BUILD),
    "clang": _always(Kind.BUILD),
    "clang++": _always(Kind.BUILD),
    "cc": _always(Kind.BUILD),
    "c++": _always(Kind.BUILD),
    "javac": _always(Kind.BUILD),
    "kotlinc": _always(Kind.BUILD),
    "rustc": _always(Kind.BUILD),
    "zig": _sub({"build": Kind.BUILD, "test": Kind.TEST}),
    "sphinx-build": _always(Kind.BUILD),
    "mkdocs": _sub({"build": Kind.BUILD}),
    "docker": lambda a: _docker(a),
    "podman": lambda a: _docker(a),
    "build": _always(Kind.BUILD),  # ``python -m build``
    # lints
    "mypy": _always(Kind.LINT),
    "dmypy": _always(Kind.LINT),
    "pyright": _always(Kind.LINT),
    "basedpyright": _always(Kind.LINT),
    "flake8": _always(Kind.LINT),
    "pylint": _always(Kind.LINT),
    "pyflakes": _always(Kind.LINT),
    "bandit": _always(Kind.LINT),
    "pydocstyle": _always(Kind.LINT),
    "pycodestyle": _always(Kind.LINT),
    "golangci-lint": _always(Kind.LINT),
    "staticcheck": _always(Kind.LINT),
    "shellcheck": _always(Kind.LINT),
    "hadolint": _always(Kind.LINT),
    "stylelint": _always(Kind.LINT),
    "markdownlint": _always(Kind.LINT),
    "rubocop": _always(Kind.LINT),
    "standardrb": _always(Kind.LINT),
    "phpstan": _always(Kind.LINT),
    "psalm": _always(Kind.LINT),
    "swiftlint": _always(Kind.LINT),
    "ktlint": _always(Kind.LINT),
    "actionlint": _always(Kind.LINT),
    "yamllint": _always(Kind.LINT),
    "vulture": _always(Kind.LINT),
    "ty": _sub({"check": Kind.LINT}),
    "pre-commit": _sub({"run": Kind.LINT}),
    "prek": _sub({"run": Kind.LINT}),
    "biome": _sub({"check": Kind.LINT, "lint": Kind.LINT, "ci": Kind.LINT}),
    "oxlint": _always(Kind.LINT),
    # runners
    "npm": _js_pm,
    "yarn": _js_pm,
    "pnpm": _js_pm,
    "just": _runner,
    "task": _runner,
    "nx": _runner,
    "turbo": _runner,
    "lerna": _runner,
    "invoke": _runner,
    "inv": _runner,
    "poe": _runner,
    "composer": lambda a: _runner(a[1:]) if a[:1] == ["run"] else _runner(a),
    "dev": _runner,
    # ship and deploy
    "gh": _gh,
    "vercel": lambda a: Kind.DEPLOY if (not a or "deploy" in a or "--prod" in a) else None,
    "netlify": _sub({"deploy": Kind.DEPLOY}),
    "fly": _sub({"deploy": Kind.DEPLOY}),
    "flyctl": _sub({"deploy": Kind.DEPLOY}),
    "firebase": _sub({"deploy": Kind.DEPLOY}),
    "wrangler": _sub({"deploy": Kind.DEPLOY, "publish": Kind.DEPLOY}),
    "serverless": _sub({"deploy": Kind.DEPLOY}),
    "sls": _sub({"deploy": Kind.DEPLOY}),
    "kubectl": _sub({"apply": Kind.DEPLOY, "rollout": Kind.DEPLOY, "set": Kind.DEPLOY}),
    "helm": _sub({"install": Kind.DEPLOY, "upgrade": Kind.DEPLOY}),
    "terraform": _sub({"apply": Kind.DEPLOY}),
    "tofu": _sub({"apply": Kind.DEPLOY}),
    "pulumi": _sub({"up": Kind.DEPLOY}),
    "cdk": _sub({"deploy": Kind.DEPLOY}),
    "sam": _sub({"deploy": Kind.DEPLOY}),
    "eb": _sub({"deploy": Kind.DEPLOY}),
    "railway": _sub({"up": Kind.DEPLOY}),
    "gcloud": _deploy_word,
    "aws": _deploy_word,
    "twine": _sub({"upload": Kind.DEPLOY}),
    "gem": _sub({"push": Kind.DEPLOY}),
    "ansible-playbook": _always(Kind.DEPLOY),
    "heroku": _deploy_word,
    "pip": _pip,
    "pip3": _pip,
}


def _mvn(args: Sequence[str]) -> Kind | None:
    goals = [a for a in args if not a.startswith("-")]
    if "deploy" in goals:
        return Kind.DEPLOY
    if any(g in ("test", "verify", "integration-test") for g in goals):
        return Kind.TEST
    if any(g in ("package", "compile", "install", "test-compile") for g in goals):
        return Kind.BUILD
    return None


def _gradle(args: Sequence[str]) -> Kind | None:
    tasks = [a.rsplit(":", 1)[-1] for a in args if not a.startswith("-")]
    if any(t.startswith("publish") for t in tasks):
        return Kind.DEPLOY
    if any(t in ("test", "check", "connectedCheck", "integrationTest") for t in tasks):
        return Kind.TEST
    if any(t in ("lint", "ktlintCheck", "detekt", "spotlessCheck") for t in tasks):
        return Kind.LINT
    if any(t in ("build", "assemble", "compileJava", "compileKotlin", "jar") for t in tasks):
        return Kind.BUILD
    return None


def _docker(args: Sequence[str]) -> Kind | None:
    i = _first_nonopt(args, frozenset({"-H", "--context", "-f", "--file"}))
    sub = args[i] if i < len(args) else ""
    if sub == "build" or (sub in ("buildx", "compose", "image") and "build" in args[i:]):
        return Kind.BUILD
    if sub == "push" or (sub == "image" and "push" in args[i:]):
        return Kind.DEPLOY
    return None


_WRITERS: dict[str, Callable[[Sequence[str]], tuple[Kind | None, list[str]]]] = {
    "ruff": _ruff,
    "cargo": _cargo,
    "eslint": _eslint,
    "prettier": _prettier,
    "black": _fmt(frozenset({"--diff"})),
    "isort": _fmt(frozenset({"--diff", "-c"})),
    "gofmt": lambda a: (
        (Kind.LINT, [])
        if ("-l" in a or "-d" in a) and "-w" not in a
        else (None, [_WRITE_FMT] if "-w" in a else [])
    ),
    "shfmt": lambda a: (None, [_WRITE_FMT]) if "-w" in a else (Kind.LINT, []),
    "clang-format": lambda a: (None, [_WRITE_FMT]) if "-i" in a else (None, []),
    "swiftformat": lambda a: (Kind.LINT, []) if "--lint" in a else (None, [_WRITE_FMT]),
    "php-cs-fixer": lambda a: (Kind.LINT, []) if "--dry-run" in a else (None, [_WRITE_FMT]),
    "git": _git,
}


def _file_args(args: Sequence[str]) -> list[str]:
    return [a for a in args if not a.startswith("-")]


def _shell_writes(name: str, args: Sequence[str]) -> list[str]:
    """Files a coreutils-style command writes."""
    if name == "sed" and any(
        a.startswith(("-i", "--in-place"))
        or (a.startswith("-") and not a.startswith("--") and "i" in a[1:])
        for a in args
    ):
        files: list[str] = []
        script_given = False
        k = 0
        while k < len(args):
            a = args[k]
            if a in ("-e", "-f", "--expression", "--file"):
                script_given = True
                k += 2
                continue
            if not a.startswith("-"):
                files.append(a)
            k += 1
        # Without -e/-f the first operand is the script.
        if not script_given and files:
            files = files[1:]
        return files or ["(sed -i)"]
    if name == "perl" and any(
        a.startswith("-") and "i" in a and not a.startswith("--") for a in args
    ):
        files = _file_args(args)
        return files[1:] if len(files) > 1 else ["(perl -i)"]
    if name == "tee":
        return _file_args(args)
    if name in ("cp", "mv", "install", "rsync"):
        files = _file_args(args)
        return files[-1:] if len(files) >= 2 else []
    if name in ("rm", "touch", "truncate", "unlink", "rmdir", "mkdir", "chmod"):
        return _file_args(args) if name not in ("chmod",) else []
    if name in ("patch",):
        return ["(patch)"]
    if name == "apply_patch":
        return ["(apply_patch)"]
    return []


def _classify(words: list[str]) -> tuple[Kind | None, list[str], str | None]:
    """Classify one simple command: (kind, writes, nested script)."""
    words, nested = _unwrap(words)
    if nested is not None:
        return None, [], nested
    if not words:
        return None, [], None
    name = _base(words[0])
    args = words[1:]
    if name == "cd" or name == "set" or name == "export":
        return None, [], None
    writes = _shell_writes(name, args)
    if any(a.lower() in _HELP for a in args):
        return None, writes, None
    if name in _WRITERS:
        kind, more = _WRITERS[name](args)
        return kind, writes + more, None
    if _PY.fullmatch(name):
        return _python_script(args), writes, None
    fn = _SIMPLE.get(name)
    if fn is None:
        if name.startswith(("test", "run-test", "run_test")) or name.endswith(
            ("-test", "_test", "tests.sh", "test.sh")
        ):
            return Kind.TEST, writes, None
        return None, writes, None
    return fn(args), writes, None


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
        segs = _segments(_tokenize(line))
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
        kind, seg_writes, nested = _classify(list(seg.words))
        if nested is not None and _depth < 4:
            inner = analyze(nested, _depth=_depth + 1)
            for h in inner.hits:
                raw.append((idx, h.kind, h.command, proven and h.proven))
            if inner.writes:
                seg_writes = list(inner.writes)
        all_writes = [w for w in (*seg.writes, *seg_writes) if not _harmless_target(w)]
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


def _proven(segs: Sequence[_Segment], idx: int, pipefail: bool, errexit: bool) -> bool:
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
    if len(args) >= 3 and _base(args[0]) in _SHELLS and args[1].startswith("-") and "c" in args[1]:
        return args[2]
    import shlex

    return shlex.join(args)


def _harmless_target(path: str) -> bool:
    p = path.strip()
    return p in ("", "-", "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty") or p.startswith(
        ("/dev/fd/", "&")
    )
