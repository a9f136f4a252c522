"""Finite review: the deterministic controller and replay validation (types in contract).

A finite-review collector asks a model, through one operator-pinned transport, to review each
required path of the exact revision, within fixed budgets. The :func:`run_finite_review`
controller is deterministic given its transport's answers: for each required source in
request order it prepares a canonical *reservation* (ticket, prompt digest, exposed paths),
reserves it durably in a :class:`ReviewJournal` *before* calling the transport, then retains
the transport's raw answer as the call's observation. The record keeps every call's
reservation digest, ticket, prompt digest, exposed sources and raw answer, so the authority
can run the same controller again against a :class:`ReplayTransport` that serves only the
retained answers and a validation-only journal, and require the complete derived record to be
byte-identical (:func:`validate_review_record`). Imported success flags alone never qualify.

Transport answers use the Claude Code ``--output-format json`` envelope: an object with
``type: "result"``, ``is_error``, ``result`` (the model's text) and ``usage`` (input and
output tokens). The model's text must be a JSON object ``{"verdict": "pass"|"fail",
"findings": [{"severity": "info"|"warning"|"error", "message": ...}]}``; anything else leaves
the path uncovered and the outcome ``uncertain``.

Only the ``claude_code`` basis may be installed or imported. No live model transport is
qualified here: tests drive the controller with explicitly fabricated envelopes.

>>> ReviewOutcome("uncertain").value
'uncertain'
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final, Protocol

from taskcore.canonical import canonical_json
from taskcore.contract.collector import FiniteReviewCollectorProfile, TransportBasis
from taskcore.contract.collector_review import (
    RESPONSE_MAX_CHARS,
    ReviewCall,
    ReviewFinding,
    ReviewOutcome,
    ReviewRecord,
    ReviewRequest,
    ReviewSource,
    Severity,
    build_review_request,
)
from taskcore.digest import domain_digest, sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import FINDING_MAX_CHARS

__all__ = [
    "REVIEW_TICKET_DOMAIN",
    "MemoryReviewJournal",
    "RecordedTransport",
    "ReplayTransport",
    "ReviewCall",
    "ReviewFinding",
    "ReviewJournal",
    "ReviewOutcome",
    "ReviewRecord",
    "ReviewRequest",
    "ReviewSource",
    "ReviewTransport",
    "Severity",
    "build_review_request",
    "run_finite_review",
    "validate_review_record",
]

REVIEW_TICKET_DOMAIN: Final = "agentscm.agent-workflow-review-ticket.v1"
"""Domain of a review call's ticket."""


class ReviewTransport(Protocol):
    """Something that answers one prompt (the pinned model behind the pinned executable)."""

    basis: TransportBasis

    def call(self, prompt: bytes, *, ticket: str, timeout_ms: int) -> str:
        """Return the raw answer envelope for ``prompt``."""
        ...


class ReviewJournal(Protocol):
    """Durable reservations: each call is reserved before its external effect."""

    def reserve(self, ticket: str, reservation: bytes) -> None:
        """Record the reservation; a ticket reserved before is ``EXECUTION_UNCERTAIN``."""
        ...

    def observe(self, ticket: str, response: str) -> None:
        """Retain the raw answer of a reserved call."""
        ...


class MemoryReviewJournal:
    """A validation-only journal (replay) or a test journal: reservations kept in memory."""

    def __init__(self) -> None:
        self.reservations: dict[str, bytes] = {}
        self.observations: dict[str, str] = {}

    def reserve(self, ticket: str, reservation: bytes) -> None:
        """Record the reservation once."""
        if ticket in self.reservations:
            raise TaskError(ErrorCode.EXECUTION_UNCERTAIN, "this review call was already reserved")
        self.reservations[ticket] = reservation

    def observe(self, ticket: str, response: str) -> None:
        """Retain the answer of a reserved call."""
        if ticket not in self.reservations:
            raise TaskError(ErrorCode.INTERNAL, "an answer arrived for an unreserved call")
        self.observations[ticket] = response


