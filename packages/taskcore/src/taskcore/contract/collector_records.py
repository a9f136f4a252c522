"""The typed command records a collector transfers: :class:`ExecutionRequest` and its record.

An :class:`ExecutionRequest` is the *pinned* request: every field is derived by the authority
from the claimed attempt, the current subject and the installed collector profile, so the
authority can regenerate it byte for byte on import and refuse anything else. The
:class:`ExecutionRecord` is what the local runtime observed: outcome, exit status, bounded
output with digests, the runtime identity, the snapshot it ran on and the cleanup it confirmed.

:func:`check_execution_record` holds the collector's record rules; the authority calls it on
import (seed: "validates the existing collector's outcome, output, isolation and cleanup
rules"), the collector calls it before signing.

>>> capture = capture_output(b"ok", total_bytes=2, full_sha256=sha256_hex(b"ok"))
>>> capture.truncated, capture.retained_bytes
(False, 2)
"""

from __future__ import annotations

import base64
import binascii
import enum
from typing import Final

import attrs

from taskcore.canonical import canonical_json
from taskcore.codec import wire_field
from taskcore.contract.collector import (
    COMMAND_OUTPUT_MAX_BYTES,
    ENV_NAME_PATTERN,
    CommandRecipe,
    IsolationPolicy,
    NetworkAccess,
    SandboxMode,
)
from taskcore.contract.common import HEX64, digest_field, id_field
from taskcore.digest import domain_digest, sha256_hex
from taskcore.errors import ErrorCode, TaskError

__all__ = [
    "COMMIT_PATTERN",
    "RUNTIME_IDENTITY_DOMAIN",
    "CleanupEvidence",
    "ExecutionOutcome",
    "ExecutionRecord",
    "ExecutionRequest",
    "FilesystemView",
    "Isolation",
    "Limit",
    "LimitMechanism",
    "NetworkAccess",
    "OutputCapture",
    "RuntimeIdentity",
    "SandboxMode",
    "SnapshotEvidence",
    "capture_output",
    "check_execution_record",
    "isolation_shortfall",
    "runtime_identity_digest",
]

COMMIT_PATTERN: Final = r"[0-9a-f]{40}|[0-9a-f]{64}"
"""A git commit object name (SHA-1 or SHA-256 object format)."""

RUNTIME_IDENTITY_DOMAIN: Final = "agentscm.agent-workflow-collector-runtime.v1"
"""Digest of a :class:`RuntimeIdentity` (what a command profile pins)."""

_B64_MAX_CHARS: Final = 4 * ((COMMAND_OUTPUT_MAX_BYTES + 2) // 3)


class FilesystemView(enum.Enum):
    """What of the host's file system the command could see."""

    HOST = "host"
    """Everything the collector user can see (sandbox ``none`` and ``netns``)."""
    SNAPSHOT = "snapshot"
    """A read-only view of the system directories and the profile's read-only paths, the
    snapshot as the only writable tree, a private ``/tmp``; nothing else (``bwrap``)."""


class LimitMechanism(enum.Enum):
    """How a memory or process limit is enforced."""

    NONE = "none"
    """Not enforced."""
    CGROUP_V1 = "cgroup_v1"
    """A cgroup v1 leaf made for the run (``memory.limit_in_bytes``, ``pids.max``): the limit
    covers every process of the sandbox together, and hitting it is observed."""
    RLIMIT = "rlimit"
    """``setrlimit`` inside the sandbox: ``RLIMIT_AS`` bounds each process's address space,
    ``RLIMIT_NPROC`` the processes of the sandbox's user namespace; hitting it is not observed."""


class Limit(enum.Enum):
    """A bound a run reached (``ExecutionRecord.limits_reached``)."""

    MEMORY = "memory"
    OUTPUT = "output"
    PROCESSES = "processes"
    TIME = "time"


@attrs.frozen(kw_only=True)
class Isolation:
    """How the command is isolated: the sandbox's settings, part of the runtime identity.

    ``tool_sha256`` is the digest of the sandbox executable (``bwrap`` or ``unshare``);
    ``tmp_size_bytes`` is the private ``/tmp`` (``null``: the host's); a limit is ``null``
    exactly when its mechanism is ``none``; ``output_cap_bytes`` bounds stdout plus stderr.
    """

    network: NetworkAccess = wire_field()
    filesystem: FilesystemView = wire_field()
    pid_namespace: bool = wire_field()
    tool_sha256: str | None = wire_field(max_len=64, pattern=HEX64)
    read_only_paths: tuple[str, ...] = wire_field(max_len=64, item_max_len=4096)
    tmp_size_bytes: int | None = wire_field()
    memory_limit_bytes: int | None = wire_field()
    memory_mechanism: LimitMechanism = wire_field()
    process_limit: int | None = wire_field()
    process_mechanism: LimitMechanism = wire_field()
    output_cap_bytes: int = wire_field(lo=1)

    def __attrs_post_init__(self) -> None:
        if (self.memory_limit_bytes is None) != (self.memory_mechanism is LimitMechanism.NONE):
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                "a memory limit needs a mechanism and a mechanism a limit",
                path="$.memory_mechanism",
            )
        if (self.process_limit is None) != (self.process_mechanism is LimitMechanism.NONE):
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                "a process limit needs a mechanism and a mechanism a limit",
                path="$.process_mechanism",
            )


