"""The collector's private state directory: signing key, reservations, retained transfers.

Layout (every directory mode 0700, every file 0600, owned by the collector's user)::

    STATE_DIR/
      key.json                       {"version", "seed", "public_key", "key_id"}
      attempts/<digest>/             one directory per claimed attempt (a single digest component)
        descriptor.json              the server-derived descriptor this collection follows
        reservation.json             written (and fsynced) before the command starts
        transfer.bin                 the signed bytes, fsynced before any upload
        upload.json                  the authority's answer to the last upload
      claims/<digest>.json           what ``agent-task collect`` did with each attempt it claimed
                                     (claimed, released, uncertain, upload_pending, uploaded)
      authority.json                 the pinned authority key and audience (remote mode)
      snapshots/<digest>/            the materialized revision while the command runs

The state directory and each of its parents must not be a symlink; the state directory itself
must be owned by this user and private (no group or other permission bits). A reservation
without a transfer means the command may have run: reopening never runs it again
(``EXECUTION_UNCERTAIN``), and a retained transfer is only ever re-sent byte for byte.

>>> import tempfile, pathlib
>>> state = CollectorState.open(pathlib.Path(tempfile.mkdtemp()) / "collector", create=True)
>>> key = state.generate_key()
>>> state.load_key().public_key == key.public_key
True
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any, Final

import attrs

from taskcore.canonical import canonical_json
from taskcore.codec import wire_field
from taskcore.contract.common import digest_field, id_field
from taskcore.digest import domain_digest, is_hex64
from taskcore.durable import durable_write
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES
from taskcore.paths import collector_state_dir
from taskcore.signing import generate_seed, key_id_for, public_key_hex

__all__ = [
    "ATTEMPT_DIR_DOMAIN",
    "CLAIM_FILE_DOMAIN",
    "CLAIM_STATES",
    "AttemptState",
    "CollectorKey",
    "CollectorState",
    "PinnedAuthority",
    "collector_status",
    "default_state_dir",
    "durable_write",
    "key_id_for",
]

ATTEMPT_DIR_DOMAIN: Final = "agentscm.agent-workflow-collector-attempt-dir.v1"
"""Domain of the digest that names an attempt's directory."""

CLAIM_FILE_DOMAIN: Final = "agent-task.collector-claim-file.v1"
"""Domain of the digest that names an attempt's claim file (never the attempt ID itself)."""

CLAIM_STATES: Final = ("claimed", "released", "uncertain", "upload_pending", "uploaded")
"""What ``collect`` last recorded about an attempt it claimed."""

_KEY_FILE: Final = "key.json"
_AUTHORITY_FILE: Final = "authority.json"


def default_state_dir() -> Path:
    """Return ``$AGENT_TASK_COLLECTOR_DIR`` or ``<user data root>/collector`` (:mod:`taskcore.paths`)."""
    return collector_state_dir()


def _unsafe(message: str) -> TaskError:
    return TaskError(ErrorCode.INVALID_PATH, message)


def _check_parents(path: Path) -> None:
    """Refuse a path any of whose existing components (including itself) is a symlink."""
    current = Path(path.anchor) if path.is_absolute() else Path.cwd()
    for part in path.parts[1:] if path.is_absolute() else path.parts:
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(info.st_mode):
            raise _unsafe(f"{current} is a symlink; collector state must not pass through one")


