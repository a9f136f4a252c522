"""Matters: an objective tasks serve, and who may read the matter's feed.

A matter belongs to one workspace. Its readers are the workspace's admins and the token
identities an admin granted (``agenttask.matter.grant``). The read fence
(:func:`require_readable_matter`) proves access *before* anything about the matter is
disclosed; a matter the caller may not read is the same ``NOT_FOUND`` as a missing one.

``agenttask.rankByObjective`` uses :func:`tokens`: lower-cased runs of letters and digits.

>>> sorted(tokens("Ship the v2 API, then ship docs!"))
['api', 'docs', 'ship', 'the', 'then', 'v2']
"""

from __future__ import annotations

import re
from typing import Any

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import MATTER_READERS_MAX
from taskcore.queue.common import QueueCall, is_admin, new_id
from taskcore.queue.requests import MatterCreateIn, MatterGrantIn, MatterRef
from taskcore.queue.types import MatterView
from taskcore.store.queue_api import MatterReaderRecord, MatterRecord

__all__ = [
    "can_read_matter",
    "create_matter",
    "descriptor_tokens",
    "get_matter",
    "grant_reader",
    "matter_not_found",
    "require_readable_matter",
    "revoke_reader",
    "tokens",
]

_TOKEN = re.compile(r"[^\W_]+")
_DESCRIPTOR_KEYS = ("summary", "title", "description")


def tokens(text: str) -> frozenset[str]:
    """The distinct lower-cased letter/digit runs of ``text``."""
    return frozenset(_TOKEN.findall(text.casefold()))


def descriptor_tokens(verb: str, payload: Any) -> frozenset[str]:
    """A task's descriptor tokens: its verb and its payload's summary, title and description.

    >>> sorted(descriptor_tokens("agent.run", {"title": "Fix login", "n": "ignored"}))
    ['agent', 'fix', 'login', 'run']
    """
    parts = [verb]
    if isinstance(payload, dict):
        parts.extend(v for k in _DESCRIPTOR_KEYS if isinstance(v := payload.get(k), str))
    return tokens(" ".join(parts))


def matter_not_found(matter_id: str, *, path: str = "$.matterId") -> TaskError:
    """The one error for a missing, foreign or unreadable matter."""
    return TaskError(ErrorCode.NOT_FOUND, f"no matter {matter_id} in this workspace", path=path)


def can_read_matter(call: QueueCall, matter: MatterRecord) -> bool:
    """Whether the caller may read the matter (admin tier, or a granted reader)."""
    if is_admin(call.actor):
        return True
    return call.tx.queue.is_reader(call.workspace, matter.matter_id, call.actor.token_id)


def require_readable_matter(
    call: QueueCall, matter_id: str, *, path: str = "$.matterId"
) -> MatterRecord:
    """Return the matter if it exists in the workspace and the caller may read it."""
    matter = call.tx.queue.get_matter(call.workspace, matter_id)
    if matter is None or not can_read_matter(call, matter):
        raise matter_not_found(matter_id, path=path)
    return matter


def _view(call: QueueCall, matter: MatterRecord) -> MatterView:
    return MatterView(
        matter_id=matter.matter_id,
        objective=matter.objective,
        created_by=matter.created_by,
        created_at_ms=matter.created_at_ms,
        readers=call.tx.queue.list_readers(call.workspace, matter.matter_id),
    )


def create_matter(call: QueueCall, request: MatterCreateIn) -> MatterView:
    """Create a matter (admin); a taken ``matterId`` is ``ALREADY_EXISTS``."""
    matter_id = request.matter_id or new_id("am")
    if call.tx.queue.get_matter(call.workspace, matter_id) is not None:
        raise TaskError(
            ErrorCode.ALREADY_EXISTS, f"matter {matter_id} already exists", path="$.matterId"
        )
    record = MatterRecord(
        workspace=call.workspace,
        matter_id=matter_id,
        objective=request.objective,
        created_by=call.actor.token_id,
        created_at_ms=call.now_ms,
    )
    call.tx.queue.insert_matter(record)
    return _view(call, record)


def get_matter(call: QueueCall, request: MatterRef) -> MatterView:
    """A matter with its readers (admin)."""
    return _view(call, require_readable_matter(call, request.matter_id))


def grant_reader(call: QueueCall, request: MatterGrantIn) -> MatterView:
    """Let ``reader`` (a token id) read the matter's feed; granting twice changes nothing."""
    matter = require_readable_matter(call, request.matter_id)
    queue = call.tx.queue
    if queue.is_reader(call.workspace, matter.matter_id, request.reader):
        return _view(call, matter)
    if len(queue.list_readers(call.workspace, matter.matter_id)) >= MATTER_READERS_MAX:
        raise TaskError(
            ErrorCode.OUT_OF_BOUNDS,
            f"matter {matter.matter_id} already has {MATTER_READERS_MAX} readers",
            path="$.reader",
        )
    queue.add_reader(
        MatterReaderRecord(
            workspace=call.workspace,
            matter_id=matter.matter_id,
            reader=request.reader,
            granted_by=call.actor.token_id,
            granted_at_ms=call.now_ms,
        )
    )
    return _view(call, matter)


def revoke_reader(call: QueueCall, request: MatterGrantIn) -> MatterView:
    """Withdraw ``reader``'s grant; revoking a reader without one changes nothing."""
    matter = require_readable_matter(call, request.matter_id)
    call.tx.queue.remove_reader(call.workspace, matter.matter_id, request.reader)
    return _view(call, matter)
