from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.canonical import canonical_json
from taskcore.contract.collector import (
    DEFAULT_ISOLATION,
    CommandCollectorProfile,
    CommandRecipe,
)
from taskcore.contract.collector_descriptor import PinnedBinding, build_execution_request
from taskcore.contract.collector_records import (
    CleanupEvidence,
    ExecutionOutcome,
    ExecutionRecord,
    FilesystemView,
    Isolation,
    Limit,
    LimitMechanism,
    NetworkAccess,
    RuntimeIdentity,
    SandboxMode,
    SnapshotEvidence,
    capture_output,
    check_execution_record,
    isolation_shortfall,
    runtime_identity_digest,
)
from taskcore.contract.collector_transfer import decode_record
from taskcore.digest import sha256_hex
from taskcore.errors import ErrorCode, TaskError

ISOLATION = Isolation(
    network=NetworkAccess.NONE,
    filesystem=FilesystemView.SNAPSHOT,
    pid_namespace=True,
    tool_sha256="b" * 64,
    read_only_paths=(),
    tmp_size_bytes=1 << 24,
    memory_limit_bytes=1 << 30,
    memory_mechanism=LimitMechanism.CGROUP_V1,
    process_limit=None,
    process_mechanism=LimitMechanism.NONE,
    output_cap_bytes=1 << 20,
)
IDENTITY = RuntimeIdentity(
    version=1,
    system="Linux",
    machine="x86_64",
    sandbox=SandboxMode.BWRAP,
    isolation=ISOLATION,
    executable="/usr/bin/python3",
    executable_sha256="e" * 64,
    interpreter_sha256=None,
    collector_version="taskcore-0.1.0",
)
RECIPE = CommandRecipe(
    argv=("/usr/bin/python3", "-m", "pytest"),
    working_directory=".",
    environment_allowlist=("PATH", "LANG"),
    timeout_ms=60_000,
    output_limit_bytes=64,
)
PROFILE = CommandCollectorProfile(
    version=1,
    kind="command",
    profile_id="cp",
    repository_id="acme",
    workflow_profile_id="default",
    step_id="tests",
    registration_id="reg",
    registration_epoch=1,
    recipe=RECIPE,
    runtime_identity_sha256=runtime_identity_digest(IDENTITY),
)
BINDING = PinnedBinding(
    audience="auth",
    repository_id="acme",
    workflow_profile_id="default",
    step_id="tests",
    task_id="t",
    task_digest="a" * 64,
    attempt_id="a",
    attempt_digest="b" * 64,
    execution_operation_id="op",
    fence=2,
    revision="c" * 64,
    commit="d" * 40,
)
REQUEST = build_execution_request(BINDING, PROFILE)
REQUEST_SHA = sha256_hex(canonical_json(REQUEST))


def capture(data: bytes):
    return capture_output(data, total_bytes=len(data), full_sha256=sha256_hex(data))


def record(**changes) -> ExecutionRecord:
    fields = dict(
        version=1,
        request_sha256=REQUEST_SHA,
        outcome=ExecutionOutcome.PASSED,
        exit_status=0,
        signal=None,
        duration_ms=10,
        stdout=capture(b"3 passed\n"),
        stderr=capture(b""),
        runtime=IDENTITY,
        runtime_identity_sha256=runtime_identity_digest(IDENTITY),
        snapshot=SnapshotEvidence(
            revision="c" * 64,
            commit="d" * 40,
            materialized_revision="c" * 64,
            file_count=3,
            total_bytes=9,
        ),
        environment_names=("PATH",),
        cleanup=CleanupEvidence(process_group_ended=True, snapshot_removed=True),
        limits_reached=(),
        started_at_ms=1,
        finished_at_ms=11,
    )
    fields.update(changes)
    return ExecutionRecord(**fields)


def refused(rec: ExecutionRecord) -> ErrorCode:
    with pytest.raises(TaskError) as err:
        check_execution_record(rec, REQUEST, REQUEST_SHA)
    return err.value.code


