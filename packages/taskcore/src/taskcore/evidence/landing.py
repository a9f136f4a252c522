"""The landing recheck: whether a pushed revision may land on a protected ref, *now*.

Seed 000: "Approval and integration recheck the exact current subject, installed policy and
requirement, retained signed transfers, current profile and executor
registration/revocation ... They also require an authority-owned live authorization guard for
every originating actor and grant". Qualification is advisory; this is the check that binds.
It reuses admission's functions rather than copying them:

* :func:`~taskcore.authority.subjects.check_current`: the subject is the newest of its Change,
  and the repository's policy epoch, the profile's target and installed requirement are the
  ones it binds;
* :func:`~taskcore.evidence.receipts.admitted_receipt`: the receipt the current evidence
  supports (live enrollment epochs and revocations, the current collector profile, live
  originating grants) is the stored one, and every retained signed transfer verifies again.

:func:`landing_decision` runs inside a transaction the caller opens (a read snapshot for
``workflow.landing_check``; the writer transaction of ``agent-task land``, which moves the ref
before it commits). A pushed commit is matched by its *revision* (content, see
``docs/git-mapping.md``), so a different commit with the qualified content is the same
revision; when the registered repository has the commit, the authority computes its revision
itself and a disagreeing caller is refused (``revision_mismatch``).

>>> normalize_target("main"), normalize_target("refs/heads/release")
('refs/heads/main', 'refs/heads/release')
"""

from __future__ import annotations

from typing import Final, Literal

import attrs

from taskcore.authority import gitrev
from taskcore.authority.subjects import AuthorityView, check_current, load_route
from taskcore.clock import Clock
from taskcore.codec import wire_field
from taskcore.contract.collector_wire import NextStep, QualificationFailure, QualificationRequest
from taskcore.contract.common import digest_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.qualification import qualification
from taskcore.evidence.receipts import admitted_receipt
from taskcore.limits import LANDING_SUBJECTS_MAX, QUALIFICATION_FAILURES_MAX
from taskcore.store.authority_api import SubjectRecord
from taskcore.store.storage import Storage, Transaction
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.journal import Caller

__all__ = [
    "LANDING_CODES",
    "REF_PATTERN",
    "LandingCheckRequest",
    "LandingCheckResponse",
    "explain",
    "landing_check",
    "landing_decision",
    "normalize_target",
]

REF_PATTERN: Final = (
    r"refs/[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}(?:/[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}){0,15}"
)
"""A full ref name a landing can move (``refs/heads/main``); no ``..``, no empty component."""

LandingCode = Literal[
    "admitted",
    "target_mismatch",
    "revision_mismatch",
    "revision_not_checkpointed",
    "subject_not_current",
    "not_qualified",
]

LANDING_CODES: Final[dict[str, str]] = {
    "admitted": "the revision's receipt passes every admission recheck now",
    "target_mismatch": "this profile protects another ref; push to its target or install "
    "the hook with the profile that protects this ref",
    "revision_mismatch": "the commit's content is not the revision sent with it; the hook "
    "and the authority disagree, ask the operator to reinstall the hook",
    "revision_not_checkpointed": "no Change was checkpointed at this revision; run "
    "'agent-task checkpoint' and 'agent-task collect' for this commit first",
    "subject_not_current": "this revision's subject is no longer current (newer checkpoint, "
    "policy, target or requirement); checkpoint and collect again",
    "not_qualified": "the revision holds no receipt that passes admission now; see failures "
    "and next",
}
"""Each decision code and the fixed sentence shown to the pusher (never caller text)."""


def normalize_target(target: str) -> str:
    """The full ref a profile's target names: ``main`` is ``refs/heads/main``."""
    return target if target.startswith("refs/") else "refs/heads/" + target


@attrs.frozen(kw_only=True)
class LandingCheckRequest:
    """A protected ref is about to point at ``commit``, whose revision is ``revision``."""

    version: int = wire_field(version=True)
    ref: str = wire_field(max_len=256, pattern=REF_PATTERN)
    commit: str = wire_field(max_len=64, pattern=gitrev.OBJECT_NAME_PATTERN)
    revision: str = digest_field()


@attrs.frozen(kw_only=True)
class LandingCheckResponse:
    """The binding answer: ``admitted`` or why not (a stable ``code``), with ``next``.

    ``change_id`` names the Change whose subject was judged (``null`` when no subject has the
    revision); ``receipt_digest`` is set only when admitted; ``failures`` are
    qualification-style ``{task_id, code}`` pairs; ``message`` is the code's fixed sentence.
    """

    admitted: bool = wire_field()
    code: LandingCode = wire_field()
    message: str = wire_field(max_len=512)
    ref: str = wire_field(max_len=256, pattern=REF_PATTERN)
    commit: str = wire_field(max_len=64, pattern=gitrev.OBJECT_NAME_PATTERN)
    revision: str = digest_field()
    change_id: str | None = wire_field(max_len=128)
    receipt_digest: str | None = wire_field(max_len=64)
    failures: tuple[QualificationFailure, ...] = wire_field(max_len=QUALIFICATION_FAILURES_MAX)
    next: NextStep = wire_field()

    def to_json(self) -> dict[str, object]:
        """The wire form (``next`` without an absent ``task_id``)."""
        return {
            "admitted": self.admitted,
            "code": self.code,
            "message": self.message,
            "ref": self.ref,
            "commit": self.commit,
            "revision": self.revision,
            "change_id": self.change_id,
            "receipt_digest": self.receipt_digest,
            "failures": [{"task_id": f.task_id, "code": f.code} for f in self.failures],
            "next": self.next.to_json(),
        }


