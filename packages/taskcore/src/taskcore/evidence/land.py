"""``agent-task land CHANGE --into main``: move a protected ref only if the authority admits it.

A trusted-local act on the authority's own registered repository (like the operator
commands, it runs against ``DATA_DIR`` on the service host and is audited as ``operator``):

1. the Change's newest subject names the commit and its revision;
2. the new ref value is that commit when the target can fast-forward to it; with
   ``merge=True`` it is a merge commit of the target and the Change written with
   ``git merge-tree --write-tree`` and ``git commit-tree`` (no work tree is touched), and
   that merge commit's revision must itself be the qualified revision (it is when the target
   adds nothing the Change does not already hold), else the command says why it cannot land;
3. inside the authority's writer transaction (so a revocation cannot commit in between), the
   landing recheck (:func:`~taskcore.evidence.landing.landing_decision`) must admit the new
   value's revision, and ``git update-ref REF NEW OLD`` moves the ref as a compare-and-swap:
   a concurrent landing that moved the ref first makes this one lose cleanly (``CONFLICT``).

A target branch checked out in a work tree of the repository is refused: moving it under the
work tree would make that work tree look changed.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Final

import attrs

from taskcore.actors import Actor, Tier
from taskcore.audit import write_event
from taskcore.authority import gitrev
from taskcore.authority.admin import OPERATOR
from taskcore.authority.subjects import load_route
from taskcore.canonical import canonical_json
from taskcore.clock import Clock, SystemClock
from taskcore.digest import AUDIT_INPUT_DOMAIN, domain_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.landing import (
    REF_PATTERN,
    LandingCheckRequest,
    LandingCheckResponse,
    explain,
    landing_decision,
    normalize_target,
)
from taskcore.limits import GIT_TIMEOUT_SECONDS
from taskcore.store.audit_api import AuditEvent
from taskcore.store.storage import Storage, open_storage
from taskcore.workflow.guard import ActorGuard
from taskcore.workflow.journal import Caller

__all__ = ["LAND_OPERATION", "LandOutcome", "land_change", "land_in_data_dir"]

LAND_OPERATION: Final = "landing.land"
"""The audit operation name of a landing (one event per ``land``, admitted or refused)."""

_ZERO: Final = "0" * 40
_REF = re.compile(REF_PATTERN)
_IDENTITY: Final = {
    "GIT_AUTHOR_NAME": "agent-task land",
    "GIT_AUTHOR_EMAIL": "agent-task@localhost",
    "GIT_COMMITTER_NAME": "agent-task land",
    "GIT_COMMITTER_EMAIL": "agent-task@localhost",
}


@attrs.frozen(kw_only=True)
class LandOutcome:
    """What ``land`` did: the ref moved from ``old`` to ``new`` (or was already there)."""

    change_id: str
    ref: str
    old: str | None
    new: str
    moved: bool
    merged: bool
    revision: str
    receipt_digest: str | None

    def to_json(self) -> dict[str, object]:
        """The ``--json`` form."""
        return {
            "change_id": self.change_id,
            "ref": self.ref,
            "old": self.old,
            "new": self.new,
            "moved": self.moved,
            "merged": self.merged,
            "revision": self.revision,
            "receipt_digest": self.receipt_digest,
        }


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    # The same hygiene as taskcore.authority.gitrev: the caller's GIT_* cannot redirect git.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C",
        }
    )
    env.update(extra or {})
    return env


def _git(
    work_tree: Path,
    *args: str,
    ok: tuple[int, ...] = (0,),
    extra_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv, no shell
            ["git", "-C", str(work_tree), "-c", "core.fsmonitor=false", *args],  # noqa: S607
            capture_output=True,
            text=True,
            env=_env(extra_env),
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE, "git did not answer in the registered repository"
        ) from None
    if done.returncode not in ok:
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE,
            f"git {args[0]} failed in the registered repository; ask the operator to check it",
        )
    return done


def _resolve(work_tree: Path, ref: str) -> str | None:
    done = _git(work_tree, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", ok=(0, 1))
    return done.stdout.strip() or None


def _checked_out_in(work_tree: Path, ref: str) -> str | None:
    done = _git(work_tree, "worktree", "list", "--porcelain")
    path = None
    for line in done.stdout.splitlines():
        if line.startswith("worktree "):
            path = line[len("worktree ") :]
        elif line == f"branch {ref}":
            return path or str(work_tree)
    return None


def _is_ancestor(work_tree: Path, old: str, new: str) -> bool:
    done = _git(work_tree, "merge-base", "--is-ancestor", old, new, ok=(0, 1))
    return done.returncode == 0


def _merge_commit(work_tree: Path, old: str, new: str, change_id: str, ref: str) -> str:
    merged = _git(work_tree, "merge-tree", "--write-tree", "--no-messages", old, new, ok=(0, 1))
    if merged.returncode == 1:
        raise TaskError(
            ErrorCode.CONFLICT,
            f"{ref} and Change {change_id} conflict; merge {ref} into the Change, checkpoint "
            "and collect it, then land",
        )
    tree = merged.stdout.splitlines()[0].strip()
    done = _git(
        work_tree,
        "commit-tree",
        tree,
        "-p",
        old,
        "-p",
        new,
        "-m",
        f"Land Change {change_id} into {ref}",
        extra_env=_IDENTITY,
    )
    return done.stdout.strip()


def _explain(decision: LandingCheckResponse) -> str:
    parts = [f"{decision.code}: {decision.message}"]
    if decision.failures:
        parts.append(
            "failures: " + "; ".join(f"{f.task_id} {f.code}" for f in decision.failures[:4])
        )
    step = decision.next
    parts.append("next: " + step.operation + (f" {step.task_id}" if step.task_id else ""))
    return "; ".join(parts)


class _RefusedError(Exception):
    def __init__(self, decision: LandingCheckResponse) -> None:
        super().__init__(decision.code)
        self.decision = decision


def _event(clock: Clock, workspace: str, args: dict[str, object], outcome: str) -> AuditEvent:
    return AuditEvent(
        at_ms=clock.now_ms(),
        actor=OPERATOR,
        workspace=workspace,
        operation=LAND_OPERATION,
        input_digest=domain_digest(AUDIT_INPUT_DOMAIN, canonical_json(args)),
        outcome=outcome,
    )


def _audit(
    storage: Storage, clock: Clock, workspace: str, args: dict[str, object], outcome: str
) -> None:
    with storage.write() as tx:
        write_event(tx, _event(clock, workspace, args, outcome))


def _update_ref(work_tree: Path, ref: str, new: str, old: str | None, change_id: str) -> None:
    """``git update-ref REF NEW OLD``: the compare-and-swap (all zeros: must not exist yet)."""
    done = _git(
        work_tree,
        "update-ref",
        "-m",
        f"agent-task land {change_id}",
        ref,
        new,
        old or _ZERO,
        ok=(0, 1, 128),
    )
    if done.returncode == 0:
        return
    if _resolve(work_tree, ref) != old:
        raise TaskError(
            ErrorCode.CONFLICT, f"{ref} moved while landing (another landing won); run land again"
        )
    raise TaskError(
        ErrorCode.STORAGE_UNAVAILABLE,
        f"git update-ref could not move {ref}; ask the operator to check the repository",
    )


def land_change(
    storage: Storage,
    clock: Clock,
    *,
    repository_id: str,
    profile_id: str,
    change_id: str,
    into: str,
    merge: bool = False,
) -> LandOutcome:
    """Land the Change's newest subject on ``into`` (a branch or full ref); see the module."""
    args: dict[str, object] = {
        "repository_id": repository_id,
        "profile_id": profile_id,
        "change_id": change_id,
        "into": into,
        "merge": merge,
    }
    with storage.read() as tx:
        repository = tx.authority.get_repository(repository_id)
        if repository is None:
            raise TaskError(ErrorCode.NOT_FOUND, f"no repository {repository_id!r}")
        workspace = repository.workspace
    try:
        outcome = _land(
            storage, clock, workspace, repository_id, profile_id, change_id, into, merge
        )
    except TaskError as err:
        _audit(storage, clock, workspace, args, err.code.value)
        raise
    if not outcome.moved:
        _audit(storage, clock, workspace, args, "OK")
    return outcome


