"""Deliver the commit-status outbox to GitHub and GitLab, with bounded exponential back-off.

The request shapes (``docs/operator.md`` has them with their sources):

* GitHub, "Create a commit status"
  (https://docs.github.com/en/rest/commits/statuses?apiVersion=2022-11-28#create-a-commit-status):
  ``POST {api_url}/repos/{owner}/{repo}/statuses/{sha}``, headers
  ``Accept: application/vnd.github+json``, ``Authorization: Bearer <token>``,
  ``X-GitHub-Api-Version: 2022-11-28``, body ``{"state", "target_url"?, "description",
  "context"}`` with ``state`` in error|failure|pending|success;
* GitLab, "Set the pipeline status of a commit"
  (https://docs.gitlab.com/api/commits/#set-the-pipeline-status-of-a-commit):
  ``POST {api_url}/projects/{id}/statuses/{sha}`` (``id`` URL-encoded), header
  ``PRIVATE-TOKEN: <token>`` (or ``Authorization: Bearer``), body ``{"state", "name",
  "target_url"?, "description"}`` with ``state`` in pending|running|success|failed|canceled|
  skipped.

:class:`ForgeDelivery` is the worker ``agent-task serve`` runs: an outbox worker
(:mod:`taskcore.outbox`, the pattern the webhooks share) over the ``forge_outbox`` table. Each
round it leases the due rows (so a second worker on the same journal leaves them alone), sends them outside any
transaction, then records the outcome: 2xx ``delivered``; 429, 5xx, a network failure, a
timeout or an unreadable token file retried after ``min(cap, base * 2**(attempts-1))`` (a
429's ``Retry-After`` is honoured up to the cap); any other 4xx ``refused`` and never
retried; ``given_up`` after :data:`~taskcore.limits.FORGE_ATTEMPTS_MAX` attempts. Rows live
in the journal, so a restart picks up where the last process stopped. A crash between a
2xx and its record resends the same (commit, context, state), which changes nothing on the
forge. The token is read from its file for each request and goes nowhere else: errors and
the audit carry fixed categories (``http_503``, ``unreachable``), never response text.

>>> BackoffPolicy(base_ms=1000, cap_ms=5000, attempts_max=5).delay_ms(3)
4000
>>> BackoffPolicy(base_ms=1000, cap_ms=5000, attempts_max=5).delay_ms(9)
5000
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Protocol
from urllib.parse import quote

import attrs

from taskcore.audit import write_event
from taskcore.canonical import canonical_json
from taskcore.clock import Clock, SystemClock
from taskcore.digest import AUDIT_INPUT_DOMAIN, domain_digest
from taskcore.errors import TaskError
from taskcore.limits import FORGE_REQUEST_TIMEOUT_SECONDS
from taskcore.outbox import Attempt, BackoffPolicy, OutboxWorker, Sent
from taskcore.store.audit_api import AuditEvent
from taskcore.store.forge_api import OutboxRecord
from taskcore.store.storage import Storage, Transaction

if TYPE_CHECKING:
    from taskcore.service import Service

__all__ = [
    "DELIVERY_ACTOR",
    "GITHUB_API_VERSION",
    "GITHUB_STATES",
    "GITLAB_STATES",
    "Attempt",
    "BackoffPolicy",
    "ForgeDelivery",
    "ForgeReply",
    "ForgeRequest",
    "Transport",
    "UrllibTransport",
    "build_request",
    "start_forge_delivery",
]

GITHUB_API_VERSION: Final = "2022-11-28"
GITHUB_STATES: Final = {
    "pending": "pending",
    "success": "success",
    "failure": "failure",
    "error": "error",
}
"""Abstract state -> GitHub ``state``."""
GITLAB_STATES: Final = {
    "pending": "pending",
    "success": "success",
    "failure": "failed",
    "error": "failed",
}
"""Abstract state -> GitLab ``state``."""

DELIVERY_ACTOR: Final = "forge-delivery"
"""The audit actor of a delivery's final outcome (one event per status, not per attempt)."""

_TOKEN_MAX = 4096
_USER_AGENT = "agent-task"


