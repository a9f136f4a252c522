"""The single calls the collector's client flows are built from, and what they report.

:class:`WorkflowClient` is the two service calls the flows in :mod:`taskcore.collector.client`
need (a workflow operation and the raw collector upload); :data:`CollectEvent` is what
:func:`~taskcore.collector.client.collect_once` reports to its ``notify`` callback. The calls:
:func:`qualification` and :func:`finalize_if_ready` ask the authority, :func:`upload_retained`
sends retained transfer bytes, :func:`release_attempt` reconciles a claimed attempt, and
:func:`renewing_ticker` renews the lease while a command runs.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any, Final, Protocol

import attrs

from taskcore.collector.nextstep import Advice, CommandOptions, advise
from taskcore.collector.runtime import Progress
from taskcore.collector.state import AttemptState
from taskcore.contract.collector_records import ExecutionRecord
from taskcore.errors import ErrorKind, TaskError

__all__ = [
    "TRANSIENT_KINDS",
    "Checking",
    "Claimed",
    "Claiming",
    "CollectEvent",
    "Collecting",
    "Finalizing",
    "Recorded",
    "Released",
    "RenewalFailed",
    "Running",
    "Uploading",
    "WorkflowClient",
    "advice_of",
    "finalize_if_ready",
    "ignore_event",
    "mutation_body",
    "qualification",
    "release_attempt",
    "renewing_ticker",
    "request_body",
    "result_of",
    "upload_retained",
]


class WorkflowClient(Protocol):
    """The service calls the collector's client flows need.

    ``workflow`` sends the envelope ``{"operation": op, "request": <body>}`` to the workflow
    route of ``repository``/``profile`` and returns the decoded success body (``{"capability",
    "schema_version", "operation", "result"}``); ``upload`` sends raw transfer bytes to the
    collector upload route and returns the same kind of body. Both raise
    :class:`~taskcore.errors.TaskError` for a refusal, an unreachable service or a malformed
    answer.
    """

    def workflow(self, repository: str, profile: str, op: str, body: bytes) -> Any:
        """Run workflow operation ``op`` with the JSON request ``body``."""
        ...

    def upload(self, repository: str, profile: str, data: bytes) -> Any:
        """Upload the signed transfer ``data``."""
        ...


@attrs.frozen(kw_only=True)
class Checking:
    """Running the local checks before claiming step ``step_id``."""

    step_id: str


@attrs.frozen(kw_only=True)
class Claiming:
    """About to claim the collector task ``task_id`` of step ``step_id``."""

    step_id: str
    task_id: str


@attrs.frozen(kw_only=True)
class Claimed:
    """The claim committed: attempt ``attempt_id``, leased until ``lease_expires_at_ms``."""

    attempt_id: str
    lease_expires_at_ms: int


@attrs.frozen(kw_only=True)
class Released:
    """A failure after the claim; attempt ``attempt_id`` was reconciled (claimable again)."""

    attempt_id: str
    error: str


@attrs.frozen(kw_only=True)
class Collecting:
    """The checks passed; running ``argv`` on ``commit``."""

    commit: str
    argv: tuple[str, ...]


@attrs.frozen(kw_only=True)
class Running:
    """A progress tick while the command runs."""

    progress: Progress


@attrs.frozen(kw_only=True)
class RenewalFailed:
    """A lease renewal was refused or failed; the run continues."""

    error: TaskError = attrs.field(eq=False)


@attrs.frozen(kw_only=True)
class Recorded:
    """The command finished; its record is signed and retained."""

    record: ExecutionRecord


@attrs.frozen(kw_only=True)
class Uploading:
    """About to upload the retained transfer."""


@attrs.frozen(kw_only=True)
class Finalizing:
    """Every required task is collected; about to finalize the receipt."""


CollectEvent = (
    Checking
    | Claiming
    | Claimed
    | Collecting
    | Running
    | RenewalFailed
    | Recorded
    | Released
    | Uploading
    | Finalizing
)
"""What :func:`~taskcore.collector.client.collect_once` reports to its ``notify`` callback, in order."""


def ignore_event(_: CollectEvent) -> None:
    """The default ``notify``: report nothing."""
    return None


def request_body(value: dict[str, Any]) -> bytes:
    """The JSON request bytes of ``value``."""
    return json.dumps(value).encode("utf-8")


def result_of(answer: Any) -> Any:
    """The ``result`` of a workflow success body."""
    return answer["result"]


def qualification(
    client: WorkflowClient, *, repository: str, profile: str, change: str
) -> dict[str, Any]:
    """Return the read-only qualification answer for ``change``'s current subject.

    >>> class Echo:
    ...     def workflow(self, repository, profile, op, body):
    ...         return {"result": {"op": op, "request": json.loads(body)}}
    ...     def upload(self, repository, profile, data): ...
    >>> qualification(Echo(), repository="acme", profile="default", change="c1")
    {'op': 'qualification', 'request': {'version': 1, 'change_id': 'c1'}}
    """
    answer: dict[str, Any] = result_of(
        client.workflow(
            repository, profile, "qualification", request_body({"version": 1, "change_id": change})
        )
    )
    return answer


def finalize_if_ready(
    client: WorkflowClient,
    *,
    repository: str,
    profile: str,
    change: str,
    notify: Callable[[CollectEvent], None] = ignore_event,
) -> dict[str, Any]:
    """Finalize ``change``'s receipt if qualification says so; return the qualification after."""
    answer = qualification(client, repository=repository, profile=profile, change=change)
    if answer["next"]["operation"] == "collector_finalize":
        notify(Finalizing())
        client.workflow(
            repository,
            profile,
            "collector_finalize",
            request_body({"version": 1, "change_id": change}),
        )
        answer = qualification(client, repository=repository, profile=profile, change=change)
    return answer


