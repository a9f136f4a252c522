"""Instructions and named references served by the workflow journal, against real git."""

import zlib

from taskcore.contract import InstructionsRequest, ReferenceFetchRequest

from tests.taskcore.workflow.support import commit, git


def _reference(world, task, *, name="guide", sha=None, schema=1):
    ref = task.entrypoint.references[0]
    return world.journal.reference(
        world.caller(),
        ReferenceFetchRequest(
            version=1,
            task_id=task.task_id,
            task_digest=task.digest,
            name=name,
            expected_sha256=sha or ref.sha256,
            expected_schema_version=schema,
        ),
    )


def _tamper(world, task, body: bytes) -> None:
    """Rewrite the loose object of the reference blob (same name, other bytes)."""
    oid = git(world.repo, "rev-parse", f"{world.head}:docs/guide.md")
    path = world.repo / ".git" / "objects" / oid[:2] / oid[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"blob %d\0" % len(body) + body))


def test_reference_is_served_from_the_stored_revision_with_its_digest(world):
    task = world.task(world.checkpoint(), "implement")
    commit(world.repo, {"docs/guide.md": "# Changed later\n"})  # the work tree moved on
    answer = _reference(world, task)
    assert answer.status.value == "available"
    assert answer.content == "# Guide\nDo it well.\n"
    assert answer.byte_length == len(answer.content)


def test_reference_outcomes_are_distinct_and_never_partial(world):
    task = world.task(world.checkpoint(), "implement")
    assert _reference(world, task, name="nope").status.value == "missing"
    denied = _reference(world, task, sha="0" * 64)
    assert (denied.status.value, denied.code, denied.content) == (
        "denied",
        "commitment_mismatch",
        None,
    )
    _tamper(world, task, b"# Guide\nDo it badly\n")
    changed = _reference(world, task)
    assert (changed.status.value, changed.code, changed.content) == (
        "uncertain",
        "content_changed",
        None,
    )
    _tamper(world, task, b"x" * (128 * 1024 + 1))
    limit = _reference(world, task)
    assert (limit.status.value, limit.code, limit.content) == ("limit", "too_large", None)


def test_reference_with_an_unsupported_schema_is_a_schema_mismatch(world):
    task = world.task(world.checkpoint(), "implement")
    answer = _reference(world, task, schema=2)
    assert answer.status == "schema_mismatch"
    assert answer.server_schema_versions == (1,)
    assert answer.supported_schema_versions == (2,)


def test_instructions_return_every_criterion_inline_or_a_schema_mismatch(world):
    task = world.task(world.checkpoint(), "tests")
    ok = world.journal.instructions(
        world.caller(),
        InstructionsRequest(
            version=1,
            task_id=task.task_id,
            task_digest=task.digest,
            supported_schema_versions=(1, 2),
        ),
    )
    assert [c.criterion for c in ok.entrypoint.criteria] == ["pass", "notes"]
    mismatch = world.journal.instructions(
        world.caller(),
        InstructionsRequest(
            version=1, task_id=task.task_id, task_digest=task.digest, supported_schema_versions=(3,)
        ),
    )
    assert (mismatch.status, mismatch.entrypoint) == ("schema_mismatch", None)
    assert mismatch.mismatch.server_schema_versions == (1,)