def test_a_consistent_passing_record_is_accepted():
    check_execution_record(record(), REQUEST, REQUEST_SHA)


def test_a_failed_record_is_valid_evidence_of_failure():
    check_execution_record(
        record(outcome=ExecutionOutcome.FAILED, exit_status=1), REQUEST, REQUEST_SHA
    )


@pytest.mark.parametrize(
    ("outcome", "exit_status", "signal"),
    [
        (ExecutionOutcome.PASSED, 1, None),
        (ExecutionOutcome.PASSED, None, 9),
        (ExecutionOutcome.FAILED, 0, None),
        (ExecutionOutcome.START_FAILED, 0, None),
        (ExecutionOutcome.TIMED_OUT, 0, None),
    ],
)
def test_an_outcome_that_disagrees_with_the_exit_status_is_refused(outcome, exit_status, signal):
    assert refused(record(outcome=outcome, exit_status=exit_status, signal=signal)) is (
        ErrorCode.BINDING_MISMATCH
    )


def test_a_timeout_shorter_than_the_recipe_is_refused():
    rec = record(outcome=ExecutionOutcome.TIMED_OUT, exit_status=None, duration_ms=5)
    assert refused(rec) is ErrorCode.BINDING_MISMATCH


def test_output_whose_digest_does_not_match_is_refused():
    bad = attrs.evolve(capture(b"3 passed\n"), sha256="0" * 64)
    assert refused(record(stdout=bad)) is ErrorCode.BINDING_MISMATCH


def test_truncation_must_be_declared():
    lying = attrs.evolve(capture(b"tail"), total_bytes=100)
    assert refused(record(stdout=lying)) is ErrorCode.BINDING_MISMATCH


def test_retained_output_above_the_recipe_bound_is_refused():
    assert refused(record(stdout=capture(b"x" * 65))) is ErrorCode.BINDING_MISMATCH


def test_a_truncated_tail_within_the_bound_is_accepted():
    tail = b"y" * 60
    out = capture_output(tail, total_bytes=10_000, full_sha256="f" * 64)
    check_execution_record(record(stdout=out), REQUEST, REQUEST_SHA)


def test_another_runtime_is_a_runtime_mismatch():
    other = attrs.evolve(IDENTITY, sandbox=SandboxMode.NONE)
    rec = record(runtime=other, runtime_identity_sha256=runtime_identity_digest(other))
    assert refused(rec) is ErrorCode.RUNTIME_MISMATCH


def test_a_runtime_digest_that_is_not_the_identitys_is_a_runtime_mismatch():
    assert refused(record(runtime_identity_sha256="0" * 64)) is ErrorCode.RUNTIME_MISMATCH


def test_another_revision_is_a_revision_mismatch():
    snap = SnapshotEvidence(
        revision="e" * 64,
        commit="d" * 40,
        materialized_revision="e" * 64,
        file_count=1,
        total_bytes=1,
    )
    assert refused(record(snapshot=snap)) is ErrorCode.REVISION_MISMATCH


def test_a_materialized_tree_that_differs_is_a_revision_mismatch():
    snap = SnapshotEvidence(
        revision="c" * 64,
        commit="d" * 40,
        materialized_revision="e" * 64,
        file_count=1,
        total_bytes=1,
    )
    assert refused(record(snapshot=snap)) is ErrorCode.REVISION_MISMATCH


def test_environment_outside_the_allow_list_is_refused():
    assert refused(record(environment_names=("PATH", "AWS_SECRET"))) is ErrorCode.BINDING_MISMATCH


@pytest.mark.parametrize("field", ["process_group_ended", "snapshot_removed"])
def test_unconfirmed_cleanup_is_refused(field):
    cleanup = attrs.evolve(
        CleanupEvidence(process_group_ended=True, snapshot_removed=True), **{field: False}
    )
    assert refused(record(cleanup=cleanup)) is ErrorCode.BINDING_MISMATCH


