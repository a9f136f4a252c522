"""Forge commit statuses: settings and the durable outbox (``publish_forge_status: true``).

A profile published to a forge gets a commit status ``agent-task/<profile>`` on the commit of
each subject, written into the outbox **in the same transaction** as the event it reports:

| event | state | written by |
|---|---|---|
| a task of the subject is claimed (it starts) | ``pending`` | :func:`status_for_claim` |
| a v2 receipt is created | ``success`` | :func:`status_for_receipt` |
| a required task's collector record did not pass | ``failure`` | :func:`status_for_failed_record` |
| a revocation (executor, re-enrollment, collector profile, token) withdraws a receipt | ``error`` | :func:`status_for_withdrawal` (from :func:`taskcore.evidence.withdrawal.withdraw_published`) |

Writing is idempotent per (commit, context, state): a status equal to the newest one of its
commit and context (still queued or delivered) is not written again. A newer status
supersedes an older one not yet delivered, since a forge shows only the newest state of a
context. Delivery (:mod:`taskcore.evidence.forge_delivery`) maps the abstract state to the
forge's spelling (GitLab says ``failed``). Settings hold the *path* of the token file, never
the token.

>>> check_target_url("https://board.example/r/{repository_id}/{receipt_digest}")
'https://board.example/r/{repository_id}/{receipt_digest}'
>>> render_target_url("https://b.example/{commit}", {"commit": "ab12"})
'https://b.example/ab12'
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Final, Literal
from urllib.parse import quote, urlsplit

import attrs

from taskcore.audit import write_event
from taskcore.canonical import canonical_json
from taskcore.clock import Clock
from taskcore.codec import wire_field
from taskcore.contract.common import id_field
from taskcore.digest import AUDIT_INPUT_DOMAIN, domain_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    FORGE_DESCRIPTION_MAX_CHARS,
    FORGE_RECHECK_MAX,
    FORGE_TARGET_URL_MAX_CHARS,
)
from taskcore.store.audit_api import AuditEvent
from taskcore.store.authority_api import SubjectRecord
from taskcore.store.forge_api import ForgeSettingsRecord, OutboxRecord
from taskcore.store.journal_api import TaskRecord
from taskcore.store.storage import Storage, Transaction, open_storage

__all__ = [
    "CONTEXT_PREFIX",
    "STATES",
    "TARGET_URL_FIELDS",
    "ForgeStatusConfig",
    "apply_forge_settings",
    "check_target_url",
    "context_of",
    "outbox_view",
    "published_successes",
    "render_target_url",
    "settings_record",
    "status_for_claim",
    "status_for_failed_record",
    "status_for_receipt",
    "status_for_withdrawal",
]

CONTEXT_PREFIX: Final = "agent-task/"
"""A status's context (GitHub) / name (GitLab) is ``agent-task/<profile>``."""

STATES: Final = ("pending", "success", "failure", "error")
"""The abstract states the outbox records (GitHub's own spelling)."""

TARGET_URL_FIELDS: Final = (
    "repository_id",
    "profile_id",
    "change_id",
    "commit",
    "revision",
    "receipt_digest",
)
"""The placeholders a ``target_url`` template may use (``receipt_digest`` is empty when none)."""

_GITHUB_PROJECT = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
_GITLAB_PROJECT = re.compile(r"[0-9]{1,20}|[A-Za-z0-9_.-]{1,255}(?:/[A-Za-z0-9_.-]{1,255}){1,20}")
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def context_of(profile_id: str) -> str:
    """The status context of a profile.

    >>> context_of("default")
    'agent-task/default'
    """
    return CONTEXT_PREFIX + profile_id


def _check_base_url(url: str, what: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise TaskError(ErrorCode.INVALID_VALUE, f"{what} must be an http(s) URL without query")
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"{what} must use https (plain http is accepted for a loopback host only): the "
            "token travels with every status",
        )


