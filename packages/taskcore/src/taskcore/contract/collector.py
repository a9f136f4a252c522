"""Collector profiles: the operator-installed, immutable authorization for trusted collection.

A command profile pins the complete :class:`CommandRecipe` and the SHA-256 of the observed
runtime identity; a finite-review profile pins the executable digest, provider scope,
transport basis, model, policy digest, required path coverage and finite budgets. Candidate
data can select none of these. Fixture and unqualified HTTP bases are refused at installation
(:meth:`FiniteReviewCollectorProfile.validate_for_installation`), import and admission.

>>> recipe = {"argv": ["pytest", "-q"], "working_directory": ".",
...     "environment_allowlist": ["PATH"], "timeout_ms": 600000, "output_limit_bytes": 65536}
>>> profile = decode_collector_profile({"version": 1, "kind": "command", "profile_id": "p",
...     "repository_id": "acme.widgets", "workflow_profile_id": "default", "step_id": "tests",
...     "registration_id": "reg-1", "registration_epoch": 1, "recipe": recipe,
...     "runtime_identity_sha256": "c" * 64})
>>> profile.recipe.argv
('pytest', '-q')
>>> decode_collector_profile({"kind": "script"})
Traceback (most recent call last):
taskcore.errors.TaskError: kind must be 'command' or 'finite_review' at $.kind
"""

from __future__ import annotations

import enum
import os
from typing import Any, Final, Literal

import attrs

from taskcore.codec import Codec, default_codec, wire_field
from taskcore.contract.common import digest_field, id_field, repository_field
from taskcore.contract.paths import validate_reference_path
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    ARGV_ITEM_MAX_CHARS,
    ARGV_MAX,
    COMMAND_OUTPUT_MAX_BYTES,
    COMMAND_STREAM_CAP_DEFAULT_BYTES,
    COMMAND_STREAM_CAP_MAX_BYTES,
    COMMAND_TIMEOUT_MAX_MS,
    ENVIRONMENT_ALLOWLIST_MAX,
    PATH_MAX_CHARS,
    REQUIRED_PATHS_MAX,
    REVIEW_CALLS_MAX,
    SANDBOX_MEMORY_MIN_BYTES,
    SANDBOX_PROCESSES_MAX,
    SANDBOX_PROCESSES_MIN,
    SANDBOX_READ_ONLY_PATHS_MAX,
    SANDBOX_TMP_DEFAULT_BYTES,
    SANDBOX_TMP_MIN_BYTES,
)

__all__ = [
    "DEFAULT_ISOLATION",
    "ENV_NAME_PATTERN",
    "CollectorProfile",
    "CommandCollectorProfile",
    "CommandRecipe",
    "FiniteReviewCollectorProfile",
    "IsolationPolicy",
    "NetworkAccess",
    "SandboxMode",
    "TransportBasis",
    "check_argv0",
    "decode_collector_profile",
]

ENV_NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_]{0,127}"
"""An environment variable name a recipe may pass through."""


@attrs.frozen(kw_only=True)
class CommandRecipe:
    """A pinned command.

    argv, working directory (relative, ``.`` for the root), the environment names allowed
    through, a timeout and an output bound.
    """

    argv: tuple[str, ...] = wire_field(
        min_len=1, max_len=ARGV_MAX, item_min_len=1, item_max_len=ARGV_ITEM_MAX_CHARS
    )
    working_directory: str = wire_field(max_len=PATH_MAX_CHARS)
    environment_allowlist: tuple[str, ...] = wire_field(
        max_len=ENVIRONMENT_ALLOWLIST_MAX, item_pattern=ENV_NAME_PATTERN
    )
    timeout_ms: int = wire_field(lo=1, hi=COMMAND_TIMEOUT_MAX_MS)
    output_limit_bytes: int = wire_field(lo=1, hi=COMMAND_OUTPUT_MAX_BYTES)

    def __attrs_post_init__(self) -> None:
        if self.working_directory != ".":
            validate_reference_path(self.working_directory, path="$.working_directory")
        for index, arg in enumerate(self.argv):
            if "\x00" in arg:
                raise TaskError(
                    ErrorCode.INVALID_VALUE, "argv may not contain NUL", path=f"$.argv[{index}]"
                )


