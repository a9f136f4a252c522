"""What a classified shell command is evidence of: the :class:`Kind` enumeration alone.

Its own module so the evidence state (:mod:`taskcore.donegate.evidence`) can judge stored
checks without loading the classifier's tables (:mod:`taskcore.donegate.tools`): the Stop
hook's fast path reads a turn without shell commands without them.

>>> [k.value for k in Kind if k.is_check]
['test', 'build', 'lint', 'ci_watch']
"""

from __future__ import annotations

import enum

__all__ = ["Kind"]


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