def test_a_record_for_another_request_is_refused():
    assert refused(record(request_sha256="0" * 64)) is ErrorCode.BINDING_MISMATCH


def exceeded(**changes) -> ExecutionRecord:
    out = capture_output(b"y" * 60, total_bytes=(1 << 20) + 1, full_sha256="f" * 64)
    fields = dict(
        outcome=ExecutionOutcome.OUTPUT_EXCEEDED,
        exit_status=None,
        stdout=out,
        limits_reached=(Limit.OUTPUT,),
    )
    return record(**{**fields, **changes})


CAP = ISOLATION.output_cap_bytes

# Any outcome a record could claim instead, in the shape the other rules accept.
OTHER_OUTCOMES = {
    ExecutionOutcome.PASSED: {"exit_status": 0},
    ExecutionOutcome.FAILED: {"exit_status": 1},
    ExecutionOutcome.START_FAILED: {"exit_status": None},
    ExecutionOutcome.TIMED_OUT: {
        "exit_status": None,
        "duration_ms": RECIPE.timeout_ms,
        "finished_at_ms": 1 + RECIPE.timeout_ms,
    },
}


def _totals(stdout_total: int, stderr_total: int) -> dict[str, object]:
    # the tails retained (at most 30 bytes each: the recipe keeps 64 of both)

    def stream(byte: bytes, total: int) -> object:
        if total <= 30:  # nothing dropped: the digest is the retained bytes'
            return capture(byte * total)
        return capture_output(byte * 30, total_bytes=total, full_sha256="f" * 64)

    return {"stdout": stream(b"y", stdout_total), "stderr": stream(b"z", stderr_total)}


def _limits(outcome: ExecutionOutcome, over: bool) -> tuple[Limit, ...]:
    named = {Limit.OUTPUT} if over else set()
    if outcome is ExecutionOutcome.TIMED_OUT:
        named.add(Limit.TIME)
    return tuple(sorted(named, key=lambda limit: limit.value))


def _says_output_exceeded_wrongly(rec: ExecutionRecord) -> None:
    with pytest.raises(TaskError) as err:
        check_execution_record(rec, REQUEST, REQUEST_SHA)
    assert (err.value.code, err.value.path) == (ErrorCode.BINDING_MISMATCH, "$.outcome")
    assert "output_exceeded must say exactly whether the output passed its cap" in str(err.value)


