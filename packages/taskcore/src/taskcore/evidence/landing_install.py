"""Write and remove the pre-receive landing hook of a bare repository.

:func:`install_hook` renders :mod:`taskcore.evidence.landing_hook` (stdlib only) with its
settings into ``hooks/pre-receive`` (the path ``git rev-parse --git-path hooks`` names, so a
``core.hooksPath`` is honoured), mode 0755, written atomically. The file starts with a
shebang and :data:`~taskcore.evidence.landing_hook.MARKER` and ends with a line holding the
SHA-256 of everything above it. :func:`uninstall_hook` removes the file only if both are
there and the digest still matches, i.e. only what ``install`` wrote and nobody changed.
An existing pre-receive hook that ``install`` did not write is never replaced.

>>> settings = HookSettings(url="http://127.0.0.1:8787", repository="acme", profile="default",
...     protect=("refs/heads/main",), token_file="/etc/agent-task/hook.token", timeout=10,
...     fail_open=False)
>>> text = render_hook(settings, python="/usr/bin/python3")
>>> text.splitlines()[:2]
['#!/usr/bin/python3', '# agent-task landing hook v1']
>>> settings_of(text) == settings
True
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import attrs

from taskcore.authority.gitrev import git_argv, git_env
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence import landing_hook
from taskcore.evidence.landing import REF_PATTERN, normalize_target
from taskcore.limits import GIT_TIMEOUT_SECONDS, LANDING_TIMEOUT_MAX_SECONDS
from taskcore.service import Route

__all__ = [
    "HOOK_NAME",
    "HookSettings",
    "InstallOutcome",
    "check_admissible",
    "hook_path",
    "install_hook",
    "render_hook",
    "settings_of",
    "uninstall_hook",
]

HOOK_NAME: Final = "pre-receive"
_CONFIG_LINE: Final = "CONFIG: dict[str, Any] = {}\n"
_CONFIG_PREFIX: Final = "CONFIG: dict[str, Any] = json.loads("
_DIGEST_PREFIX: Final = "# agent-task landing hook sha256: "
_REF = re.compile(REF_PATTERN)
_URL = re.compile(r"https?://[^\s/?#]+(?:/[^\s?#]*)?")


@attrs.frozen(kw_only=True)
class HookSettings:
    """What the hook needs: where to ask, for which route, which refs, with which token."""

    url: str
    repository: str
    profile: str
    protect: tuple[str, ...]
    token_file: str
    timeout: int
    fail_open: bool

    def check(self) -> None:
        """Refuse settings the hook could not use (``INVALID_VALUE`` / ``INVALID_PATH``)."""
        if len(self.url) > 2048 or _URL.fullmatch(self.url) is None:
            raise TaskError(
                ErrorCode.INVALID_VALUE, "--url must be the service's http:// or https:// URL"
            )
        Route(repository=self.repository, profile=self.profile)
        if not self.protect or len(self.protect) > 64:
            raise TaskError(ErrorCode.INVALID_VALUE, "give 1..64 --protect refs")
        for ref in self.protect:
            if len(ref) > 256 or _REF.fullmatch(ref) is None:
                raise TaskError(
                    ErrorCode.INVALID_VALUE,
                    f"--protect {ref!r} is not a full ref name such as refs/heads/main",
                )
        if not Path(self.token_file).is_absolute():
            raise TaskError(ErrorCode.INVALID_PATH, "--token-file must be an absolute path")
        if not Path(self.token_file).is_file():
            raise TaskError(
                ErrorCode.INVALID_PATH,
                "--token-file does not name a file; write the hook's token there first",
            )
        if not 1 <= self.timeout <= LANDING_TIMEOUT_MAX_SECONDS:
            raise TaskError(
                ErrorCode.OUT_OF_BOUNDS,
                f"--timeout must be 1..{LANDING_TIMEOUT_MAX_SECONDS} seconds",
            )

    def to_json(self) -> dict[str, object]:
        """The hook's ``CONFIG``."""
        return {
            "url": self.url,
            "repository": self.repository,
            "profile": self.profile,
            "protect": list(self.protect),
            "token_file": self.token_file,
            "timeout": self.timeout,
            "fail_open": self.fail_open,
        }


@attrs.frozen(kw_only=True)
class InstallOutcome:
    """Where the hook went and whether an earlier agent-task hook was replaced."""

    path: Path
    replaced: bool
    settings: HookSettings


def _source() -> str:
    text = Path(landing_hook.__file__).read_text(encoding="utf-8")
    if text.count(_CONFIG_LINE) != 1:
        raise TaskError(ErrorCode.INTERNAL, "the hook template has no CONFIG line")
    return text


def _digest_line(body: str) -> str:
    return _DIGEST_PREFIX + hashlib.sha256(body.encode("utf-8")).hexdigest() + "\n"


def render_hook(settings: HookSettings, *, python: str) -> str:
    """The hook file's text for ``settings``, run by the ``python`` interpreter."""
    config = json.dumps(settings.to_json(), sort_keys=True)
    body = (
        f"#!{python}\n{landing_hook.MARKER}\n"
        "# Written by 'agent-task landing install'; 'agent-task landing uninstall' removes it.\n"
        + _source().replace(_CONFIG_LINE, f"{_CONFIG_PREFIX}{config!r})\n")
    )
    return body + _digest_line(body)


def _written_by_us(text: str) -> bool:
    lines = text.splitlines(keepends=True)
    if len(lines) < 3 or lines[1] != landing_hook.MARKER + "\n":
        return False
    return lines[-1].startswith(_DIGEST_PREFIX)


def _unchanged(text: str) -> bool:
    lines = text.splitlines(keepends=True)
    return _written_by_us(text) and lines[-1] == _digest_line("".join(lines[:-1]))