def check_argv0(recipe: CommandRecipe) -> None:
    """Refuse (``INVALID_VALUE``) a relative ``argv[0]``: absolute, or a bare name on PATH.

    Checked when a profile is installed (profiles installed before keep decoding and running
    as they always did).

    >>> check_argv0(CommandRecipe(argv=(".venv/bin/python",), working_directory=".",
    ...     environment_allowlist=(), timeout_ms=1, output_limit_bytes=1))
    Traceback (most recent call last):
    taskcore.errors.TaskError: argv[0] '.venv/bin/python' is a relative path: it would name a file of the snapshot, which holds only the committed tree (never a virtualenv); pin an absolute path (/path/to/.venv/bin/python) or a bare name found on the collector's PATH, and run a committed script through its interpreter (sh run.sh) at $.recipe.argv[0]
    """
    argv0 = recipe.argv[0]
    if "/" in argv0 and not argv0.startswith("/"):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"argv[0] {argv0[:200]!r} is a relative path: it would name a file of the snapshot, "
            "which holds only the committed tree (never a virtualenv); pin an absolute path "
            "(/path/to/.venv/bin/python) or a bare name found on the collector's PATH, and run "
            "a committed script through its interpreter (sh run.sh)",
            path="$.recipe.argv[0]",
        )


class SandboxMode(enum.Enum):
    """How the local process runtime isolates the command, weakest first.

    ``none``: no isolation, the command runs with the collector user's view of the host;
    ``netns``: ``unshare --net --pid``, an empty network namespace and a PID namespace, the
    host's file system; ``bwrap``: bubblewrap, a read-only view of the system, the snapshot as
    the only writable tree, a private ``/tmp``, new PID, IPC, UTS and (unless the profile
    allows the network) network namespaces. See ``docs/collector.md``.
    """

    NONE = "none"
    NETNS = "netns"
    BWRAP = "bwrap"

    @property
    def strength(self) -> int:
        """The order of the modes (``none`` < ``netns`` < ``bwrap``)."""
        return _SANDBOX_ORDER.index(self.value)


_SANDBOX_ORDER = ("none", "netns", "bwrap")


class NetworkAccess(enum.Enum):
    """Whether the command may reach a network (``none``: no interface but loopback)."""

    NONE = "none"
    HOST = "host"


def _check_exposed_path(path: str, where: str) -> None:
    if (
        not path.startswith("/")
        or path == "/"
        or os.path.normpath(path) != path
        or path.startswith("//")
        or any(ord(c) < 0x20 or c == "\x7f" for c in path)
    ):
        raise TaskError(
            ErrorCode.INVALID_PATH,
            "an exposed path must be an absolute, normalized path other than /, without "
            "control characters",
            path=where,
        )


@attrs.frozen(kw_only=True)
class IsolationPolicy:
    """What a command profile requires of the sandbox its command runs in.

    ``minimum_sandbox`` is the weakest :class:`SandboxMode` acceptable; ``network`` whether
    the command may reach a network; ``memory_limit_bytes`` and ``process_limit`` (``null``:
    none) are enforced limits a collector must be able to apply, or it refuses before it
    claims; ``output_cap_bytes`` the stdout plus stderr bytes after which the command is
    killed (outcome ``output_exceeded``); ``tmp_size_bytes`` the size of the private
    ``/tmp``; ``read_only_paths`` extra absolute host paths (a toolchain, a virtualenv)
    exposed read-only, never ``/`` and never one holding the collector's state, the data dir
    or the repository.

    >>> policy = IsolationPolicy(minimum_sandbox=SandboxMode.BWRAP, network=NetworkAccess.NONE,
    ...     memory_limit_bytes=None, process_limit=256, output_cap_bytes=1 << 20,
    ...     tmp_size_bytes=1 << 24, read_only_paths=("/opt/toolchain",))
    >>> policy.minimum_sandbox.strength > SandboxMode.NETNS.strength
    True
    """

    minimum_sandbox: SandboxMode = wire_field()
    network: NetworkAccess = wire_field()
    memory_limit_bytes: int | None = wire_field(lo=SANDBOX_MEMORY_MIN_BYTES)
    process_limit: int | None = wire_field(lo=SANDBOX_PROCESSES_MIN, hi=SANDBOX_PROCESSES_MAX)
    output_cap_bytes: int = wire_field(lo=1, hi=COMMAND_STREAM_CAP_MAX_BYTES)
    tmp_size_bytes: int = wire_field(lo=SANDBOX_TMP_MIN_BYTES)
    read_only_paths: tuple[str, ...] = wire_field(
        max_len=SANDBOX_READ_ONLY_PATHS_MAX, item_min_len=2, item_max_len=4096
    )

    def __attrs_post_init__(self) -> None:
        for index, p in enumerate(self.read_only_paths):
            _check_exposed_path(p, f"$.read_only_paths[{index}]")
        if len(set(self.read_only_paths)) != len(self.read_only_paths):
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "read_only_paths lists a path twice",
                path="$.read_only_paths",
            )


