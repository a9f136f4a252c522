"""Withdrawing published forge statuses whose receipt no longer passes admission.

A revocation (an executor's epoch, a re-enrollment, a superseded collector profile, a revoked
origin token) can take away what a receipt relied on. In that revocation's transaction,
:func:`withdraw_published` rechecks the newest published ``success`` statuses with
admission's evidence check (:func:`taskcore.evidence.receipts.admitted_receipt`) and writes
an ``error`` status (:func:`taskcore.evidence.forge.status_for_withdrawal`) for each that no
longer passes. It sits above both: the forge outbox knows nothing of receipts, and receipts
write their ``success`` through the outbox.
"""

from __future__ import annotations

from taskcore.evidence import forge
from taskcore.evidence.receipts import admitted_receipt
from taskcore.store.storage import Transaction

__all__ = ["withdraw_published"]


def withdraw_published(tx: Transaction, now_ms: int, repository_id: str | None = None) -> int:
    """``error`` for every published ``success`` whose receipt no longer passes admission.

    Runs inside the transaction of a revocation (or anything else that can withdraw a
    receipt) and rechecks the newest :data:`~taskcore.limits.FORGE_RECHECK_MAX` published
    successes (of ``repository_id``, or all) with admission's evidence check. Returns how
    many statuses it wrote.
    """
    written = 0
    for subject, receipt_digest in forge.published_successes(tx, repository_id):
        digest, problems = admitted_receipt(tx, subject, verify_signatures=False)
        if digest is not None:
            continue
        code = problems[0][1] if problems else "withdrawn"
        if forge.status_for_withdrawal(tx, now_ms, subject, receipt_digest, code) is not None:
            written += 1
    return written
