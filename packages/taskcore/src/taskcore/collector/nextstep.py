"""What to run next: one documented ``agent-task`` command for every ``next`` qualification names.

``qualification`` answers ``next`` as typed data (``collector_claim`` or ``reconcile`` with a
task, ``collector_finalize``, ``checkpoint`` or ``none``) and the failures as stable codes. A
person or an agent needs the command that acts on it. :func:`advise` turns the answer into an
:class:`Advice`: a fixed sentence (never server text) and, where one exists, the exact command
line with the values already filled in (:class:`CommandOptions`). ``agent-task collect``,
``reconcile`` and ``qualification`` print it; the task-stop hooks relay it.

===========================================  ===========================================
next / failures                               command
===========================================  ===========================================
``collector_claim``, ``collector_finalize``    ``agent-task collect CHANGE``
``reconcile``                                  ``agent-task reconcile CHANGE``
``checkpoint``                                 ``agent-task checkpoint CHANGE`` (after a commit)
``none`` + a failed run                        fix, commit, ``agent-task checkpoint CHANGE``
``none`` + a run that could not start          none: the operator fixes the collector profile
``none`` + a run that no longer counts         ``agent-task checkpoint CHANGE --retry``
``none`` + ``attempt_in_progress``             wait; ``agent-task reconcile CHANGE --force`` if it died
``none`` + ``collector_profile_missing``       none: the operator installs a collector profile
===========================================  ===========================================

>>> advise({"operation": "reconcile", "task_id": "t-1"}, [], change="main-work").command
'agent-task reconcile main-work'
>>> opts = CommandOptions(url="http://127.0.0.1:8787", repository="calc", profile="default")
>>> advise({"operation": "none"}, [{"task_id": "t-1", "code": "collector_not_passed"}],
...     change="main-work", options=opts).command
'agent-task checkpoint main-work --url http://127.0.0.1:8787 --repository calc --profile default'
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

__all__ = [
    "ADVICE",
    "FAILED_RUN_CODES",
    "NO_LONGER_COUNTING_CODES",
    "START_FAILED",
    "Advice",
    "CommandOptions",
    "advise",
]

FAILED_RUN_CODES: Final = frozenset({"collector_not_passed", "result_nonpassing"})
"""Failure codes of a run that finished and did not pass: fix the cause, commit, checkpoint."""

START_FAILED: Final = "start_failed"
"""A run's outcome when its command could not start (the profile's fault, not the code's)."""

NO_LONGER_COUNTING_CODES: Final = frozenset(
    {
        "collector_profile_changed",
        "executor_revoked",
        "executor_not_current",
        "authorization_changed",
    }
)
"""Failure codes of a run that no longer counts for reasons outside the code: retry it as is."""

ADVICE: Final = {
    "collect": (
        "Run 'agent-task collect' for this Change so a trusted collector runs the pinned "
        "checks on this exact revision, then try to finish again."
    ),
    "finalize": (
        "Run 'agent-task collect' for this Change to finalize its receipt, then try to "
        "finish again."
    ),
    "reconcile": (
        "An earlier attempt of this Change is unresolved: run 'agent-task reconcile' for this "
        "Change (it finds the attempt itself), then 'agent-task collect', and try to finish "
        "again."
    ),
    "checkpoint": (
        "Commit your work and run 'agent-task checkpoint' for this Change, then run "
        "'agent-task collect' and try to finish again."
    ),
    "fix": (
        "The pinned check failed on this revision: fix the cause, commit, run 'agent-task "
        "checkpoint' and then 'agent-task collect' for this Change, and try to finish again."
    ),
    "profile": (
        "The pinned command could not start on the collector (its argv[0] or interpreter is "
        "not visible in the sandbox): the collector profile, not the code, is at fault. Do not "
        "change the code for it; ask the operator to install a fixed profile ('agent-task "
        "operator install-collector-profile ... --expose-interpreter'), then run 'agent-task "
        "checkpoint --retry' and 'agent-task collect' for this Change."
    ),
    "retry": (
        "The last run no longer counts (its collector profile, enrollment or grant changed): "
        "run 'agent-task checkpoint --retry' and then 'agent-task collect' for this Change, and "
        "try to finish again."
    ),
    "wait": (
        "A collection of this Change is still running: wait for it to finish (if it died, "
        "'agent-task reconcile --force' releases it), then try to finish again."
    ),
    "operator": (
        "No collector profile is installed for a required step: ask the operator to install "
        "one ('agent-task operator install-collector-profile'); do not claim this Change is "
        "done."
    ),
    "none": (
        "Nothing you can run now makes this Change qualify; do not claim it is done, report "
        "the failures instead."
    ),
    "done": "This Change is qualified.",
}
"""The fixed sentence of each kind of advice (never server text)."""


