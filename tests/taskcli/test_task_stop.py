"""``agent-task task-stop``'s slim pass path, held to the full hook it shortcuts.

Every scenario runs the installed command line twice against the same live service and
local state: once through :mod:`taskcli.entry` (the slim path first) and once through the
click group alone (the full hook). Exit status, stdout, stderr, the counter files left and
the number of calls the service audited must be equal; the pass scenarios must have been
answered by the slim path (on SQLite: on PostgreSQL ``$AGENT_TASK_DATABASE`` sends every run
to the full hook), and the block scenarios that reach the service must ask it only once.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from taskcli import task_stop
from taskcli.common import ServiceClient
from taskcore.auth import revoke_token
from taskcore.clock import SystemClock
from taskcore.limits import STOP_CONTINUATIONS_MAX
from taskhttp.server import BackgroundServer

from tests.taskcli.collector_world import World, git
from tests.taskcli.test_stop_cmd import collect

PAYLOAD = b'{"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": false}'

PROBE = """
import sys
which, sys.argv = sys.argv[1], ["agent-task", *sys.argv[2:]]
if which == "full":
    from taskcli.main import main
else:
    from taskcli.entry import main
code = 0
try:
    main()
except SystemExit as exit:
    code = exit.code
sys.stdout.flush()
full = "taskcore.collector.stophook" in sys.modules or "click" in sys.modules
sys.stderr.write("\\nPATH " + ("full" if full else "slim") + "\\n")
sys.exit(code)
"""
"""Run ``agent-task`` through the click group alone (``full``) or the script's entry point.

