"""Finite review with explicitly fabricated Claude Code envelopes (no live model)."""

from __future__ import annotations

import json

import attrs
import pytest
from taskcore.canonical import canonical_json
from taskcore.collector.review import (
    MemoryReviewJournal,
    RecordedTransport,
    ReviewOutcome,
    ReviewRecord,
    build_review_request,
    run_finite_review,
    validate_review_record,
)
from taskcore.contract.collector import FiniteReviewCollectorProfile, TransportBasis
from taskcore.contract.collector_descriptor import PinnedBinding
from taskcore.contract.collector_transfer import decode_record
from taskcore.digest import sha256_hex
from taskcore.errors import ErrorCode, TaskError

SOURCES = {"src/app.py": b"print('hi')\n", "README.md": b"# app\n"}
EXE = "e" * 64


def profile(**changes) -> FiniteReviewCollectorProfile:
    fields = dict(
        version=1,
        kind="finite_review",
        profile_id="rp",
        repository_id="acme",
        workflow_profile_id="default",
        step_id="review",
        registration_id="reg",
        registration_epoch=1,
        executable_sha256=EXE,
        provider_scope="anthropic",
        transport_basis=TransportBasis.CLAUDE_CODE,
        model="claude-sonnet",
        policy_digest="f" * 64,
        required_paths=("src/app.py", "README.md"),
        max_calls=5,
        max_input_tokens=10_000,
        max_output_tokens=2_000,
        timeout_ms=60_000,
    )
    fields.update(changes)
    return FiniteReviewCollectorProfile(**fields)


BINDING = PinnedBinding(
    audience="auth",
    repository_id="acme",
    workflow_profile_id="default",
    step_id="review",
    task_id="t",
    task_digest="a" * 64,
    attempt_id="a",
    attempt_digest="b" * 64,
    execution_operation_id="op",
    fence=1,
    revision="c" * 64,
    commit="d" * 40,
)


def envelope(verdict="pass", findings=(), tokens=(100, 20), is_error=False) -> str:
    text = json.dumps({"verdict": verdict, "findings": list(findings)})
    return json.dumps(
        {
            "type": "result",
            "subtype": "success",
            "is_error": is_error,
            "result": text,
            "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]},
        }
    )


def review(answers, prof=None, before=EXE, after=None):
    prof = prof or profile()
    request = build_review_request(BINDING, prof, SOURCES)
    request_sha = sha256_hex(canonical_json(request))
    journal = MemoryReviewJournal()
    record = run_finite_review(
        request,
        SOURCES,
        RecordedTransport(answers, basis=prof.transport_basis),
        journal,
        request_sha256=request_sha,
        executable_sha256_before=before,
        executable_sha256_after=after,
    )
    return prof, request, request_sha, record, journal


def test_every_path_passing_is_a_passed_review_that_replays():
    prof, request, sha, record, _ = review([envelope(), envelope()])
    assert record.outcome is ReviewOutcome.PASSED
    assert record.coverage == ("src/app.py", "README.md")
    validate_review_record(record, request, sha, SOURCES, prof)


def test_each_call_is_reserved_before_it_is_made():
    _, _, _, record, journal = review([envelope(), envelope()])
    assert [c.ticket for c in record.calls] == list(journal.reservations)
    assert [sha256_hex(journal.reservations[c.ticket]) for c in record.calls] == [
        c.reservation_sha256 for c in record.calls
    ]


def test_an_error_finding_fails_the_review():
    finding = {"severity": "error", "message": "prints to stdout"}
    prof, request, sha, record, _ = review([envelope("pass", [finding]), envelope()])
    assert record.outcome is ReviewOutcome.FAILED
    assert record.findings[0].path == "src/app.py"
    validate_review_record(record, request, sha, SOURCES, prof)


def test_a_malformed_answer_leaves_the_path_uncovered_and_uncertain():
    _, _, _, record, _ = review(["not json", envelope()])
    assert record.outcome is ReviewOutcome.UNCERTAIN
    assert record.coverage == ("README.md",)