@pytest.mark.parametrize(
    ("stdout_total", "stderr_total"),
    [(CAP + 1, 0), (0, CAP + 1), (CAP // 2 + 1, CAP // 2), (CAP * 4, CAP * 4)],
)
def test_output_past_the_cap_is_output_exceeded_and_nothing_else(stdout_total, stderr_total):
    # stdout and stderr count together against the cap
    totals = _totals(stdout_total, stderr_total)
    accepted = exceeded(**totals)
    check_execution_record(accepted, REQUEST, REQUEST_SHA)
    assert accepted.outcome is ExecutionOutcome.OUTPUT_EXCEEDED
    assert Limit.OUTPUT in accepted.limits_reached
    # The same run recorded under any other outcome is refused, by this rule.
    for outcome, shape in OTHER_OUTCOMES.items():
        rec = record(outcome=outcome, limits_reached=_limits(outcome, True), **shape, **totals)
        _says_output_exceeded_wrongly(rec)


@pytest.mark.parametrize(("stdout_total", "stderr_total"), [(CAP, 0), (CAP // 2, CAP // 2)])
def test_output_at_the_cap_is_not_output_exceeded(stdout_total, stderr_total):
    totals = _totals(stdout_total, stderr_total)
    _says_output_exceeded_wrongly(exceeded(limits_reached=(), **totals))
    for outcome, shape in OTHER_OUTCOMES.items():
        rec = record(outcome=outcome, limits_reached=_limits(outcome, False), **shape, **totals)
        check_execution_record(rec, REQUEST, REQUEST_SHA)


@pytest.mark.parametrize(
    "changes",
    [
        {"outcome": ExecutionOutcome.FAILED, "exit_status": 1},  # past the cap, not said
        {"limits_reached": ()},  # the output limit is not named
        {"exit_status": 137},  # killed by us: no exit status
    ],
)
def test_an_output_overflow_must_be_recorded_as_one(changes):
    assert refused(exceeded(**changes)) is ErrorCode.BINDING_MISMATCH


def test_output_exceeded_within_the_cap_is_refused():
    rec = record(outcome=ExecutionOutcome.OUTPUT_EXCEEDED, exit_status=None)
    assert refused(rec) is ErrorCode.BINDING_MISMATCH


@pytest.mark.parametrize(
    ("changes", "ok"),
    [
        (
            {
                "limits_reached": (Limit.MEMORY,),
                "outcome": ExecutionOutcome.FAILED,
                "exit_status": 137,
            },
            True,
        ),
        ({"limits_reached": (Limit.PROCESSES,)}, False),  # no process mechanism observes it
        ({"limits_reached": (Limit.TIME,)}, False),  # not a timeout
        ({"limits_reached": (Limit.MEMORY, Limit.MEMORY)}, False),
        (
            {"outcome": ExecutionOutcome.TIMED_OUT, "exit_status": None, "duration_ms": 60_000},
            False,
        ),  # a timeout must name the time limit
        (
            {
                "outcome": ExecutionOutcome.TIMED_OUT,
                "exit_status": None,
                "duration_ms": 60_000,
                "limits_reached": (Limit.TIME,),
            },
            True,
        ),
    ],
)
def test_reached_limits_agree_with_the_run_and_the_mechanisms(changes, ok):
    rec = record(**changes)
    if ok:
        check_execution_record(rec, REQUEST, REQUEST_SHA)
    else:
        assert refused(rec) is ErrorCode.BINDING_MISMATCH


def test_isolation_needs_a_mechanism_for_each_limit():
    with pytest.raises(TaskError):
        attrs.evolve(ISOLATION, memory_mechanism=LimitMechanism.NONE)
    with pytest.raises(TaskError):
        attrs.evolve(ISOLATION, process_mechanism=LimitMechanism.RLIMIT)


def test_isolation_shortfall_names_what_the_policy_misses():
    policy = attrs.evolve(DEFAULT_ISOLATION, minimum_sandbox=SandboxMode.BWRAP)
    assert isolation_shortfall(SandboxMode.BWRAP, ISOLATION, policy) is None
    assert "weaker" in isolation_shortfall(SandboxMode.NETNS, ISOLATION, policy)
    open_net = attrs.evolve(ISOLATION, network=NetworkAccess.HOST)
    assert "network" in isolation_shortfall(SandboxMode.BWRAP, open_net, policy)
    allowed = attrs.evolve(policy, network=NetworkAccess.HOST)
    assert isolation_shortfall(SandboxMode.BWRAP, open_net, allowed) is None
    strict = attrs.evolve(policy, process_limit=64)
    assert "process limit" in isolation_shortfall(SandboxMode.BWRAP, ISOLATION, strict)
    small = attrs.evolve(policy, memory_limit_bytes=1 << 24)
    assert "memory limit" in isolation_shortfall(SandboxMode.BWRAP, ISOLATION, small)
    exposed = attrs.evolve(ISOLATION, read_only_paths=("/opt/x",))
    assert "/opt/x" in isolation_shortfall(SandboxMode.BWRAP, exposed, policy)
    capped = attrs.evolve(policy, output_cap_bytes=10)
    assert "output cap" in isolation_shortfall(SandboxMode.BWRAP, ISOLATION, capped)


@given(st.binary(max_size=200), st.integers(0, 1000))
def test_records_round_trip_through_their_canonical_bytes(data, extra):
    out = capture_output(data, total_bytes=len(data) + extra, full_sha256=sha256_hex(data))
    rec = record(stdout=out)
    assert decode_record(ExecutionRecord, canonical_json(rec)) == rec