class RecordedTransport:
    """A scripted transport: answers prompts with fabricated envelopes, in order (tests)."""

    def __init__(self, answers: Sequence[str], *, basis: TransportBasis) -> None:
        self.basis = basis
        self._answers = list(answers)
        self.prompts: list[bytes] = []

    def call(self, prompt: bytes, *, ticket: str, timeout_ms: int) -> str:
        """Return the next scripted answer."""
        self.prompts.append(prompt)
        if not self._answers:
            raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, "the scripted transport has no answer")
        return self._answers.pop(0)


class ReplayTransport:
    """Serves only the retained answers of a record, checking every prompt and ticket."""

    def __init__(self, record: ReviewRecord) -> None:
        self.basis = record.transport_basis
        self._calls = list(record.calls)
        self._next = 0

    def call(self, prompt: bytes, *, ticket: str, timeout_ms: int) -> str:
        """Return the retained answer of the next call if the prompt and ticket are the same."""
        if self._next >= len(self._calls):
            raise TaskError(ErrorCode.BINDING_MISMATCH, "replay needs a call the record lacks")
        call = self._calls[self._next]
        self._next += 1
        if call.ticket != ticket or call.prompt_sha256 != sha256_hex(prompt):
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                f"review call {call.index} was made with another prompt or ticket",
                path=f"$.calls[{call.index}]",
            )
        return call.response

    @property
    def exhausted(self) -> bool:
        """Whether every retained call was replayed."""
        return self._next == len(self._calls)


def _ticket(request: ReviewRequest, index: int, path: str) -> str:
    return domain_digest(
        REVIEW_TICKET_DOMAIN,
        canonical_json({"attempt_digest": request.attempt_digest, "index": index, "path": path}),
    )


def _prompt(request: ReviewRequest, ticket: str, source: ReviewSource, data: bytes) -> bytes:
    return canonical_json(
        {
            "version": 1,
            "ticket": ticket,
            "model": request.model,
            "policy_digest": request.policy_digest,
            "instruction": (
                "Review the file below against the installed policy. Answer with one JSON "
                'object {"verdict": "pass"|"fail", "findings": [{"severity": '
                '"info"|"warning"|"error", "message": "..."}]} and nothing else.'
            ),
            "path": source.path,
            "sha256": source.sha256,
            "content": data.decode("utf-8", "replace"),
        }
    )


def _parse_answer(raw: str) -> tuple[str, list[tuple[Severity, str]], int, int] | None:
    """Return ``(verdict, findings, input_tokens, output_tokens)`` or ``None`` if malformed."""
    try:
        envelope = json.loads(raw)
        if (
            not isinstance(envelope, dict)
            or envelope.get("type") != "result"
            or envelope.get("is_error") is not False
        ):
            return None
        usage = envelope.get("usage")
        text = envelope.get("result")
        if not isinstance(usage, dict) or not isinstance(text, str):
            return None
        tin, tout = usage.get("input_tokens"), usage.get("output_tokens")
        if type(tin) is not int or type(tout) is not int or tin < 0 or tout < 0:
            return None
        body = json.loads(text)
        verdict = body.get("verdict") if isinstance(body, dict) else None
        items = body.get("findings") if isinstance(body, dict) else None
        if verdict not in ("pass", "fail") or not isinstance(items, list):
            return None
        findings = []
        for item in items[:64]:
            if not isinstance(item, dict) or not isinstance(item.get("message"), str):
                return None
            findings.append((Severity(item.get("severity")), item["message"][:FINDING_MAX_CHARS]))
        return verdict, findings, tin, tout
    except (ValueError, TypeError):
        return None