DEFAULT_ISOLATION: Final = IsolationPolicy(
    minimum_sandbox=SandboxMode.NONE,
    network=NetworkAccess.NONE,
    memory_limit_bytes=None,
    process_limit=None,
    output_cap_bytes=COMMAND_STREAM_CAP_DEFAULT_BYTES,
    tmp_size_bytes=SANDBOX_TMP_DEFAULT_BYTES,
    read_only_paths=(),
)
"""The policy of a command profile without ``isolation``: the strongest sandbox this machine
offers (recorded in the runtime identity, which the profile pins), no network, no memory or
process limit, the default output cap and private ``/tmp``."""


class TransportBasis(enum.Enum):
    """How a finite-review collector reaches its model."""

    CLAUDE_CODE = "claude_code"
    FIXTURE = "fixture"
    HTTP_UNQUALIFIED = "http_unqualified"


@attrs.frozen(kw_only=True)
class CommandCollectorProfile:
    """Authorizes one enrollment epoch to transfer command records for one step."""

    version: int = wire_field(version=True)
    kind: Literal["command"] = wire_field()
    profile_id: str = id_field()
    repository_id: str = repository_field()
    workflow_profile_id: str = id_field()
    step_id: str = id_field()
    registration_id: str = id_field()
    registration_epoch: int = wire_field(lo=1)
    recipe: CommandRecipe = wire_field()
    runtime_identity_sha256: str = digest_field()
    isolation: IsolationPolicy | None = wire_field(default=None, omit_none=True)
    """The isolation the command requires (``None``: :data:`DEFAULT_ISOLATION`); left out of
    the profile's bytes when absent, so profiles installed before it keep their digests."""

    @property
    def isolation_policy(self) -> IsolationPolicy:
        """The profile's isolation policy, :data:`DEFAULT_ISOLATION` when none is pinned."""
        return self.isolation if self.isolation is not None else DEFAULT_ISOLATION


@attrs.frozen(kw_only=True)
class FiniteReviewCollectorProfile:
    """Authorizes one enrollment epoch to transfer finite-review records for one step."""

    version: int = wire_field(version=True)
    kind: Literal["finite_review"] = wire_field()
    profile_id: str = id_field()
    repository_id: str = repository_field()
    workflow_profile_id: str = id_field()
    step_id: str = id_field()
    registration_id: str = id_field()
    registration_epoch: int = wire_field(lo=1)
    executable_sha256: str = digest_field()
    provider_scope: str = id_field()
    transport_basis: TransportBasis = wire_field()
    model: str = id_field()
    policy_digest: str = digest_field()
    required_paths: tuple[str, ...] = wire_field(
        max_len=REQUIRED_PATHS_MAX, item_max_len=PATH_MAX_CHARS
    )
    max_calls: int = wire_field(lo=1, hi=REVIEW_CALLS_MAX)
    max_input_tokens: int = wire_field(lo=1)
    max_output_tokens: int = wire_field(lo=1)
    timeout_ms: int = wire_field(lo=1, hi=COMMAND_TIMEOUT_MAX_MS)

    def __attrs_post_init__(self) -> None:
        for index, p in enumerate(self.required_paths):
            validate_reference_path(p, path=f"$.required_paths[{index}]")

    def validate_for_installation(self) -> None:
        """Refuse fixture and unqualified HTTP transport bases (also at import and admission)."""
        if self.transport_basis is not TransportBasis.CLAUDE_CODE:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                f"transport basis {self.transport_basis.value} is not qualified; "
                "only claude_code may be installed",
                path="$.transport_basis",
            )


CollectorProfile = CommandCollectorProfile | FiniteReviewCollectorProfile
"""Either kind of collector profile."""


def decode_collector_profile(raw: Any, codec: Codec | None = None) -> CollectorProfile:
    """Decode a collector profile, dispatching on its ``kind`` (``command``/``finite_review``)."""
    codec = codec or default_codec()
    tree = raw if isinstance(raw, dict) else None
    if tree is None:
        from taskcore.codec import parse_json

        tree = parse_json(raw)
    if not isinstance(tree, dict):
        raise TaskError(ErrorCode.WRONG_TYPE, "a collector profile is an object", path="$")
    if "kind" not in tree:
        raise TaskError(
            ErrorCode.MISSING_FIELD, "required field is missing; send it", path="$.kind"
        )
    kind = tree["kind"]
    if type(kind) is not str:
        raise TaskError(ErrorCode.WRONG_TYPE, "expected a string; send a string", path="$.kind")
    if kind == "command":
        return codec.structure(tree, CommandCollectorProfile)
    if kind == "finite_review":
        return codec.structure(tree, FiniteReviewCollectorProfile)
    raise TaskError(
        ErrorCode.INVALID_VALUE, "kind must be 'command' or 'finite_review'", path="$.kind"
    )


__all__ += ["COMMAND_OUTPUT_MAX_BYTES", "COMMAND_TIMEOUT_MAX_MS"]  # re-exported from limits
