"""The golden vectors, shipped with taskcore: list them and load them.

Another implementation of the v1 contract pins its bytes to these files: signed observations
(``observations``), task, subject, attempt and request digests (``digests``) and documents
that must be refused with a given code and path (``negative``). Their format is
:func:`readme` (the repository's ``golden/README.md``).

An installed wheel carries them as package data (``taskcore/golden_vectors/``, read with
:mod:`importlib.resources`); a checkout (the workspace's editable install) reads the
repository's ``golden/`` directly, the one copy in git. Standard library only.

>>> kinds()
('observations', 'digests', 'negative')
>>> "minimal" in names("observations")
True
>>> load("negative", "wrong_version")["error"]
{'code': 'UNSUPPORTED_VERSION', 'path': '$.version'}
>>> load("negative", "../../etc/passwd")
Traceback (most recent call last):
taskcore.errors.TaskError: no negative vector is named '../../etc/passwd'; names('negative') lists them
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from taskcore.errors import ErrorCode, TaskError

__all__ = ["kinds", "load", "location", "names", "readme", "vectors"]

PACKAGE_DATA = "golden_vectors"
"""The directory of the vectors inside the installed ``taskcore`` package."""

_KINDS = ("observations", "digests", "negative")


def kinds() -> tuple[str, ...]:
    """The vector sets, in the order golden/README.md describes them."""
    return _KINDS


@cache
def location() -> Traversable:
    """Where the vectors are: the package data of a wheel, else a checkout's ``golden/``.

    Raises ``NOT_FOUND`` when neither holds them (a build that left them out).
    """
    packaged = resources.files("taskcore") / PACKAGE_DATA
    if packaged.is_dir():
        return packaged
    # A checkout: this file is packages/taskcore/src/taskcore/golden.py; golden/ is at the top.
    checkout = Path(__file__).resolve().parents[4] / "golden"
    if all((checkout / kind).is_dir() for kind in _KINDS):
        return checkout
    raise TaskError(
        ErrorCode.NOT_FOUND,
        "the golden vectors are not installed with this taskcore; install a wheel built by "
        "the project (they are package data) or use a checkout of the repository",
    )


def names(kind: str) -> list[str]:
    """The names of the vectors of one set, sorted (``kind`` is one of :func:`kinds`)."""
    return list(_names(_kind(kind)))


@cache
def _names(kind: str) -> tuple[str, ...]:
    folder = location() / kind
    return tuple(
        sorted(e.name[: -len(".json")] for e in folder.iterdir() if e.name.endswith(".json"))
    )


def load(kind: str, name: str) -> dict[str, Any]:
    """One vector, parsed: its keys are described in golden/README.md.

    ``name`` must be one of :func:`names` (nothing else is ever opened).
    """
    kind = _kind(kind)
    if name not in _names(kind):
        raise TaskError(
            ErrorCode.NOT_FOUND,
            f"no {kind.rstrip('s')} vector is named {name!r}; names({kind!r}) lists them",
        )
    text = (location() / kind / f"{name}.json").read_text(encoding="ascii")
    return dict(json.loads(text))


def vectors(kind: str) -> list[dict[str, Any]]:
    """Every vector of one set, parsed, in the order of :func:`names`."""
    return [load(kind, name) for name in names(kind)]


def readme() -> str:
    """The format of every set (the repository's ``golden/README.md``)."""
    return (location() / "README.md").read_text(encoding="utf-8")


def _kind(kind: str) -> str:
    if kind not in _KINDS:
        raise TaskError(
            ErrorCode.NOT_FOUND,
            f"no vector set is named {kind!r}; the sets are {', '.join(_KINDS)}",
        )
    return kind
