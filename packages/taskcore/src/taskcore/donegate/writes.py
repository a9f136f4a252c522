"""Which files a shell utility writes: ``sed -i``, ``perl -i``, ``tee``, ``cp``, ``mv``, ``rm``, ...

The done gate orders checks after writes: a test that ran before the last write of a session
does not check what was written. :func:`shell_writes` names the files (or a ``(label)`` when
the files cannot be told) a coreutils-style command writes; :func:`harmless_target` says
which redirection targets change nothing.

>>> shell_writes("sed", ["-i", "s/a/b/", "x.py"])
['x.py']
>>> shell_writes("cp", ["a", "b"]), shell_writes("cat", ["a"])
(['b'], [])
>>> harmless_target("/dev/null"), harmless_target("out.txt")
(True, False)
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["harmless_target", "shell_writes"]


def _file_args(args: Sequence[str]) -> list[str]:
    return [a for a in args if not a.startswith("-")]


def shell_writes(name: str, args: Sequence[str]) -> list[str]:
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


def harmless_target(path: str) -> bool:
    """Whether writing to ``path`` changes no file (``-``, ``/dev/null``, a descriptor, ...)."""
    p = path.strip()
    return p in ("", "-", "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty") or p.startswith(
        ("/dev/fd/", "&")
    )