def _check_private_dir(path: Path) -> None:
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise _unsafe(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise _unsafe(f"{path} is owned by another user; collector state must be yours")
    if info.st_mode & 0o077:
        raise _unsafe(f"{path} is readable by others; run 'chmod 700 {path}'")


def _private_mkdir(path: Path) -> None:
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    _check_private_dir(path)


def _read_private(path: Path, max_bytes: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise _unsafe(f"{path} must be private to you (mode 0600)")
        if info.st_size > max_bytes:
            raise TaskError(ErrorCode.PAYLOAD_TOO_LARGE, f"{path.name} is larger than expected")
        chunks = []
        remaining = info.st_size + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise TaskError(ErrorCode.PAYLOAD_TOO_LARGE, f"{path.name} is larger than expected")
    return data


@attrs.frozen(kw_only=True)
class PinnedAuthority:
    """The authority a remote collector trusts: its descriptor-signing key and its audience."""

    version: int = wire_field(version=True)
    public_key: str = digest_field()
    key_id: str = id_field()
    audience: str = id_field()


@attrs.frozen(kw_only=True)
class CollectorKey:
    """The collector's Ed25519 key: the private seed never leaves the state directory."""

    version: int = wire_field(version=True)
    seed: str = digest_field()
    public_key: str = digest_field()
    key_id: str = id_field()


@attrs.frozen
class AttemptState:
    """The retained files of one attempt's collection."""

    path: Path

    @property
    def descriptor_path(self) -> Path:
        """The descriptor this collection follows."""
        return self.path / "descriptor.json"

    @property
    def reservation_path(self) -> Path:
        """Written before the command starts."""
        return self.path / "reservation.json"

    @property
    def transfer_path(self) -> Path:
        """The signed transfer bytes."""
        return self.path / "transfer.bin"

    @property
    def upload_path(self) -> Path:
        """The authority's last answer to an upload of the transfer."""
        return self.path / "upload.json"

    def has_reservation(self) -> bool:
        """Whether a reservation was made (the command may have started)."""
        return self.reservation_path.exists()

    def has_transfer(self) -> bool:
        """Whether signed bytes are retained."""
        return self.transfer_path.exists()

    def reserve(self, reservation: Any) -> None:
        """Durably record that the command is about to run; refuse a second reservation."""
        try:
            durable_write(self.reservation_path, canonical_json(reservation))
        except TaskError as err:
            if err.code is ErrorCode.ALREADY_EXISTS:
                raise TaskError(
                    ErrorCode.EXECUTION_UNCERTAIN,
                    "this attempt was already reserved by an earlier collection; the command "
                    "is never run twice. Run 'agent-task retry-upload' if a transfer was "
                    "retained, otherwise reconcile the task",
                ) from None
            raise

    def retain_transfer(self, envelope: bytes) -> None:
        """Durably retain the signed bytes (fsync) before any upload."""
        durable_write(self.transfer_path, envelope)

    def read_transfer(self) -> bytes:
        """Return the retained signed bytes exactly."""
        if not self.has_transfer():
            raise TaskError(ErrorCode.NOT_FOUND, "no signed transfer is retained for this attempt")
        return _read_private(self.transfer_path, COLLECTOR_ENVELOPE_MAX_BYTES)

    def write_json(self, path: Path, value: Any) -> None:
        """Replace a small JSON file durably (descriptor, upload answer)."""
        durable_write(path, json.dumps(value, sort_keys=True).encode("utf-8"), exclusive=False)

    def read_json(self, path: Path) -> Any:
        """Read a small JSON file written by :meth:`write_json`, or ``None`` if absent."""
        if not path.exists():
            return None
        try:
            return json.loads(_read_private(path, 1 << 20))
        except ValueError:
            raise TaskError(
                ErrorCode.INTEGRITY_FAILURE,
                f"the collector state file {path.name} is damaged; inspect the state directory",
            ) from None


class CollectorState:
    """One collector state directory (see the module docstring for its layout)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def open(cls, root: Path | str | None = None, *, create: bool = False) -> CollectorState:
        """Open (or with ``create`` make) the state directory, checking it is private.

        Refuses a symlink anywhere on the path and a directory others can read.
        """
        path = Path(root) if root is not None else default_state_dir()
        path = Path(os.path.abspath(path))
        _check_parents(path)
        if not os.path.lexists(path):
            if not create:
                raise TaskError(
                    ErrorCode.NOT_FOUND,
                    f"collector state {path} does not exist; run 'agent-task collector keygen'",
                )
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _check_parents(path)
            _private_mkdir(path)
        _check_private_dir(path)
        state = cls(path)
        for sub in ("attempts", "snapshots"):
            if create or os.path.lexists(path / sub):
                _private_mkdir(path / sub)
        return state

    # -- key --------------------------------------------------------------------------------
    @property
    def key_path(self) -> Path:
        """Where the private key seed lives."""
        return self.root / _KEY_FILE

    def generate_key(self) -> CollectorKey:
        """Create the signing key; an existing key is never replaced (``ALREADY_EXISTS``)."""
        seed = generate_seed()
        public = public_key_hex(seed)
        key = CollectorKey(version=1, seed=seed, public_key=public, key_id=key_id_for(public))
        try:
            durable_write(self.key_path, canonical_json(key))
        except TaskError as err:
            if err.code is ErrorCode.ALREADY_EXISTS:
                raise TaskError(
                    ErrorCode.ALREADY_EXISTS,
                    "a collector key already exists here; it is never replaced (enroll its "
                    "public key, or use another --state-dir)",
                ) from None
            raise
        return key

    def load_key(self) -> CollectorKey:
        """Return the signing key, checking the file is private and consistent."""
        if not os.path.lexists(self.key_path):
            raise TaskError(
                ErrorCode.NOT_FOUND, "no collector key; run 'agent-task collector keygen' first"
            )
        try:
            raw = json.loads(_read_private(self.key_path, 4096))
        except ValueError:
            raw = None
        if not isinstance(raw, dict) or not is_hex64(raw.get("seed")):
            raise TaskError(ErrorCode.INTEGRITY_FAILURE, "the collector key file is damaged")
        from taskcore.codec import default_codec

        key = default_codec().structure(raw, CollectorKey)
        if public_key_hex(key.seed) != key.public_key or key_id_for(key.public_key) != key.key_id:
            raise TaskError(ErrorCode.INTEGRITY_FAILURE, "the collector key file is inconsistent")
        return key

    # -- the pinned authority (remote mode) ---------------------------------------------------
    @property
    def authority_path(self) -> Path:
        """Where the pinned authority key and audience live."""
        return self.root / _AUTHORITY_FILE

    def pin_authority(self, *, public_key: str, audience: str) -> PinnedAuthority:
        """Pin the authority this collector trusts (remote mode); never silently replaced.

        Pinning the same key and audience again is a no-op; another key or audience is
        ``ALREADY_EXISTS`` (use another ``--state-dir`` for another authority).
        """
        from taskcore.codec import default_codec

        pinned = default_codec().structure(
            {
                "version": 1,
                "public_key": public_key,
                "key_id": key_id_for(public_key) if is_hex64(public_key) else "-",
                "audience": audience,
            },
            PinnedAuthority,
        )
        existing = self.pinned_authority()
        if existing is not None:
            if existing != pinned:
                raise TaskError(
                    ErrorCode.ALREADY_EXISTS,
                    f"this collector already trusts authority key {existing.key_id} of audience "
                    f"{existing.audience}; it is never replaced (use another --state-dir)",
                )
            return existing
        durable_write(self.authority_path, canonical_json(pinned))
        return pinned

    def pinned_authority(self) -> PinnedAuthority | None:
        """The pinned authority, or ``None`` if none was pinned."""
        if not os.path.lexists(self.authority_path):
            return None
        try:
            raw = json.loads(_read_private(self.authority_path, 4096))
        except ValueError:
            raw = None
        from taskcore.codec import default_codec

        if not isinstance(raw, dict):
            raise TaskError(ErrorCode.INTEGRITY_FAILURE, "the pinned authority file is damaged")
        pinned = default_codec().structure(raw, PinnedAuthority)
        if key_id_for(pinned.public_key) != pinned.key_id:
            raise TaskError(
                ErrorCode.INTEGRITY_FAILURE, "the pinned authority file is inconsistent"
            )
        return pinned

    # -- attempts ---------------------------------------------------------------------------
    @staticmethod
    def attempt_component(
        *, audience: str, task_id: str, attempt_id: str, attempt_digest: str, fence: int
    ) -> str:
        """Return the single digest path component of one attempt (never caller text)."""
        material = canonical_json(
            {
                "audience": audience,
                "task_id": task_id,
                "attempt_id": attempt_id,
                "attempt_digest": attempt_digest,
                "fence": fence,
            }
        )
        return domain_digest(ATTEMPT_DIR_DOMAIN, material)

    def attempt(self, component: str, *, create: bool = False) -> AttemptState:
        """Return the state of the attempt named by its digest component."""
        if not is_hex64(component):
            raise _unsafe("an attempt directory is named by one 64-hex digest")
        path = self.root / "attempts" / component
        if create:
            _private_mkdir(self.root / "attempts")
            _private_mkdir(path)
        elif os.path.lexists(path):
            _check_private_dir(path)
        return AttemptState(path)

    def attempts(self) -> tuple[AttemptState, ...]:
        """Every attempt directory retained here."""
        base = self.root / "attempts"
        if not base.exists():
            return ()
        return tuple(
            AttemptState(base / name) for name in sorted(os.listdir(base)) if is_hex64(name)
        )

    # -- the claims this collector made ------------------------------------------------------
    def claim_path(self, attempt_id: str) -> Path:
        """The claim file of ``attempt_id``: one digest component under ``claims/``."""
        name = domain_digest(CLAIM_FILE_DOMAIN, attempt_id.encode("utf-8"))
        return self.root / "claims" / f"{name}.json"

    def record_claim(self, attempt_id: str, state: str, **fields: Any) -> None:
        """Durably record (replace) what happened to a claimed attempt.

        ``state`` is one of :data:`CLAIM_STATES`; ``fields`` (task, Change, route, note,
        attempt directory, ...) are merged over what was recorded before.
        """
        if state not in CLAIM_STATES:
            raise TaskError(ErrorCode.INVALID_VALUE, f"unknown claim state {state!r}")
        _private_mkdir(self.root / "claims")
        path = self.claim_path(attempt_id)
        before = AttemptState(path.parent).read_json(path) or {}
        record = {**before, **fields, "attempt_id": attempt_id, "state": state}
        durable_write(path, json.dumps(record, sort_keys=True).encode("utf-8"), exclusive=False)

    def claim(self, attempt_id: str) -> dict[str, Any] | None:
        """What was recorded about ``attempt_id``, or ``None``."""
        path = self.claim_path(attempt_id)
        value = AttemptState(path.parent).read_json(path)
        return value if isinstance(value, dict) else None

    def claims(self) -> list[dict[str, Any]]:
        """Every recorded claim, oldest first (by ``claimed_at_ms``)."""
        base = self.root / "claims"
        if not base.exists():
            return []
        out = []
        for name in sorted(os.listdir(base)):
            if name.endswith(".json") and is_hex64(name[:-5]):
                value = AttemptState(base).read_json(base / name)
                if isinstance(value, dict):
                    out.append(value)
        return sorted(out, key=lambda c: (int(c.get("claimed_at_ms") or 0), str(c["attempt_id"])))

    def snapshot_dir(self, component: str) -> Path:
        """Return (not create) the snapshot path of an attempt: a single digest component."""
        if not is_hex64(component):
            raise _unsafe("a snapshot directory is named by one 64-hex digest")
        _private_mkdir(self.root / "snapshots")
        return self.root / "snapshots" / component


def collector_status(state: CollectorState) -> list[dict[str, Any]]:
    """The attempts ``state`` holds: every recorded claim, then retained directories without one.

    One row per attempt: a claim's row carries its retained directory (named by the claim,
    or found by the attempt its descriptor binds).

    Each row has ``attempt_id``, ``task_id``, ``change_id``, ``step_id``, ``state`` (one of
    :data:`CLAIM_STATES`, or for an unrecorded directory ``uploaded``, ``upload_pending`` or
    ``uncertain`` from its files), ``outcome`` and ``note`` where known, and the retained
    ``attempt_dir`` with its ``reserved``/``signed``/``uploaded`` flags.
    """
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    directories = {a.path.name: a for a in state.attempts()}
    # A claim names its directory only once the run signed (upload_pending); before that (a
    # collection killed mid-run, then perhaps reconciled) the directory is found by the
    # attempt its descriptor binds, so one attempt is one row.
    by_attempt = {
        attempt_id: name
        for name, attempt in directories.items()
        if (attempt_id := _bound_attempt(attempt)) is not None
    }
    for claim in state.claims():
        row = dict(claim)
        name = str(claim.get("attempt_dir") or "") or by_attempt.get(str(claim["attempt_id"]), "")
        attempt = directories.get(name)
        if attempt is not None:
            seen.add(attempt.path.name)
            row.update(_files(attempt))
        rows.append(row)
    for name, attempt in directories.items():
        if name in seen:
            continue
        descriptor = attempt.read_json(attempt.descriptor_path) or {}
        binding = descriptor.get("binding", {}) if isinstance(descriptor, dict) else {}
        files = _files(attempt)
        upload = attempt.read_json(attempt.upload_path)
        rows.append(
            {
                "attempt_id": binding.get("attempt_id"),
                "task_id": binding.get("task_id"),
                "fence": binding.get("fence"),
                "state": "uploaded"
                if files["uploaded"]
                else "upload_pending"
                if files["signed"]
                else "uncertain",
                "outcome": upload.get("record_outcome") if isinstance(upload, dict) else None,
                "attempt_dir": name,
                **files,
            }
        )
    return rows


def _bound_attempt(attempt: AttemptState) -> str | None:
    """The attempt id the directory's descriptor binds (written before the run starts)."""
    descriptor = attempt.read_json(attempt.descriptor_path)
    if isinstance(descriptor, dict) and isinstance(descriptor.get("binding"), dict):
        value = descriptor["binding"].get("attempt_id")
        if isinstance(value, str):
            return value
    return None


def _files(attempt: AttemptState) -> dict[str, Any]:
    return {
        "attempt_dir": attempt.path.name,
        "reserved": attempt.has_reservation(),
        "signed": attempt.has_transfer(),
        "uploaded": attempt.upload_path.exists(),
    }