@attrs.frozen(kw_only=True)
class ForgeRequest:
    """One HTTP request to a forge. ``headers`` carry the token: never log this object."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def __repr__(self) -> str:
        return f"ForgeRequest({self.method} {self.url})"


@attrs.frozen(kw_only=True)
class ForgeReply:
    """A forge's answer: the status code and a ``Retry-After`` header if any."""

    status: int
    retry_after: str | None = None


class Transport(Protocol):
    """Sends a :class:`ForgeRequest`; raises ``OSError`` when the forge cannot be reached."""

    def send(self, request: ForgeRequest, timeout: float) -> ForgeReply:
        """Send and return the reply (any status code is a reply)."""
        ...


class UrllibTransport:
    """The standard library's HTTP client (the response body is read and dropped).

    ``timeout`` bounds the whole exchange, not only each socket read: a forge (or anything
    in between) that trickles its answer a byte at a time would otherwise hold the delivery
    worker for as long as it likes. At the deadline a watchdog shuts the socket down, the
    blocked read returns, and the attempt is a ``timeout``.
    """

    def send(self, request: ForgeRequest, timeout: float) -> ForgeReply:
        """POST ``request``."""
        parts = urllib.parse.urlsplit(request.url)
        secure = parts.scheme == "https"
        conn: http.client.HTTPConnection = (
            http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=timeout)
            if secure
            else http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
        )
        fired = threading.Event()

        def cut() -> None:
            fired.set()
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        watchdog = threading.Timer(timeout, cut)
        watchdog.daemon = True
        watchdog.start()
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            conn.request(request.method, target, body=request.body, headers=dict(request.headers))
            response = conn.getresponse()
            response.read(65536)
            status = int(response.status)
            retry_after = response.getheader("Retry-After") if status >= 400 else None
        except (OSError, http.client.HTTPException) as exc:
            if fired.is_set():
                raise TimeoutError(f"the forge did not answer within {timeout:g} s") from None
            if isinstance(exc, OSError):
                raise
            raise OSError(f"the forge's answer is not HTTP: {exc!r}") from None
        finally:
            watchdog.cancel()
            conn.close()
        if fired.is_set():
            raise TimeoutError(f"the forge did not answer within {timeout:g} s")
        return ForgeReply(status=status, retry_after=retry_after)


def build_request(row: OutboxRecord, token: str) -> ForgeRequest:
    """The forge request for an outbox row (see the module docstring for the shapes)."""
    auth = (
        ("Authorization", f"Bearer {token}")
        if row.token_header == "bearer"  # noqa: S105 - a header name, not a secret
        else ("PRIVATE-TOKEN", token)
    )
    if row.kind == "github":
        owner, repo = row.project.split("/", 1)
        url = (
            f"{row.api_url}/repos/{quote(owner, safe='')}/{quote(repo, safe='')}"
            f"/statuses/{row.commit}"
        )
        headers: tuple[tuple[str, str], ...] = (
            ("Accept", "application/vnd.github+json"),
            auth,
            ("X-GitHub-Api-Version", GITHUB_API_VERSION),
            ("Content-Type", "application/json"),
            ("User-Agent", _USER_AGENT),
        )
        body: dict[str, str] = {
            "state": GITHUB_STATES[row.state],
            "description": row.description,
            "context": row.context,
        }
    else:
        url = f"{row.api_url}/projects/{quote(row.project, safe='')}/statuses/{row.commit}"
        headers = (
            auth,
            ("Accept", "application/json"),
            ("Content-Type", "application/json"),
            ("User-Agent", _USER_AGENT),
        )
        body = {
            "state": GITLAB_STATES[row.state],
            "name": row.context,
            "description": row.description,
        }
    if row.target_url is not None:
        body["target_url"] = row.target_url
    return ForgeRequest(
        method="POST", url=url, headers=headers, body=json.dumps(body).encode("utf-8")
    )