TRANSIENT_KINDS: Final = frozenset(
    {ErrorKind.UNAVAILABLE, ErrorKind.RATE_LIMITED, ErrorKind.INTERNAL, ErrorKind.UNAUTHENTICATED}
)
"""Upload failures worth retrying with the same bytes; any other refusal is final."""


def renewing_ticker(
    notify: Callable[[CollectEvent], None], heartbeat: Callable[[], None], every_ms: int
) -> Callable[[Progress], None]:
    """Report each progress tick and renew the lease every ``every_ms`` while the command runs."""
    last = [0]

    def tick(progress: Progress) -> None:
        notify(Running(progress=progress))
        if progress.elapsed_ms - last[0] >= every_ms:
            last[0] = progress.elapsed_ms
            try:
                heartbeat()
            except TaskError as err:
                # The run continues; the authority judges the upload on its own rules.
                notify(RenewalFailed(error=err))

    return tick


def upload_retained(
    client: WorkflowClient, attempt: AttemptState, repository: str, profile: str
) -> dict[str, Any]:
    """Upload ``attempt``'s retained transfer bytes; keep and return the authority's answer."""
    envelope = attempt.read_transfer()
    result: dict[str, Any] = result_of(client.upload(repository, profile, envelope))
    attempt.write_json(attempt.upload_path, result)
    return result


def mutation_body(claimed: dict[str, Any], action: str, reason: str | None) -> bytes:
    """The request of a mutation (``heartbeat``, ``reconcile``) of the claimed attempt."""
    attempt = claimed["attempt"]
    return request_body(
        {
            "version": 1,
            "request_id": f"{action[:5]}-" + secrets.token_hex(12),
            "action": action,
            "task_id": claimed["task_id"],
            "task_digest": claimed["task_digest"],
            "attempt_id": attempt["attempt_id"],
            "attempt_digest": claimed["attempt_digest"],
            "execution_operation_id": attempt["execution_operation_id"],
            "executor": attempt["executor"],
            "fence": attempt["fence"],
            "reason": reason,
        }
    )


def release_attempt(
    client: WorkflowClient,
    *,
    repository: str,
    profile: str,
    claimed: dict[str, Any],
    reason: str,
) -> TaskError | None:
    """Reconcile a claimed attempt so its task is claimable again; return why it failed, if so.

    ``claimed`` is a claim's outcome (``{task_id, task_digest, attempt, attempt_digest, ...}``)
    or a status view of the attempt (the same fields).
    """
    try:
        client.workflow(
            repository, profile, "reconcile", mutation_body(claimed, "reconcile", reason[:500])
        )
    except TaskError as err:
        return err
    return None


def advice_of(answer: dict[str, Any], change: str, options: CommandOptions) -> Advice:
    """The command to run next for a qualification ``answer``."""
    return advise(
        answer["next"],
        answer["failures"],
        change=change,
        options=options,
        qualified=bool(answer["qualified"]),
        run_failures=answer.get("run_failures", ()),
    )