def isolation_shortfall(
    sandbox: SandboxMode, isolation: Isolation, policy: IsolationPolicy
) -> str | None:
    """Return why ``sandbox`` with ``isolation`` falls short of ``policy``, or ``None``.

    >>> from taskcore.contract.collector import DEFAULT_ISOLATION
    >>> iso = Isolation(network=NetworkAccess.HOST, filesystem=FilesystemView.HOST,
    ...     pid_namespace=False, tool_sha256=None, read_only_paths=(), tmp_size_bytes=None,
    ...     memory_limit_bytes=None, memory_mechanism=LimitMechanism.NONE, process_limit=None,
    ...     process_mechanism=LimitMechanism.NONE, output_cap_bytes=1 << 20)
    >>> isolation_shortfall(SandboxMode.NONE, iso, DEFAULT_ISOLATION)
    'the command could reach the network; the profile allows none'
    """
    if sandbox.strength < policy.minimum_sandbox.strength:
        return (
            f"sandbox {sandbox.value} is weaker than the profile's minimum "
            f"{policy.minimum_sandbox.value}"
        )
    if policy.network is NetworkAccess.NONE and isolation.network is not NetworkAccess.NONE:
        return "the command could reach the network; the profile allows none"
    for name, want, have, how in (
        (
            "memory",
            policy.memory_limit_bytes,
            isolation.memory_limit_bytes,
            isolation.memory_mechanism,
        ),
        ("process", policy.process_limit, isolation.process_limit, isolation.process_mechanism),
    ):
        if want is not None and (have is None or have > want or how is LimitMechanism.NONE):
            return f"the profile requires a {name} limit of {want}; none is enforced here"
    if isolation.output_cap_bytes > policy.output_cap_bytes:
        return "the output cap is above the profile's"
    extra = sorted(set(isolation.read_only_paths) - set(policy.read_only_paths))
    if extra:
        return f"{extra[0]} is exposed but not in the profile's read_only_paths"
    if isolation.tmp_size_bytes is not None and isolation.tmp_size_bytes > policy.tmp_size_bytes:
        return "the private /tmp is larger than the profile's"
    return None


class ExecutionOutcome(enum.Enum):
    """What became of one run of the pinned command."""

    PASSED = "passed"
    """It exited 0 within the timeout."""
    FAILED = "failed"
    """It exited non-zero or was ended by a signal it did not receive from us."""
    TIMED_OUT = "timed_out"
    """The timeout elapsed; the process group was killed."""
    START_FAILED = "start_failed"
    """The executable could not be started (missing, not executable)."""
    OUTPUT_EXCEEDED = "output_exceeded"
    """stdout and stderr together passed the output cap; the process group was killed."""


@attrs.frozen(kw_only=True)
class RuntimeIdentity:
    """What can be observed about the local runtime, hashed into the identity a profile pins.

    ``executable_sha256`` is the digest of the resolved ``argv[0]`` (and ``interpreter_sha256``
    that of its ``#!`` interpreter, if any); a relative ``argv[0]`` inside the snapshot is
    candidate source and contributes ``null``. Nothing per run (time, paths of the snapshot)
    is included, so the identity is stable until the toolchain, platform or sandbox changes.
    """

    version: int = wire_field(version=True)
    system: str = wire_field(min_len=1, max_len=64)
    machine: str = wire_field(min_len=1, max_len=64)
    sandbox: SandboxMode = wire_field()
    isolation: Isolation = wire_field()
    executable: str = wire_field(min_len=1, max_len=4096)
    executable_sha256: str | None = wire_field(max_len=64, pattern=HEX64)
    interpreter_sha256: str | None = wire_field(max_len=64, pattern=HEX64)
    collector_version: str = wire_field(min_len=1, max_len=64)


def runtime_identity_digest(identity: RuntimeIdentity) -> str:
    """Return the SHA-256 a command profile pins: the runtime domain over canonical bytes."""
    return domain_digest(RUNTIME_IDENTITY_DOMAIN, canonical_json(identity))