def _land(
    storage: Storage,
    clock: Clock,
    workspace: str,
    repository_id: str,
    profile_id: str,
    change_id: str,
    into: str,
    merge: bool,
) -> LandOutcome:
    ref = normalize_target(into)
    if len(ref) > 256 or _REF.fullmatch(ref) is None:
        raise TaskError(ErrorCode.INVALID_VALUE, f"--into {into!r} is not a branch or full ref")
    with storage.read() as tx:
        view = load_route(
            tx, workspace=workspace, repository_id=repository_id, profile_id=profile_id
        )
        subject = tx.authority.latest_subject(repository_id, profile_id, change_id)
    if subject is None:
        raise TaskError(
            ErrorCode.NOT_FOUND,
            f"Change {change_id!r} has no subject under profile {profile_id!r}; checkpoint it",
        )
    if normalize_target(view.profile.target) != ref:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"profile {profile_id!r} protects {normalize_target(view.profile.target)}, not {ref}",
        )
    work_tree = Path(view.repository.work_tree)
    where = _checked_out_in(work_tree, ref)
    if where is not None:
        raise TaskError(
            ErrorCode.CONFLICT,
            f"{ref} is checked out in a work tree ({where}); switch that work tree to another "
            "branch (git switch --detach) so the ref can move without it",
        )
    old = _resolve(work_tree, ref)
    if old == subject.commit:
        return LandOutcome(
            change_id=change_id,
            ref=ref,
            old=old,
            new=old,
            moved=False,
            merged=False,
            revision=subject.revision,
            receipt_digest=None,
        )
    merged = False
    if old is None or _is_ancestor(work_tree, old, subject.commit):
        new, revision = subject.commit, subject.revision
    elif not merge:
        raise TaskError(
            ErrorCode.CONFLICT,
            f"{ref} cannot fast-forward to Change {change_id}; merge {ref} into the Change, "
            "checkpoint and collect it, then land (or pass --merge)",
        )
    else:
        new = _merge_commit(work_tree, old, subject.commit, change_id, ref)
        revision = gitrev.git_revision(work_tree, new)
        merged = True
        if revision != subject.revision:
            raise TaskError(
                ErrorCode.NOT_ADMITTED,
                f"the merge of Change {change_id} into {ref} is revision {revision[:16]}, not "
                f"the qualified revision {subject.revision[:16]}: {ref} has changes the Change "
                "does not hold; merge it into the Change, checkpoint and collect, then land",
            )
    request = LandingCheckRequest(version=1, ref=ref, commit=new, revision=revision)
    try:
        with storage.write() as tx:
            view = load_route(
                tx, workspace=workspace, repository_id=repository_id, profile_id=profile_id
            )
            decision = landing_decision(tx, view, request)
            if not decision.admitted:
                raise _RefusedError(decision)
            _update_ref(work_tree, ref, new, old, change_id)
            write_event(
                tx,
                _event(
                    clock,
                    workspace,
                    {
                        "repository_id": repository_id,
                        "profile_id": profile_id,
                        "change_id": change_id,
                        "into": into,
                        "merge": merge,
                    },
                    "OK",
                ),
            )
    except _RefusedError as refused:
        actor = Actor(token_id=OPERATOR, workspace=workspace, tier=Tier.ADMIN)
        caller = Caller(
            actor=actor,
            repository_id=repository_id,
            profile_id=profile_id,
            guard=ActorGuard(actor),
        )
        decision = explain(refused.decision, storage, clock, caller)
        raise TaskError(
            ErrorCode.NOT_ADMITTED,
            f"{ref} was not moved: " + _explain(decision),
            details=decision.to_json(),
        ) from None
    return LandOutcome(
        change_id=change_id,
        ref=ref,
        old=old,
        new=new,
        moved=True,
        merged=merged,
        revision=revision,
        receipt_digest=decision.receipt_digest,
    )


def land_in_data_dir(
    data_dir: Path | str,
    *,
    repository_id: str,
    profile_id: str,
    change_id: str,
    into: str,
    merge: bool = False,
    clock: Clock | None = None,
) -> LandOutcome:
    """:func:`land_change` against the journal in ``data_dir`` (never created: ``NOT_FOUND``)."""
    storage = open_storage(data_dir)
    try:
        return land_change(
            storage,
            clock or SystemClock(),
            repository_id=repository_id,
            profile_id=profile_id,
            change_id=change_id,
            into=into,
            merge=merge,
        )
    finally:
        storage.close()
