"""Shared rows for the store tests: one repository ``r`` with its policy, requirement and
profile ``p`` (every digest ``HEX``), the route the journal and authority tests start from,
and the journal's task, attempt and request rows on it."""

from __future__ import annotations

from typing import Any

from taskcore.store.authority_api import (
    PolicyRecord,
    ProfileRecord,
    RepositoryRecord,
    RequirementRecord,
    SubjectRecord,
)
from taskcore.store.journal_api import AttemptRecord, RequestRecord, TaskRecord

HEX = "d" * 64


def seed_route(tx: Any) -> None:
    """Insert repository ``r`` (workspace ``w``), its policy epoch 1, requirement and profile."""
    tx.authority.insert_repository(
        RepositoryRecord(
            repository_id="r",
            workspace="w",
            work_tree="/repo",
            registered_at_ms=0,
            policy_epoch=1,
            policy_digest=HEX,
        )
    )
    tx.authority.insert_policy(
        PolicyRecord(repository_id="r", epoch=1, digest=HEX, body=b"{}", recorded_at_ms=0)
    )
    tx.authority.insert_requirement(
        RequirementRecord(
            repository_id="r",
            requirement_digest=HEX,
            requirement_id="ci",
            body=b"{}",
            plan_digest=HEX,
            installed_at_ms=0,
        )
    )
    tx.authority.put_profile(
        ProfileRecord(
            repository_id="r",
            profile_id="p",
            target="main",
            requirement_digest=HEX,
            generation=1,
            registered_at_ms=0,
        )
    )


def subject(version: int, change: str = "c", **fields: Any) -> SubjectRecord:
    """A subject of profile ``p`` for Change ``change`` at ``version`` (``fields`` override)."""
    values: dict[str, Any] = {
        "subject_seq": 0,
        "repository_id": "r",
        "profile_id": "p",
        "change_id": change,
        "change_version": version,
        "revision": HEX,
        "commit": "e" * 40,
        "context": b"",
        "context_digest": HEX,
        "target": "main",
        "policy_epoch": 1,
        "policy_digest": HEX,
        "requirement_digest": HEX,
        "plan_digest": HEX,
        "references": b"{}",
        "binding_digest": HEX,
        "recorded_at_ms": 0,
    }
    return SubjectRecord(**{**values, **fields})


def task_record(task_id: str = "t-1", **fields: Any) -> TaskRecord:
    """A pending task of step ``s`` on subject 1 of route ``r``/``p`` (``fields`` override)."""
    values: dict[str, Any] = {
        "task_id": task_id,
        "task_digest": HEX,
        "subject_seq": 1,
        "repository_id": "r",
        "profile_id": "p",
        "change_id": "c",
        "step_id": "s",
        "plan_index": 0,
        "body": b"{}",
        "state": "pending",
        "next_fence": 1,
        "current_attempt_id": None,
        "completion": None,
        "created_at_ms": 0,
        "updated_at_ms": 0,
    }
    return TaskRecord(**{**values, **fields})


def attempt_record(attempt_id: str = "a-1", **fields: Any) -> AttemptRecord:
    """A leased attempt at fence 1 of task ``t-1`` by owner ``o``/agent ``g``."""
    values: dict[str, Any] = {
        "attempt_id": attempt_id,
        "task_id": "t-1",
        "fence": 1,
        "attempt_digest": HEX,
        "body": b"{}",
        "owner_id": "o",
        "agent_id": "g",
        "state": "leased",
        "lease_expires_at_ms": 1,
        "superseded_by_fence": None,
        "created_at_ms": 0,
        "updated_at_ms": 0,
    }
    return AttemptRecord(**{**values, **fields})


def request_record(request_id: str = "r-1", **fields: Any) -> RequestRecord:
    """A recorded claim request of owner ``o``/agent ``g`` for task ``t-1``."""
    values: dict[str, Any] = {
        "owner_id": "o",
        "agent_id": "g",
        "request_id": request_id,
        "kind": "claim",
        "request_digest": HEX,
        "repository_id": "r",
        "profile_id": "p",
        "task_id": "t-1",
        "attempt_id": None,
        "outcome": b"{}",
        "recorded_at_ms": 0,
    }
    return RequestRecord(**{**values, **fields})
