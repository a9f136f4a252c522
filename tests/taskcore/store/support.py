"""Shared rows for the store tests: one repository ``r`` with its policy, requirement and
profile ``p`` (every digest ``HEX``), the route the journal and authority tests start from."""

from __future__ import annotations

from typing import Any

from taskcore.store.authority_api import (
    PolicyRecord,
    ProfileRecord,
    RepositoryRecord,
    RequirementRecord,
    SubjectRecord,
)

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
