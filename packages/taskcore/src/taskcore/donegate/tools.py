"""The tool table: what a simple command is evidence of (test, build, lint, commit, ...).

:func:`classify` unwraps a simple command's words (:mod:`taskcore.donegate.unwrap`) and looks
its tool up: a table of plain tools (:data:`_SIMPLE`), tools whose subcommand decides (git,
gh, cargo, npm and the other package managers, make, docker, ...), formatters that write
unless asked only to check (:data:`_WRITERS`), and the files a shell utility writes
(:mod:`taskcore.donegate.writes`). Help, version, list and dry-run invocations are nothing.

>>> classify(["uv", "run", "pytest", "-q"])
(<Kind.TEST: 'test'>, [], None)
>>> classify(["ruff", "format", "src"])
(None, ['(formatter)'], None)
>>> classify(["ruff", "format", "--check", "src"])
(<Kind.LINT: 'lint'>, [], None)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from taskcore.donegate.kinds import Kind
from taskcore.donegate.unwrap import PY, base, unwrap
from taskcore.donegate.writes import shell_writes

__all__ = ["Kind", "classify"]


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


def classify(words: list[str]) -> tuple[Kind | None, list[str], str | None]:
    """Classify one simple command: (kind, writes, nested script)."""
    words, nested = unwrap(words)
    if nested is not None:
        return None, [], nested
    if not words:
        return None, [], None
    name = base(words[0])
    args = words[1:]
    if name == "cd" or name == "set" or name == "export":
        return None, [], None
    writes = shell_writes(name, args)
    if any(a.lower() in _HELP for a in args):
        return None, writes, None
    if name in _WRITERS:
        kind, more = _WRITERS[name](args)
        return kind, writes + more, None
    if PY.fullmatch(name):
        return _python_script(args), writes, None
    fn = _SIMPLE.get(name)
    if fn is None:
        if name.startswith(("test", "run-test", "run_test")) or name.endswith(
            ("-test", "_test", "tests.sh", "test.sh")
        ):
            return Kind.TEST, writes, None
        return None, writes, None
    return fn(args), writes, None