@attrs.frozen(kw_only=True)
class CommandOptions:
    """Values a printed command fills in; each is optional and only given ones are written."""

    url: str | None = None
    repository: str | None = None
    profile: str | None = None
    token_file: str | None = None
    data_dir: str | None = None
    state_dir: str | None = None
    clone: str | None = None

    def route_flags(self) -> list[str]:
        """``--url``, ``--repository``, ``--profile`` and ``--token-file`` when known."""
        out: list[str] = []
        for flag, value in (
            ("--url", self.url),
            ("--repository", self.repository),
            ("--profile", self.profile),
            ("--token-file", self.token_file),
        ):
            if value:
                out += [flag, value]
        return out

    def collector_flags(self) -> list[str]:
        """``--clone`` (remote mode) or ``--data-dir`` (same host), and ``--state-dir``."""
        out: list[str] = []
        if self.clone:
            out += ["--clone", self.clone]
        elif self.data_dir:
            out += ["--data-dir", self.data_dir]
        if self.state_dir:
            out += ["--state-dir", self.state_dir]
        return out


@attrs.frozen(kw_only=True)
class Advice:
    """What to do next: its kind (a key of :data:`ADVICE`), the sentence and the command."""

    kind: str
    command: str | None

    @property
    def sentence(self) -> str:
        """The fixed sentence of this kind."""
        return ADVICE[self.kind]


def _codes(failures: Iterable[Any]) -> set[str]:
    codes: set[str] = set()
    for failure in failures:
        if isinstance(failure, Mapping):
            codes.add(str(failure.get("code")))
        elif isinstance(failure, tuple) and len(failure) == 2:
            codes.add(str(failure[1]))
    return codes


def advise(
    next_step: Mapping[str, Any],
    failures: Iterable[Any],
    *,
    change: str,
    options: CommandOptions | None = None,
    qualified: bool = False,
    run_failures: Iterable[Mapping[str, Any]] = (),
) -> Advice:
    """Return the advice for a qualification answer about ``change``.

    ``failures`` are ``{task_id, code}`` mappings or ``(task_id, code)`` pairs;
    ``run_failures`` the answer's rows of failed runs (``outcome`` ``start_failed``: the
    command never started, which no change of the code fixes).

    >>> advise({"operation": "none"}, [("t-1", "collector_not_passed")], change="c",
    ...     run_failures=[{"task_id": "t-1", "outcome": "start_failed"}]).kind
    'profile'
    """
    options = options or CommandOptions()
    operation = next_step.get("operation")
    codes = _codes(failures)

    def line(*args: str, collector: bool = False) -> str:
        extra = options.collector_flags() if collector else []
        return shlex.join(["agent-task", *args, change, *options.route_flags(), *extra])

    if qualified:
        return Advice(kind="done", command=None)
    if operation == "collector_claim":
        return Advice(kind="collect", command=line("collect", collector=True))
    if operation == "collector_finalize":
        return Advice(kind="finalize", command=line("collect", collector=True))
    if operation == "reconcile":
        return Advice(kind="reconcile", command=line("reconcile"))
    if operation == "checkpoint":
        return Advice(kind="checkpoint", command=line("checkpoint"))
    if codes & NO_LONGER_COUNTING_CODES:
        # Checked first: a run made under a profile, key or grant that changed since says
        # nothing about the code; the same revision is worth collecting again as it is.
        return Advice(
            kind="retry",
            command=shlex.join(
                ["agent-task", "checkpoint", change, "--retry", *options.route_flags()]
            ),
        )
    if codes & FAILED_RUN_CODES:
        if any(run.get("outcome") == START_FAILED for run in run_failures):
            return Advice(kind="profile", command=None)
        return Advice(kind="fix", command=line("checkpoint"))
    if "attempt_in_progress" in codes:
        return Advice(
            kind="wait",
            command=shlex.join(
                ["agent-task", "reconcile", change, "--force", *options.route_flags()]
            ),
        )
    if "collector_profile_missing" in codes:
        return Advice(kind="operator", command=None)
    return Advice(kind="none", command=None)