def run_finite_review(
    request: ReviewRequest,
    sources: Mapping[str, bytes],
    transport: ReviewTransport,
    journal: ReviewJournal,
    *,
    request_sha256: str,
    executable_sha256_before: str,
    executable_sha256_after: str | None = None,
) -> ReviewRecord:
    """Run the finite controller and return the complete derived record (deterministic).

    One call per required source, in request order, each reserved before it is made; the
    run stops at the call or token budget (leaving the rest uncovered, so ``uncertain``).
    ``executable_sha256_after`` is what the executable hashed to after dispatch (the same as
    before unless it changed under us).
    """
    if transport.basis is not request.transport_basis:
        raise TaskError(ErrorCode.BINDING_MISMATCH, "the transport is not the pinned basis")
    calls: list[ReviewCall] = []
    coverage: list[str] = []
    findings: list[ReviewFinding] = []
    tin_total = tout_total = 0
    failed = incomplete = False
    for index, source in enumerate(request.sources):
        data = sources.get(source.path)
        if data is None or sha256_hex(data) != source.sha256:
            raise TaskError(
                ErrorCode.REVISION_MISMATCH, f"source {source.path!r} is not the revision's"
            )
        if index >= request.max_calls:
            incomplete = True
            break
        ticket = _ticket(request, index, source.path)
        prompt = _prompt(request, ticket, source, data)
        prompt_sha = sha256_hex(prompt)
        reservation = canonical_json(
            {
                "ticket": ticket,
                "index": index,
                "prompt_sha256": prompt_sha,
                "source_paths": [source.path],
                "model": request.model,
                "provider_scope": request.provider_scope,
            }
        )
        journal.reserve(ticket, reservation)
        answer = transport.call(prompt, ticket=ticket, timeout_ms=request.timeout_ms)
        journal.observe(ticket, answer)
        parsed = _parse_answer(answer)
        tin, tout = (parsed[2], parsed[3]) if parsed else (0, 0)
        calls.append(
            ReviewCall(
                index=index,
                ticket=ticket,
                reservation_sha256=sha256_hex(reservation),
                prompt_sha256=prompt_sha,
                source_paths=(source.path,),
                response=answer[:RESPONSE_MAX_CHARS],
                response_sha256=sha256_hex(answer.encode("utf-8")),
                input_tokens=tin,
                output_tokens=tout,
            )
        )
        tin_total += tin
        tout_total += tout
        if parsed is None:
            incomplete = True
            continue
        if tin_total > request.max_input_tokens or tout_total > request.max_output_tokens:
            incomplete = True
            break
        coverage.append(source.path)
        verdict, rows, _, _ = parsed
        findings.extend(ReviewFinding(path=source.path, severity=s, message=m) for s, m in rows)
        if verdict == "fail" or any(s is Severity.ERROR for s, _ in rows):
            failed = True
    after = executable_sha256_after or executable_sha256_before
    if after != executable_sha256_before:
        incomplete = True
    if failed:
        outcome = ReviewOutcome.FAILED
    elif incomplete or len(coverage) != len(request.sources):
        outcome = ReviewOutcome.UNCERTAIN
    else:
        outcome = ReviewOutcome.PASSED
    return ReviewRecord(
        version=1,
        request_sha256=request_sha256,
        transport_basis=transport.basis,
        executable_sha256_before=executable_sha256_before,
        executable_sha256_after=after,
        calls=tuple(calls),
        coverage=tuple(coverage),
        findings=tuple(findings),
        outcome=outcome,
        input_tokens=tin_total,
        output_tokens=tout_total,
    )


def validate_review_record(
    record: ReviewRecord,
    request: ReviewRequest,
    request_sha256: str,
    sources: Mapping[str, bytes],
    profile: FiniteReviewCollectorProfile,
) -> None:
    """Replay ``record`` and require the complete derived record to be identical.

    The basis must be the qualified ``claude_code`` and the pinned one; the executable must
    have hashed to the pinned digest before and after dispatch; then the controller runs
    again against a :class:`ReplayTransport` and a validation-only journal, every prepared
    reservation, ticket, prompt and exposed source must match, and the derived record's
    canonical bytes must equal the submitted record's.
    """
    profile.validate_for_installation()
    if record.transport_basis is not profile.transport_basis:
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "the record used another transport basis",
            path="$.transport_basis",
        )
    if (
        record.executable_sha256_before != profile.executable_sha256
        or record.executable_sha256_after != profile.executable_sha256
    ):
        raise TaskError(
            ErrorCode.RUNTIME_MISMATCH,
            "the review executable is not the pinned one (before or after dispatch)",
            path="$.executable_sha256_before",
        )
    replay = ReplayTransport(record)
    derived = run_finite_review(
        request,
        sources,
        replay,
        MemoryReviewJournal(),
        request_sha256=request_sha256,
        executable_sha256_before=record.executable_sha256_before,
        executable_sha256_after=record.executable_sha256_after,
    )
    if not replay.exhausted or canonical_json(derived) != canonical_json(record):
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "replaying the retained review calls does not give the submitted record",
        )
