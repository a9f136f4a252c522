"""Matters: objective tokens, creation, read grants and the read fence."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from taskcore import ErrorCode
from taskcore.queue.matters import descriptor_tokens, tokens

from tests.taskcore.queue.support import ADMIN, MEMBER, OUTSIDER


def test_tokens_are_lower_cased_letter_and_digit_runs():
    assert tokens("Ship v2_API: faster-BUILDS; Ünïcode ok") == frozenset(
        {"ship", "v2", "api", "faster", "builds", "ünïcode", "ok"}
    )


@given(st.text(), st.text())
def test_tokens_of_joined_texts_are_the_union_of_their_tokens(a, b):
    assert tokens(a + " " + b) == tokens(a) | tokens(b)
    assert tokens(a.upper()) == tokens(a.upper().casefold())


def test_descriptor_uses_only_verb_summary_title_and_description():
    payload = {"summary": "alpha", "title": "beta", "description": "gamma", "body": "delta"}
    assert descriptor_tokens("agent.run", payload) == {"agent", "run", "alpha", "beta", "gamma"}
    assert descriptor_tokens("agent.run", ["alpha"]) == {"agent", "run"}
    assert descriptor_tokens("agent.run", {"title": 5}) == {"agent", "run"}


def test_matter_create_generates_an_id_or_takes_one_and_refuses_a_duplicate(door):
    generated = door(ADMIN, "agenttask.matter.create", {"objective": "o"})
    assert generated["matterId"].startswith("am_")
    assert generated["readers"] == []
    door(ADMIN, "agenttask.matter.create", {"matterId": "m1"})
    err = door.refused(ADMIN, "agenttask.matter.create", {"matterId": "m1"})
    assert err.code is ErrorCode.ALREADY_EXISTS


def test_the_same_matter_id_in_two_workspaces_are_two_matters(door):
    door(ADMIN, "agenttask.matter.create", {"matterId": "m1", "objective": "ours"})
    theirs = door(OUTSIDER, "agenttask.matter.create", {"matterId": "m1", "objective": "theirs"})
    assert theirs["objective"] == "theirs"
    assert door(ADMIN, "agenttask.matter.get", {"matterId": "m1"})["objective"] == "ours"


def test_grant_and_revoke_are_idempotent(door):
    door(ADMIN, "agenttask.matter.create", {"matterId": "m"})
    for _ in range(2):
        view = door(ADMIN, "agenttask.matter.grant", {"matterId": "m", "reader": "member"})
        assert view["readers"] == ["member"]
    for _ in range(2):
        view = door(ADMIN, "agenttask.matter.revoke", {"matterId": "m", "reader": "member"})
        assert view["readers"] == []


def test_matter_admin_verbs_are_admin_only_and_workspace_scoped(door):
    door(ADMIN, "agenttask.matter.create", {"matterId": "m"})
    assert door.refused(MEMBER, "agenttask.matter.get", {"matterId": "m"}).code is (
        ErrorCode.FORBIDDEN
    )
    for verb, body in (
        ("agenttask.matter.get", {"matterId": "m"}),
        ("agenttask.matter.grant", {"matterId": "m", "reader": "x"}),
        ("agenttask.matter.revoke", {"matterId": "m", "reader": "x"}),
    ):
        assert door.refused(OUTSIDER, verb, body).code is ErrorCode.NOT_FOUND