def _read_token(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            token = handle.read(_TOKEN_MAX + 1).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not token or len(token) > _TOKEN_MAX or any(c.isspace() for c in token):
        return None
    return token


def _retry_after_ms(value: str | None) -> int | None:
    if value is None or not value.strip().isdigit():
        return None
    return int(value.strip()) * 1000


class ForgeDelivery(OutboxWorker[OutboxRecord]):
    """The forge-status outbox worker (see the module docstring); ``deliver_due`` is one round.

    The loop, leases and back-off are :class:`taskcore.outbox.OutboxWorker`'s; this class
    gives it the ``forge_outbox`` table, the token read and the forge request.
    """

    thread_name = "forge-delivery"

    def __init__(
        self,
        storage: Storage,
        *,
        clock: Clock | None = None,
        transport: Transport | None = None,
        policy: BackoffPolicy | None = None,
        lease_ms: int = 60_000,
        batch: int = 16,
        timeout_s: float = FORGE_REQUEST_TIMEOUT_SECONDS,
        poll_ms: int = 1_000,
    ) -> None:
        super().__init__(
            storage,
            clock=clock or SystemClock(),
            policy=policy or BackoffPolicy(),
            lease_ms=lease_ms,
            batch=batch,
            poll_ms=poll_ms,
        )
        self.transport: Transport = transport or UrllibTransport()
        self.timeout_s = timeout_s

    def next_due(self, tx: Transaction) -> int | None:
        """The earliest next attempt of a queued status."""
        return tx.forge.next_due_at()

    def due(self, tx: Transaction, now_ms: int, limit: int) -> tuple[OutboxRecord, ...]:
        """Queued statuses due now, oldest first."""
        return tx.forge.due(now_ms, limit)

    def hold(self, tx: Transaction, row: OutboxRecord, until_ms: int, now_ms: int) -> None:
        """Lease a status while it is sent."""
        tx.forge.update_delivery(
            row.seq,
            status="queued",
            attempts=row.attempts,
            next_attempt_at_ms=until_ms,
            last_error=row.last_error,
            now_ms=now_ms,
        )

    def send(self, row: OutboxRecord) -> Sent:
        """One attempt: the token read from its file, the request to the forge."""
        token = _read_token(row.token_file)
        if token is None:
            return Sent(error="token_unreadable")
        try:
            reply = self.transport.send(build_request(row, token), self.timeout_s)
        except TimeoutError:
            return Sent(error="timeout")
        except OSError as exc:
            reason = getattr(exc, "reason", None)
            return Sent(error="timeout" if isinstance(reason, TimeoutError) else "unreachable")
        if 200 <= reply.status < 300:
            return Sent(error=None, http_status=reply.status)
        return Sent(
            error=f"http_{reply.status}",
            http_status=reply.status,
            retry_after_ms=_retry_after_ms(reply.retry_after),
        )

    def age_ms(self, row: OutboxRecord, now_ms: int) -> int:
        """Forge statuses give up by attempts only."""
        return 0

    def settle(
        self,
        tx: Transaction,
        row: OutboxRecord,
        status: str,
        sent: Sent,
        next_at_ms: int,
        now_ms: int,
    ) -> str | None:
        """Record the attempt; a final outcome is audited once (actor ``forge-delivery``)."""
        current = tx.forge.get(row.seq)
        if current is None:
            return None
        # A row superseded while it was in flight stays superseded; the attempt counts.
        final_status = "superseded" if current.status == "superseded" else status
        tx.forge.update_delivery(
            row.seq,
            status=final_status,
            attempts=row.attempts + 1,
            next_attempt_at_ms=next_at_ms,
            last_error=sent.error,
            now_ms=now_ms,
        )
        if final_status in ("delivered", "refused", "given_up"):
            write_event(
                tx,
                AuditEvent(
                    at_ms=now_ms,
                    actor=DELIVERY_ACTOR,
                    workspace="",
                    operation="forge.status",
                    input_digest=domain_digest(
                        AUDIT_INPUT_DOMAIN,
                        canonical_json(
                            {
                                "seq": row.seq,
                                "commit": row.commit,
                                "context": row.context,
                                "state": row.state,
                            }
                        ),
                    ),
                    outcome="OK" if final_status == "delivered" else (sent.error or final_status),
                ),
            )
        return final_status

    def start(self, on_error: Callable[[TaskError], None] = lambda err: None) -> ForgeDelivery:
        """Run rounds in a daemon thread until :meth:`stop`."""
        super().start(on_error)
        return self


def start_forge_delivery(
    service: Service, *, transport: Transport | None = None, policy: BackoffPolicy | None = None
) -> ForgeDelivery:
    """Start the delivery worker on a :class:`~taskcore.service.Service`'s journal and clock."""
    return ForgeDelivery(
        service.storage, clock=service.clock, transport=transport, policy=policy
    ).start()
