"""The one rule for "is this CI": every check that behaves differently under CI asks here.

CI is when ``CI`` is set to anything but an empty string, ``0``, ``false`` or ``no`` (any
case). ``.ci/run`` sets ``CI=1`` itself, whatever the environment held, so a pre-set ``CI=0``
cannot thin a CI run; GitHub Actions, GitLab and most other runners set ``CI=true``.

Under CI a test never skips for something the machine lacks: :func:`skip_or_fail` fails it
with the same message a developer sees as the skip reason.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["in_ci", "skip_or_fail"]

_NOT_CI = ("", "0", "false", "no")


def in_ci() -> bool:
    """Whether this run is CI (``CI`` set and not one of ``""``, ``0``, ``false``, ``no``)."""
    return os.environ.get("CI", "").strip().lower() not in _NOT_CI


def skip_or_fail(reason: str) -> NoReturn:
    """Skip the test with ``reason`` on a developer's machine; fail it under CI."""
    if in_ci():
        pytest.fail(f"CI runs this test, but: {reason}")
    pytest.skip(reason)