The entry point leaves with ``os._exit`` after a slim pass: then no PATH line is written
(every other run writes one, and says whether the full hook's modules were loaded).
"""


# -- the command line ---------------------------------------------------------------------------

PLAIN = [
    "c1",
    "--endpoint",
    "http://127.0.0.1:1",
    "--repository",
    "acme",
    "--profile",
    "default",
    "--token-file",
    "/t",
    "--workspace",
    "/w",
]


@pytest.mark.parametrize(
    ("argv", "plain"),
    [
        (PLAIN, True),
        ([*PLAIN, "--data-dir", "/d"], True),
        (["--endpoint=http://h", *PLAIN[3:], "c1"], True),
        ([*PLAIN, "--help"], False),
        ([*PLAIN, "-h"], False),
        ([*PLAIN, "c2"], False),
        ([*PLAIN, "--profile", "other"], False),
        ([*PLAIN, "--database", "postgresql://x"], False),
        ([*PLAIN, "--"], False),
        (PLAIN[:-2], False),
        (["--workspace", "-w", *PLAIN[:-2]], False),
        (["", *PLAIN[1:]], False),
        ([*PLAIN[:-1], "--workspace="], False),
        (PLAIN[1:], False),
    ],
)
def test_only_the_plain_command_lines_take_the_slim_path(argv, plain):
    parsed = task_stop.parse_args(argv)
    assert (parsed is not None) == plain
    if plain:
        assert parsed["change"] == "c1"
        assert parsed["--repository"] == "acme"


# -- the same answers ---------------------------------------------------------------------------


class Case:
    """One scenario's set-up: what to change in the world and in the command line."""

    def __init__(self, world: World, tmp: Path) -> None:
        self.world, self.tmp = world, tmp
        self.changes: dict[str, Any] = {}
        self.payload = PAYLOAD
        self.harness = "claude-code"
        self.counter: str | None = None
        self.argv: list[str] | None = None
        self.before_each: Callable[[], None] = lambda: None
        self.server: BackgroundServer | None = None

    def serve(self, handler: Callable[[bytes], tuple[int, bytes]]) -> None:
        """Answer the hook from ``handler(request body)`` instead of the service."""

        async def answer(request: Request) -> Response:
            status, body = handler(await request.body())
            return Response(body, status_code=status, media_type="application/json")

        app = Starlette(routes=[Route("/{path:path}", answer, methods=["POST"])])
        self.server = BackgroundServer(app)
        self.changes["endpoint"] = self.server.start()

    def real_answer(self) -> dict[str, Any]:
        """The service's qualification answer for the subject, as a dict."""
        client = ServiceClient(self.world.url, self.world.token_file, timeout=30)
        body = json.dumps({"version": 1, "change_id": "c1"}).encode()
        return client.workflow("acme", "default", "qualification", body)


def _checkpoint(case: Case) -> None:
    from click.testing import CliRunner

    from tests.taskcli.collector_world import cli

    w = case.world
    result = CliRunner().invoke(
        cli("collect_cmd"), ["checkpoint", "c1", "--workspace", str(w.repo)], env=w.env()
    )
    assert result.exit_code == 0, result.output


def s_pass(case: Case) -> None:
    collect(case.world)


def s_pass_codex(case: Case) -> None:
    collect(case.world)
    case.harness = "codex"


def s_pass_resets_a_counter(case: Case) -> None:
    collect(case.world)
    case.counter = "3"


def s_pass_with_an_empty_payload_object(case: Case) -> None:
    collect(case.world)
    case.payload = b"{}"


def s_pass_with_a_utf16_payload(case: Case) -> None:
    collect(case.world)
    case.payload = json.dumps({"session_id": "s1"}).encode("utf-16")


def s_pass_at_a_new_commit_of_the_same_tree(case: Case) -> None:
    collect(case.world)
    git(case.world.repo, "commit", "-q", "--allow-empty", "-m", "same tree")


def s_spent_counter(case: Case) -> None:
    collect(case.world)
    case.counter = str(STOP_CONTINUATIONS_MAX)


def s_unreadable_counter(case: Case) -> None:
    collect(case.world)
    case.counter = "many"


def s_unreadable_payload(case: Case) -> None:
    collect(case.world)
    case.payload = b"not json"


def s_payload_not_an_object(case: Case) -> None:
    collect(case.world)
    case.payload = b"[1]"


def s_no_subject(case: Case) -> None:
    del case


def s_uncollected_subject(case: Case) -> None:
    _checkpoint(case)


def s_uncommitted_edit(case: Case) -> None:
    collect(case.world)
    (case.world.repo / "calc.py").write_text("x = 2\n")


def s_untracked_file(case: Case) -> None:
    collect(case.world)
    (case.world.repo / "notes.txt").write_text("n\n")


def s_new_commit(case: Case) -> None:
    collect(case.world)
    (case.world.repo / "calc.py").write_text("x = 3\n")
    git(case.world.repo, "commit", "-qam", "more")


def s_merge_in_progress(case: Case) -> None:
    collect(case.world)
    head = git(case.world.repo, "rev-parse", "HEAD")
    (case.world.repo / ".git" / "MERGE_HEAD").write_text(head + "\n")


def s_service_down(case: Case) -> None:
    collect(case.world)
    case.changes["endpoint"] = "http://127.0.0.1:9"


def s_revoked_token(case: Case) -> None:
    collect(case.world)
    revoke_token(case.world.service.storage, SystemClock(), case.world.token.split("_")[1])


def s_missing_token_file(case: Case) -> None:
    collect(case.world)
    case.changes["token_file"] = case.tmp / "missing.token"


def s_relative_token_file(case: Case) -> None:
    collect(case.world)
    case.changes["token_file"] = "agent.token"


def s_missing_data_dir(case: Case) -> None:
    collect(case.world)
    case.changes["data_dir"] = case.tmp / "nowhere"


def s_help(case: Case) -> None:
    case.argv = ["--help"]


def s_malformed_answer(case: Case) -> None:
    collect(case.world)
    bad = {"operation": "qualification", "result": {"qualified": True, "next": {"x": 1}}}
    case.serve(lambda _body: (200, json.dumps(bad).encode()))


def s_qualified_answer_with_a_duplicate_key(case: Case) -> None:
    collect(case.world)
    text = json.dumps(case.real_answer())
    case.serve(lambda _body: (200, text[:-1].encode() + b', "operation": "qualification"}'))


def s_qualified_answer_with_a_lone_surrogate(case: Case) -> None:
    collect(case.world)
    answer = dict(case.real_answer(), note="\ud800")
    case.serve(lambda _body: (200, json.dumps(answer).encode()))


def s_qualified_answer_with_nan(case: Case) -> None:
    collect(case.world)
    answer = dict(case.real_answer(), note=float("nan"))
    case.serve(lambda _body: (200, json.dumps(answer).encode()))


def s_qualified_answer_refused_with_500(case: Case) -> None:
    collect(case.world)
    text = json.dumps(case.real_answer()).encode()
    case.serve(lambda _body: (500, text))


def s_answer_not_for_qualification(case: Case) -> None:
    collect(case.world)
    answer = dict(case.real_answer(), operation="status")
    case.serve(lambda _body: (200, json.dumps(answer).encode()))


def s_the_tree_changes_during_the_call(case: Case) -> None:
    collect(case.world)
    text = json.dumps(case.real_answer()).encode()
    repo = case.world.repo

    def answer(_body: bytes) -> tuple[int, bytes]:
        (repo / "calc.py").write_text("x = 4\n")
        return 200, text

    case.serve(answer)
    case.before_each = lambda: git(repo, "checkout", "-q", "--", "calc.py")


SCENARIOS = [
    s_pass,
    s_pass_codex,
    s_pass_resets_a_counter,
    s_pass_with_an_empty_payload_object,
    s_pass_with_a_utf16_payload,
    s_pass_at_a_new_commit_of_the_same_tree,
    s_spent_counter,
    s_unreadable_counter,
    s_unreadable_payload,
    s_payload_not_an_object,
    s_no_subject,
    s_uncollected_subject,
    s_uncommitted_edit,
    s_untracked_file,
    s_new_commit,
    s_merge_in_progress,
    s_service_down,
    s_revoked_token,
    s_missing_token_file,
    s_relative_token_file,
    s_missing_data_dir,
    s_help,
    s_malformed_answer,
    s_qualified_answer_with_a_duplicate_key,
    s_qualified_answer_with_a_lone_surrogate,
    s_qualified_answer_with_nan,
    s_qualified_answer_refused_with_500,
    s_answer_not_for_qualification,
    s_the_tree_changes_during_the_call,
]
SLIM_PASSES = {s_pass, s_pass_codex, s_pass_resets_a_counter, s_pass_with_an_empty_payload_object}
ASKS_ONCE = {
    s_uncollected_subject,
    s_revoked_token,
    s_malformed_answer,
    s_qualified_answer_with_a_duplicate_key,
    s_qualified_answer_with_a_lone_surrogate,
    s_qualified_answer_with_nan,
    s_qualified_answer_refused_with_500,
    s_answer_not_for_qualification,
    s_the_tree_changes_during_the_call,
}


def _argv(case: Case) -> list[str]:
    w = case.world
    name = "task-codex-stop" if case.harness == "codex" else "task-stop"
    if case.argv is not None:
        return [name, *case.argv]
    args: dict[str, Any] = {
        "endpoint": w.url,
        "repository": "acme",
        "profile": "default",
        "token_file": w.token_file,
        "workspace": w.repo,
        "data_dir": w.data,
    }
    args.update(case.changes)
    out = [name, "c1"]
    for key, value in args.items():
        out += [f"--{key.replace('_', '-')}", str(value)]
    return out


def _counters(stop_dir: Path) -> dict[str, str]:
    if not stop_dir.exists():
        return {}
    return {p.name: p.read_text() for p in sorted(stop_dir.iterdir())}


def _run(case: Case, which: str, stop_dir: Path, cwd: Path) -> dict[str, Any]:
    import hashlib
    import os

    shutil.rmtree(stop_dir, ignore_errors=True)
    env = dict(os.environ, AGENT_TASK_STOP_DIR=str(stop_dir))
    if case.counter is not None:  # the default payload's session, s1
        stop_dir.mkdir()
        key = hashlib.sha256(b"s1\x00c1").hexdigest()
        (stop_dir / f"{key}.count").write_text(case.counter)
    case.before_each()
    audited = case.world.service.audit_count()
    done = subprocess.run(
        [sys.executable, "-c", PROBE, which, *_argv(case)],
        input=case.payload,
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    stderr, marked, path = done.stderr.decode().rpartition("\nPATH ")
    if not marked:
        stderr, path = path, "left at once"
    return {
        "status": done.returncode,
        "stdout": done.stdout.decode(),
        "stderr": stderr,
        "counters": _counters(stop_dir),
        "asked": case.world.service.audit_count() - audited,
        "path": path.strip(),
    }


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__[2:])
def test_the_slim_path_answers_as_the_full_hook(scenario, tmp_path, backend):
    world = World(tmp_path)
    case = Case(world, tmp_path)
    try:
        scenario(case)
        cwd = tmp_path / "cwd"
        cwd.mkdir()
        full = _run(case, "full", tmp_path / "stop", cwd)
        slim = _run(case, "entry", tmp_path / "stop", cwd)
    finally:
        if case.server is not None:
            case.server.stop()
        world.close()
    assert full["path"] == "full"
    assert {k: v for k, v in slim.items() if k != "path"} == {
        k: v for k, v in full.items() if k != "path"
    }
    if scenario in SLIM_PASSES:
        assert (full["status"], full["stdout"]) == (0, "")
        assert slim["path"] == ("left at once" if backend == "sqlite" else "full")
    else:
        assert slim["path"] == "full"  # only a pass leaves from the slim path
    if scenario in ASKS_ONCE:
        assert full["stdout"]  # a block
        if case.server is None:
            assert slim["asked"] == 1