def settings_of(text: str) -> HookSettings:
    """The settings an installed hook was written with (``INVALID_VALUE`` if unreadable)."""
    for line in text.splitlines():
        if line.startswith(_CONFIG_PREFIX) and line.endswith(")"):
            try:
                raw = json.loads(ast.literal_eval(line[len(_CONFIG_PREFIX) : -1]))
                return HookSettings(
                    url=str(raw["url"]),
                    repository=str(raw["repository"]),
                    profile=str(raw["profile"]),
                    protect=tuple(str(r) for r in raw["protect"]),
                    token_file=str(raw["token_file"]),
                    timeout=int(raw["timeout"]),
                    fail_open=bool(raw["fail_open"]),
                )
            except (ValueError, SyntaxError, KeyError, TypeError):
                break
    raise TaskError(ErrorCode.INVALID_VALUE, "the hook's settings cannot be read")


def _git(git_dir: Path, *args: str) -> str:
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv, no shell
            git_argv(git_dir, *args),
            capture_output=True,
            env=git_env(),
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, "git did not answer") from None
    if done.returncode != 0:
        raise TaskError(ErrorCode.INVALID_PATH, f"{git_dir} is not a git repository git can read")
    return done.stdout.decode("utf-8", "surrogateescape").strip()


def hook_path(git_dir: Path | str) -> Path:
    """The ``pre-receive`` path of the bare repository at ``git_dir`` (absolute path)."""
    git_dir = Path(git_dir)
    if not git_dir.is_absolute():
        raise TaskError(ErrorCode.INVALID_PATH, "--git-dir must be an absolute path")
    if not git_dir.is_dir():
        raise TaskError(ErrorCode.INVALID_PATH, f"{git_dir} is not a directory")
    if _git(git_dir, "rev-parse", "--is-bare-repository") != "true":
        raise TaskError(
            ErrorCode.INVALID_PATH,
            f"{git_dir} is not a bare repository; pushes land in bare repositories",
        )
    hooks = Path(_git(git_dir, "rev-parse", "--git-path", "hooks"))
    return (hooks if hooks.is_absolute() else git_dir / hooks) / HOOK_NAME


def check_admissible(settings: HookSettings, target: str) -> None:
    """Refuse (``INVALID_VALUE``) a protected ref the hook's profile can never admit.

    The landing check admits a push only to the profile's target (``target_mismatch``
    otherwise), and a hook asks one profile: a ``--protect`` ref other than that target
    would refuse every push to it.

    >>> s = HookSettings(url="http://h", repository="acme", profile="default",
    ...     protect=("refs/heads/main",), token_file="/t", timeout=10, fail_open=False)
    >>> check_admissible(s, "main")
    >>> check_admissible(attrs.evolve(s, protect=("refs/heads/release",)), "main")
    Traceback (most recent call last):
    taskcore.errors.TaskError: profile 'default' admits pushes to refs/heads/main only (its target); --protect refs/heads/release would refuse every push to it (target_mismatch): protect refs/heads/main, or install the hook with the profile whose target is refs/heads/release (one hook, one profile) at $.protect
    """
    full = normalize_target(target)
    wrong = [ref for ref in settings.protect if ref != full]
    if wrong:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"profile {settings.profile!r} admits pushes to {full} only (its target); "
            f"--protect {' '.join(wrong[:4])} would refuse every push to "
            f"{'it' if len(wrong) == 1 else 'them'} (target_mismatch): protect {full}, or "
            f"install the hook with the profile whose target is {wrong[0]} (one hook, one "
            "profile)",
            path="$.protect",
            details={"target": full, "refused": wrong[:16]},
        )


def install_hook(
    git_dir: Path | str,
    settings: HookSettings,
    *,
    python: str | None = None,
    target: str | None = None,
) -> InstallOutcome:
    """Write the landing hook into the bare repository at ``git_dir``.

    ``target`` is the profile's target as the service answers it (``workflow.requirements``):
    a protected ref the profile cannot admit is refused (:func:`check_admissible`) before
    anything is written. Refuses (``CONFLICT``) to replace a ``pre-receive`` hook that
    agent-task did not write; an agent-task hook is replaced with the new settings.
    """
    settings.check()
    if target is not None:
        check_admissible(settings, target)
    path = hook_path(git_dir)
    replaced = False
    if path.exists() or path.is_symlink():
        try:
            existing = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            existing = ""
        if path.is_symlink() or not _written_by_us(existing):
            raise TaskError(
                ErrorCode.CONFLICT,
                f"{path} exists and was not written by agent-task; move it away (or call it "
                "from your own hook) and install again",
            )
        replaced = True
    text = render_hook(settings, python=python or sys.executable)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{HOOK_NAME}.agent-task.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.chmod(tmp, 0o755)  # noqa: S103 - git runs hooks as the pushing user
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise TaskError(
            ErrorCode.INVALID_PATH, f"cannot write {path} ({exc.strerror or exc})"
        ) from None
    return InstallOutcome(path=path, replaced=replaced, settings=settings)


def uninstall_hook(git_dir: Path | str) -> Path:
    """Remove the hook ``install`` wrote; anything else is left alone (``CONFLICT``)."""
    path = hook_path(git_dir)
    if not path.exists() and not path.is_symlink():
        raise TaskError(ErrorCode.NOT_FOUND, f"there is no {HOOK_NAME} hook at {path}")
    try:
        text = "" if path.is_symlink() else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    if not _written_by_us(text):
        raise TaskError(
            ErrorCode.CONFLICT, f"{path} was not written by agent-task; it is left alone"
        )
    if not _unchanged(text):
        raise TaskError(
            ErrorCode.CONFLICT,
            f"{path} was changed after agent-task wrote it; it is left alone (remove it by hand)",
        )
    path.unlink()
    return path