def _answer(
    request: LandingCheckRequest,
    code: LandingCode,
    *,
    subject: SubjectRecord | None = None,
    receipt: str | None = None,
    failures: tuple[tuple[str, str], ...] = (),
    next_step: NextStep | None = None,
) -> LandingCheckResponse:
    return LandingCheckResponse(
        admitted=code == "admitted",
        code=code,
        message=LANDING_CODES[code],
        ref=request.ref,
        commit=request.commit,
        revision=request.revision,
        change_id=None if subject is None else subject.change_id,
        receipt_digest=receipt,
        failures=tuple(
            QualificationFailure(task_id=t, code=c)
            for t, c in failures[:QUALIFICATION_FAILURES_MAX]
        ),
        next=next_step or NextStep(operation="none"),
    )


def landing_decision(
    tx: Transaction, view: AuthorityView, request: LandingCheckRequest
) -> LandingCheckResponse:
    """Decide inside ``tx``: the target, then each subject of the revision, newest first.

    The first *current* subject whose receipt passes :func:`admitted_receipt` admits the
    revision. Otherwise the answer names the newest current subject's problems (``next`` is
    ``none``; :func:`landing_check` fills it from qualification), or ``subject_not_current`` /
    ``revision_not_checkpointed`` with ``next: checkpoint``.
    """
    if normalize_target(view.profile.target) != request.ref:
        return _answer(request, "target_mismatch")
    subjects = tx.authority.subjects_with_revision(
        view.repository.repository_id,
        view.profile.profile_id,
        request.revision,
        LANDING_SUBJECTS_MAX,
    )
    if not subjects:
        return _answer(
            request, "revision_not_checkpointed", next_step=NextStep(operation="checkpoint")
        )
    refused: tuple[SubjectRecord, tuple[tuple[str, str], ...]] | None = None
    for subject in subjects:
        try:
            check_current(tx, subject)
        except TaskError as err:
            if err.code is ErrorCode.SUBJECT_STALE:
                continue
            raise
        digest, problems = admitted_receipt(tx, subject)
        if digest is not None:
            return _answer(request, "admitted", subject=subject, receipt=digest)
        refused = refused or (subject, problems)
    if refused is None:
        return _answer(
            request,
            "subject_not_current",
            subject=subjects[0],
            next_step=NextStep(operation="checkpoint"),
        )
    return _answer(request, "not_qualified", subject=refused[0], failures=refused[1])


def authority_revision(view: AuthorityView, commit: str) -> str | None:
    """The revision of ``commit`` computed from the registered repository, if it has it."""
    try:
        gitrev.resolve_commit(view.repository.work_tree, commit)
    except TaskError as err:
        if err.code in (ErrorCode.NOT_FOUND, ErrorCode.INVALID_VALUE):
            return None
        raise
    return gitrev.git_revision(view.repository.work_tree, commit)


def landing_check(
    storage: Storage, clock: Clock, caller: Caller, request: LandingCheckRequest
) -> LandingCheckResponse:
    """``workflow.landing_check``: decide in one read snapshot, then explain with ``next``.

    Git runs before the snapshot opens (the revision of a commit the registered repository
    has). A refusal's ``next`` comes from :func:`~taskcore.evidence.qualification.qualification`
    for the judged Change, read afterwards: it is advice, the decision was taken already.
    """
    with storage.read() as tx:
        view = load_route(
            tx,
            workspace=caller.actor.workspace,
            repository_id=caller.repository_id,
            profile_id=caller.profile_id,
        )
    computed = authority_revision(view, request.commit)
    with storage.read() as tx:
        view = load_route(
            tx,
            workspace=caller.actor.workspace,
            repository_id=caller.repository_id,
            profile_id=caller.profile_id,
        )
        caller.guard.check(tx, caller.guard_request(GuardAction.READ))
        if computed is not None and computed != request.revision:
            return _answer(request, "revision_mismatch")
        decision = landing_decision(tx, view, request)
    return explain(decision, storage, clock, caller)


def explain(
    decision: LandingCheckResponse, storage: Storage, clock: Clock, caller: Caller
) -> LandingCheckResponse:
    """Add qualification's ``next`` and per-task failures to a ``not_qualified`` refusal.

    Read after the decision (it is advice): qualification's failures come first, then the
    admission problems of tasks it did not explain (``receipt_missing``,
    ``transfer_unverified``), at most :data:`~taskcore.limits.QUALIFICATION_FAILURES_MAX`.
    """
    if decision.code != "not_qualified" or decision.change_id is None:
        return decision
    advice = qualification(
        storage, clock, caller, QualificationRequest(version=1, change_id=decision.change_id)
    )
    explained = {f.task_id for f in advice.failures}
    failures = list(advice.failures) + [f for f in decision.failures if f.task_id not in explained]
    return attrs.evolve(
        decision, next=advice.next, failures=tuple(failures[:QUALIFICATION_FAILURES_MAX])
    )