@attrs.frozen(kw_only=True)
class ExecutionRequest:
    """The immutable request one collection executes; the authority regenerates it exactly."""

    version: int = wire_field(version=True)
    audience: str = id_field()
    repository_id: str = wire_field(min_len=1, max_len=257)
    workflow_profile_id: str = id_field()
    step_id: str = id_field()
    collector_profile_id: str = id_field()
    collector_profile_digest: str = digest_field()
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str = id_field()
    attempt_digest: str = digest_field()
    execution_operation_id: str = id_field()
    fence: int = wire_field(lo=1)
    revision: str = digest_field()
    commit: str = wire_field(max_len=64, pattern=COMMIT_PATTERN)
    recipe: CommandRecipe = wire_field()
    runtime_identity_sha256: str = digest_field()


@attrs.frozen(kw_only=True)
class OutputCapture:
    """One output stream: every byte counted and hashed, the tail retained up to the bound.

    ``sha256`` covers the whole observed stream; ``retained_base64`` holds its last
    ``retained_bytes`` bytes; ``truncated`` says whether bytes were dropped.
    """

    total_bytes: int = wire_field()
    sha256: str = digest_field()
    retained_bytes: int = wire_field(hi=COMMAND_OUTPUT_MAX_BYTES)
    retained_base64: str = wire_field(max_len=_B64_MAX_CHARS)
    truncated: bool = wire_field()

    def retained(self) -> bytes:
        """Return the retained bytes (the stream's tail)."""
        try:
            return base64.b64decode(self.retained_base64.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raise TaskError(
                ErrorCode.INVALID_VALUE, "retained output is not valid base64"
            ) from None


def capture_output(tail: bytes, *, total_bytes: int, full_sha256: str) -> OutputCapture:
    """Build the :class:`OutputCapture` of a stream whose retained tail is ``tail``."""
    return OutputCapture(
        total_bytes=total_bytes,
        sha256=full_sha256,
        retained_bytes=len(tail),
        retained_base64=base64.b64encode(tail).decode("ascii"),
        truncated=total_bytes > len(tail),
    )


@attrs.frozen(kw_only=True)
class SnapshotEvidence:
    """The exact revision the command ran on.

    ``materialized_revision`` is the revision function computed over the files as they were
    on disk before the command started; it must equal ``revision``.
    """

    revision: str = digest_field()
    commit: str = wire_field(max_len=64, pattern=COMMIT_PATTERN)
    materialized_revision: str = digest_field()
    file_count: int = wire_field()
    total_bytes: int = wire_field()


@attrs.frozen(kw_only=True)
class CleanupEvidence:
    """What the collector confirmed after the run: no process left, no snapshot left."""

    process_group_ended: bool = wire_field()
    snapshot_removed: bool = wire_field()


@attrs.frozen(kw_only=True)
class ExecutionRecord:
    """What the local runtime observed when it ran one :class:`ExecutionRequest`."""

    version: int = wire_field(version=True)
    request_sha256: str = digest_field()
    outcome: ExecutionOutcome = wire_field()
    exit_status: int | None = wire_field(hi=255)
    signal: int | None = wire_field(lo=1, hi=128)
    duration_ms: int = wire_field()
    stdout: OutputCapture = wire_field()
    stderr: OutputCapture = wire_field()
    runtime: RuntimeIdentity = wire_field()
    runtime_identity_sha256: str = digest_field()
    snapshot: SnapshotEvidence = wire_field()
    environment_names: tuple[str, ...] = wire_field(max_len=64, item_pattern=ENV_NAME_PATTERN)
    cleanup: CleanupEvidence = wire_field()
    limits_reached: tuple[Limit, ...] = wire_field(max_len=len(Limit))
    started_at_ms: int = wire_field()
    finished_at_ms: int = wire_field()


def _check_capture(capture: OutputCapture, where: str) -> None:
    data = capture.retained()
    if len(data) != capture.retained_bytes:
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "retained_bytes does not match the retained output",
            path=where,
        )
    if capture.retained_bytes > capture.total_bytes:
        raise TaskError(ErrorCode.BINDING_MISMATCH, "more bytes retained than observed", path=where)
    if capture.truncated != (capture.total_bytes > capture.retained_bytes):
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "truncated must say exactly whether bytes were dropped",
            path=where,
        )
    if not capture.truncated and sha256_hex(data) != capture.sha256:
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "the untruncated output does not hash to the recorded digest",
            path=where,
        )