def check_target_url(template: str) -> str:
    """Return ``template`` if it is an http(s) URL using only :data:`TARGET_URL_FIELDS`."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError:
        raise TaskError(ErrorCode.INVALID_VALUE, "target_url has an unbalanced brace") from None
    unknown = sorted(set(fields) - set(TARGET_URL_FIELDS))
    if unknown:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"target_url may use {', '.join(TARGET_URL_FIELDS)}; not {', '.join(unknown)}",
        )
    parts = urlsplit(template)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise TaskError(ErrorCode.INVALID_VALUE, "target_url must be an http(s) URL")
    return template


def render_target_url(template: str | None, values: dict[str, str]) -> str | None:
    """Fill a template (values URL-quoted); ``None`` when there is none or it is too long."""
    if template is None:
        return None
    safe = {name: quote(values.get(name, ""), safe="") for name in TARGET_URL_FIELDS}
    url = template.format_map(safe)
    return url if len(url) <= FORGE_TARGET_URL_MAX_CHARS else None


@attrs.frozen(kw_only=True)
class ForgeStatusConfig:
    """One ``forge_status`` entry of the operator config: where a repository's statuses go.

    ``project`` is ``OWNER/REPO`` on GitHub, the numeric ID or ``group/project`` path on
    GitLab. ``api_url`` is the API base: ``https://api.github.com`` (or a GitHub Enterprise
    ``https://HOST/api/v3``), ``https://gitlab.com/api/v4`` (or a self-managed one).
    ``token_file`` is the absolute path of a file holding the forge token; the token itself
    never appears in the config, the journal, a log or the audit. ``token_header`` defaults to
    ``bearer`` (GitHub) / ``private-token`` (GitLab). ``target_url`` is an optional template
    (see :data:`TARGET_URL_FIELDS`), e.g. a board page under the service's public URL.
    """

    repository_id: str = id_field()
    kind: Literal["github", "gitlab"] = wire_field()
    api_url: str = wire_field(min_len=8, max_len=2048)
    project: str = wire_field(min_len=1, max_len=512)
    token_file: str = wire_field(min_len=1, max_len=4096)
    token_header: Literal["bearer", "private-token"] | None = wire_field(default=None)
    target_url: str | None = wire_field(default=None, max_len=2048)

    def check(self) -> None:
        """Refuse an entry the delivery could not use (``INVALID_VALUE`` / ``INVALID_PATH``)."""
        _check_base_url(self.api_url, "api_url")
        pattern = _GITHUB_PROJECT if self.kind == "github" else _GITLAB_PROJECT
        if pattern.fullmatch(self.project) is None:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "project must be OWNER/REPO (GitHub) or a numeric ID or group/project path "
                "(GitLab)",
            )
        if not Path(self.token_file).is_absolute():
            raise TaskError(ErrorCode.INVALID_PATH, "token_file must be an absolute path")
        if self.target_url is not None:
            check_target_url(self.target_url)


def settings_record(
    config: ForgeStatusConfig, *, profile_id: str, now_ms: int
) -> ForgeSettingsRecord:
    """The stored settings of ``profile_id`` from a checked config entry."""
    config.check()
    header = config.token_header or ("bearer" if config.kind == "github" else "private-token")
    return ForgeSettingsRecord(
        repository_id=config.repository_id,
        profile_id=profile_id,
        kind=config.kind,
        api_url=config.api_url.rstrip("/"),
        project=config.project,
        token_file=config.token_file,
        token_header=header,
        target_url=config.target_url,
        updated_at_ms=now_ms,
    )


def apply_forge_settings(
    storage: Storage,
    clock: Clock,
    *,
    workspace: str,
    repository_id: str,
    profile_id: str,
    config: ForgeStatusConfig | None,
) -> bool:
    """Write (``config``) or remove (``None``) a profile's forge settings: an operator act.

    Audited as ``operator`` in the same transaction (the token file's path is in the
    settings, the token never is). Returns whether anything changed.
    """
    now = clock.now_ms()
    with storage.write() as tx:
        if config is None:
            changed = tx.forge.delete_settings(repository_id, profile_id)
        else:
            record = settings_record(config, profile_id=profile_id, now_ms=now)
            existing = tx.forge.get_settings(repository_id, profile_id)
            changed = existing is None or attrs.evolve(existing, updated_at_ms=now) != record
            if changed:
                tx.forge.put_settings(record)
        if changed:
            write_event(
                tx,
                AuditEvent(
                    at_ms=now,
                    actor="operator",
                    workspace=workspace,
                    operation="forge.settings",
                    input_digest=domain_digest(
                        AUDIT_INPUT_DOMAIN,
                        canonical_json(
                            {
                                "repository_id": repository_id,
                                "profile_id": profile_id,
                                "publish": config is not None,
                            }
                        ),
                    ),
                    outcome="OK",
                ),
            )
    return changed


# -- writing statuses ---------------------------------------------------------------------------


def _description(text: str) -> str:
    return text[:FORGE_DESCRIPTION_MAX_CHARS]


def _enqueue(
    tx: Transaction,
    now_ms: int,
    subject: SubjectRecord,
    *,
    state: str,
    cause: str,
    description: str,
    receipt_digest: str | None = None,
) -> int | None:
    settings = tx.forge.get_settings(subject.repository_id, subject.profile_id)
    if settings is None:
        return None
    context = context_of(subject.profile_id)
    latest = tx.forge.latest(subject.repository_id, subject.profile_id, subject.commit, context)
    if latest is not None and latest.state == state and latest.status in ("queued", "delivered"):
        return None
    target = render_target_url(
        settings.target_url,
        {
            "repository_id": subject.repository_id,
            "profile_id": subject.profile_id,
            "change_id": subject.change_id,
            "commit": subject.commit,
            "revision": subject.revision,
            "receipt_digest": receipt_digest or "",
        },
    )
    return tx.forge.enqueue(
        OutboxRecord(
            seq=0,
            repository_id=subject.repository_id,
            profile_id=subject.profile_id,
            subject_seq=subject.subject_seq,
            change_id=subject.change_id,
            commit=subject.commit,
            revision=subject.revision,
            context=context,
            state=state,
            cause=cause,
            description=_description(description),
            target_url=target,
            receipt_digest=receipt_digest,
            kind=settings.kind,
            api_url=settings.api_url,
            project=settings.project,
            token_file=settings.token_file,
            token_header=settings.token_header,
            status="queued",
            attempts=0,
            next_attempt_at_ms=now_ms,
            last_error=None,
            created_at_ms=now_ms,
            updated_at_ms=now_ms,
        )
    )


def _subject_of(tx: Transaction, task: TaskRecord) -> SubjectRecord | None:
    return tx.authority.get_subject(task.subject_seq)


def status_for_claim(tx: Transaction, now_ms: int, task: TaskRecord) -> int | None:
    """``pending``: a task of the subject started (inside the claim's transaction)."""
    subject = _subject_of(tx, task)
    if subject is None:
        return None
    return _enqueue(
        tx,
        now_ms,
        subject,
        state="pending",
        cause="task_started",
        description=f"agent-task: {task.step_id} started for Change {subject.change_id}",
    )


def status_for_receipt(
    tx: Transaction, now_ms: int, subject: SubjectRecord, receipt_digest: str
) -> int | None:
    """``success``: a v2 receipt was created (inside finalization's transaction)."""
    return _enqueue(
        tx,
        now_ms,
        subject,
        state="success",
        cause="receipt",
        description=f"agent-task: qualified, receipt {receipt_digest[:16]}",
        receipt_digest=receipt_digest,
    )


def status_for_failed_record(
    tx: Transaction, now_ms: int, task: TaskRecord, *, required: bool, outcome: str
) -> int | None:
    """``failure``: a required task's validated collector record did not pass."""
    if not required:
        return None
    subject = _subject_of(tx, task)
    if subject is None:
        return None
    return _enqueue(
        tx,
        now_ms,
        subject,
        state="failure",
        cause="record_not_passed",
        description=f"agent-task: required step {task.step_id} did not pass ({outcome[:32]})",
    )


def status_for_withdrawal(
    tx: Transaction, now_ms: int, subject: SubjectRecord, receipt_digest: str | None, code: str
) -> int | None:
    """``error``: the published receipt no longer passes admission (``code`` says why).

    Written by :func:`taskcore.evidence.withdrawal.withdraw_published`, which rechecks the
    published successes (:meth:`published_successes`) inside a revocation's transaction.
    """
    return _enqueue(
        tx,
        now_ms,
        subject,
        state="error",
        cause="receipt_withdrawn",
        description=f"agent-task: receipt withdrawn ({code[:40]})",
        receipt_digest=receipt_digest,
    )


def published_successes(
    tx: Transaction, repository_id: str | None = None
) -> list[tuple[SubjectRecord, str | None]]:
    """The newest :data:`~taskcore.limits.FORGE_RECHECK_MAX` published ``success`` statuses.

    Each as ``(subject, receipt_digest)`` (of ``repository_id``, or all); a row whose subject
    is gone is left out.
    """
    found: list[tuple[SubjectRecord, str | None]] = []
    for row in tx.forge.published_successes(repository_id, FORGE_RECHECK_MAX):
        subject = tx.authority.get_subject(row.subject_seq)
        if subject is not None:
            found.append((subject, row.receipt_digest))
    return found


def outbox_view(
    data_dir: Path | str, *, repository_id: str | None = None, limit: int = 50
) -> list[dict[str, object]]:
    """The newest outbox rows of the journal in ``data_dir`` for an operator (read-only).

    Each row says where the status goes, its state, and how delivery went (``status``,
    ``attempts``, ``last_error``); no row holds a token.
    """
    if not 1 <= limit <= 1000:
        raise TaskError(ErrorCode.OUT_OF_BOUNDS, "--limit must be 1..1000")
    storage = open_storage(data_dir)
    try:
        with storage.read() as tx:
            rows = tx.forge.rows(repository_id, limit)
    finally:
        storage.close()
    return [
        {
            "seq": r.seq,
            "repository_id": r.repository_id,
            "profile_id": r.profile_id,
            "change_id": r.change_id,
            "commit": r.commit,
            "context": r.context,
            "state": r.state,
            "cause": r.cause,
            "description": r.description,
            "target_url": r.target_url,
            "forge": f"{r.kind} {r.api_url} {r.project}",
            "status": r.status,
            "attempts": r.attempts,
            "last_error": r.last_error,
            "next_attempt_at_ms": r.next_attempt_at_ms,
        }
        for r in rows
    ]