def test_an_error_envelope_is_not_a_pass():
    _, _, _, record, _ = review([envelope(is_error=True), envelope()])
    assert record.outcome is ReviewOutcome.UNCERTAIN


def test_the_call_budget_stops_the_review_uncertain():
    _, _, _, record, _ = review([envelope()], prof=profile(max_calls=1))
    assert len(record.calls) == 1
    assert record.outcome is ReviewOutcome.UNCERTAIN


def test_the_token_budget_stops_the_review_uncertain():
    _, _, _, record, _ = review([envelope(tokens=(9_000, 10)), envelope(tokens=(9_000, 10))])
    assert record.outcome is ReviewOutcome.UNCERTAIN
    assert record.coverage == ("src/app.py",)


def test_an_executable_that_changed_during_dispatch_is_never_a_pass():
    _, _, _, record, _ = review([envelope(), envelope()], after="0" * 64)
    assert record.outcome is ReviewOutcome.UNCERTAIN


def test_an_edited_retained_answer_does_not_replay():
    prof, request, sha, record, _ = review([envelope(), envelope()])
    calls = list(record.calls)
    calls[0] = attrs.evolve(calls[0], response=envelope("fail"))
    tampered = attrs.evolve(record, calls=tuple(calls))
    with pytest.raises(TaskError) as err:
        validate_review_record(tampered, request, sha, SOURCES, prof)
    assert err.value.code is ErrorCode.BINDING_MISMATCH


def test_an_imported_success_flag_alone_never_qualifies():
    prof, request, sha, record, _ = review(["garbage", envelope()])
    flipped = attrs.evolve(
        record, outcome=ReviewOutcome.PASSED, coverage=("src/app.py", "README.md")
    )
    with pytest.raises(TaskError) as err:
        validate_review_record(flipped, request, sha, SOURCES, prof)
    assert err.value.code is ErrorCode.BINDING_MISMATCH


def test_a_dropped_call_does_not_replay():
    prof, request, sha, record, _ = review([envelope(), envelope()])
    short = attrs.evolve(record, calls=record.calls[:1])
    with pytest.raises(TaskError) as err:
        validate_review_record(short, request, sha, SOURCES, prof)
    assert err.value.code is ErrorCode.BINDING_MISMATCH


def test_changed_sources_are_a_revision_mismatch_on_replay():
    prof, request, sha, record, _ = review([envelope(), envelope()])
    changed = dict(SOURCES, **{"README.md": b"# other\n"})
    with pytest.raises(TaskError) as err:
        validate_review_record(record, request, sha, changed, prof)
    assert err.value.code is ErrorCode.REVISION_MISMATCH


def test_a_fixture_basis_is_refused_at_import():
    prof, request, sha, record, _ = review(
        [envelope(), envelope()], prof=profile(transport_basis=TransportBasis.FIXTURE)
    )
    with pytest.raises(TaskError) as err:
        validate_review_record(record, request, sha, SOURCES, prof)
    assert err.value.code is ErrorCode.INVALID_VALUE


def test_an_executable_other_than_the_pinned_one_is_a_runtime_mismatch():
    prof, request, sha, record, _ = review([envelope(), envelope()], before="1" * 64)
    with pytest.raises(TaskError) as err:
        validate_review_record(record, request, sha, SOURCES, prof)
    assert err.value.code is ErrorCode.RUNTIME_MISMATCH


def test_review_records_round_trip_canonically():
    _, _, _, record, _ = review([envelope(), envelope()])
    assert decode_record(ReviewRecord, canonical_json(record)) == record


def test_the_transport_must_be_the_pinned_basis():
    prof = profile()
    request = build_review_request(BINDING, prof, SOURCES)
    with pytest.raises(TaskError) as err:
        run_finite_review(
            request,
            SOURCES,
            RecordedTransport([], basis=TransportBasis.FIXTURE),
            MemoryReviewJournal(),
            request_sha256="0" * 64,
            executable_sha256_before=EXE,
        )
    assert err.value.code is ErrorCode.BINDING_MISMATCH