def _check_limits(record: ExecutionRecord) -> None:
    """The output cap and the reached limits agree with the outcome and the mechanisms."""
    isolation = record.runtime.isolation
    over = record.stdout.total_bytes + record.stderr.total_bytes > isolation.output_cap_bytes
    if over != (record.outcome is ExecutionOutcome.OUTPUT_EXCEEDED):
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "outcome output_exceeded must say exactly whether the output passed its cap",
            path="$.outcome",
        )
    reached = record.limits_reached
    if list(reached) != sorted(set(reached), key=lambda limit: limit.value):
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "limits_reached must be sorted and name each limit once",
            path="$.limits_reached",
        )
    rules = (
        (Limit.TIME, record.outcome is ExecutionOutcome.TIMED_OUT, True),
        (Limit.OUTPUT, over, True),
        (Limit.MEMORY, None, isolation.memory_mechanism is LimitMechanism.CGROUP_V1),
        (Limit.PROCESSES, None, isolation.process_mechanism is LimitMechanism.CGROUP_V1),
    )
    for limit, required, observable in rules:
        present = limit in reached
        if (required is not None and present != required) or (present and not observable):
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                f"limits_reached disagrees with the run about {limit.value}",
                path="$.limits_reached",
            )


def check_execution_record(
    record: ExecutionRecord, request: ExecutionRequest, request_sha256: str
) -> None:
    """Check ``record`` against its pinned ``request``; return nothing or raise.

    The outcome must agree with the exit status and signal, the output must fit the recipe's
    bound and agree with its digests, ``output_exceeded`` must say exactly whether the output
    passed the runtime's cap, ``limits_reached`` must agree with the outcome and name only
    limits a cgroup could observe, the runtime identity must hash to the pinned digest,
    the snapshot must be the requested revision and commit, only allow-listed environment
    names may have been passed, and cleanup must be confirmed.
    """
    if record.request_sha256 != request_sha256:
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "the record names another request",
            path="$.request_sha256",
        )
    exit_status, signal = record.exit_status, record.signal
    expected_shape = {
        ExecutionOutcome.PASSED: exit_status == 0 and signal is None,
        ExecutionOutcome.FAILED: (exit_status is not None and exit_status != 0 and signal is None)
        or (exit_status is None and signal is not None),
        ExecutionOutcome.TIMED_OUT: exit_status is None,
        ExecutionOutcome.START_FAILED: exit_status is None and signal is None,
        ExecutionOutcome.OUTPUT_EXCEEDED: exit_status is None and signal is None,
    }[record.outcome]
    if not expected_shape:
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            f"outcome {record.outcome.value} disagrees with the exit status and signal",
            path="$.outcome",
        )
    if (
        record.outcome is ExecutionOutcome.TIMED_OUT
        and record.duration_ms < request.recipe.timeout_ms
    ):
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "a timed-out run must have lasted at least the recipe's timeout",
            path="$.duration_ms",
        )
    _check_capture(record.stdout, "$.stdout")
    _check_capture(record.stderr, "$.stderr")
    if (
        record.stdout.retained_bytes + record.stderr.retained_bytes
        > request.recipe.output_limit_bytes
    ):
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "retained output exceeds the recipe's output bound",
            path="$.stdout",
        )
    _check_limits(record)
    digest = runtime_identity_digest(record.runtime)
    if record.runtime_identity_sha256 != digest:
        raise TaskError(
            ErrorCode.RUNTIME_MISMATCH,
            "the recorded runtime identity does not hash to its digest",
            path="$.runtime_identity_sha256",
        )
    if digest != request.runtime_identity_sha256:
        raise TaskError(
            ErrorCode.RUNTIME_MISMATCH,
            "the command ran in a runtime other than the one the profile pins; probe the runtime "
            "with 'agent-task collector runtime-probe' and install a new profile if it changed",
            path="$.runtime",
        )
    snap = record.snapshot
    if (snap.revision, snap.materialized_revision, snap.commit) != (
        request.revision,
        request.revision,
        request.commit,
    ):
        raise TaskError(
            ErrorCode.REVISION_MISMATCH,
            "the command ran on another revision than the request names",
            path="$.snapshot",
        )
    allowed = set(request.recipe.environment_allowlist)
    extra = sorted(set(record.environment_names) - allowed)
    if extra:
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            f"environment {extra[0]!r} is not on the recipe's allow-list",
            path="$.environment_names",
        )
    if not (record.cleanup.process_group_ended and record.cleanup.snapshot_removed):
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "cleanup was not confirmed (process group ended and snapshot removed)",
            path="$.cleanup",
        )
    if record.finished_at_ms < record.started_at_ms:
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "the run finished before it started",
            path="$.finished_at_ms",
        )
