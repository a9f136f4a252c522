"""Wrapper stripping: the command a shell simple command really runs.

``cd``, ``VAR=x``, ``env``, ``timeout``, ``nice``, ``uv run``, ``npx``, ``poetry run``,
``python -m`` and friends are peeled off; ``bash -c SCRIPT`` hands back the script to analyze
on its own.

>>> unwrap(["env", "CI=1", "timeout", "60", "uv", "run", "pytest", "-q"])
(['pytest', '-q'], None)
>>> unwrap(["bash", "-lc", "make test"])
([], 'make test')
"""

from __future__ import annotations

import re

__all__ = ["PY", "SHELLS", "base", "unwrap"]


# -- unwrapping -------------------------------------------------------------------------------

_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
PY = re.compile(r"(python|python3|python3\.\d+|python2|py|pypy3?)")
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


def base(word: str) -> str:
    """The command name of ``word``: no directory, lower case, no ``.exe``."""
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


def unwrap(words: list[str], depth: int = 0) -> tuple[list[str], str | None]:
    """Strip wrappers; return the command words, or a nested shell script to analyze."""
    i = 0
    for _ in range(16):
        while i < len(words) and (_ASSIGN.match(words[i]) or words[i] in ("!", "{", "}")):
            i += 1
        if i >= len(words):
            return [], None
        name = base(words[i])
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
        if name in SHELLS and i + 1 < len(words):
            j = i + 1
            while j < len(words) and words[j].startswith("-"):
                if "c" in words[j].lstrip("-") and not words[j].startswith("--"):
                    if j + 1 < len(words):
                        return [], words[j + 1]
                    return [], None
                j += 1
            return words[i:], None
        if PY.fullmatch(name):
            j = i + 1
            while j < len(words) and words[j].startswith("-") and words[j] not in ("-m", "-c"):
                j += 1
            if j < len(words) and words[j] == "-m" and j + 1 < len(words):
                i = j + 1
                continue
            return words[i:], None
        return words[i:], None
    return words[i:], None
