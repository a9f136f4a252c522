"""The carrier-verb registry."""

from __future__ import annotations

from taskcore import ErrorCode

from tests.taskcore.queue.support import ADMIN, MEMBER, OUTSIDER


def test_agent_run_is_built_in_and_registering_it_changes_nothing(door):
    assert door(ADMIN, "agenttask.verb.register", {"verb": "agent.run"}) == {
        "verb": "agent.run",
        "created": False,
    }
    listed = door(ADMIN, "agenttask.verb.list")["verbs"]
    assert [(v["verb"], v["builtIn"]) for v in listed] == [("agent.run", True)]


def test_register_is_idempotent_and_per_workspace(door):
    first = door(ADMIN, "agenttask.verb.register", {"verb": "repo.review", "description": "d"})
    again = door(ADMIN, "agenttask.verb.register", {"verb": "repo.review"})
    assert (first["created"], again["created"]) == (True, False)
    listed = door(ADMIN, "agenttask.verb.list")["verbs"]
    assert listed[1] == {"verb": "repo.review", "description": "d", "builtIn": False}
    assert [v["verb"] for v in door(OUTSIDER, "agenttask.verb.list")["verbs"]] == ["agent.run"]


def test_register_is_admin_only_and_checks_the_spelling(door):
    assert door.refused(MEMBER, "agenttask.verb.register", {"verb": "x.y"}).code is (
        ErrorCode.FORBIDDEN
    )
    err = door.refused(ADMIN, "agenttask.verb.register", {"verb": "no spaces"})
    assert (err.code, err.path) == (ErrorCode.INVALID_VALUE, "$.verb")
