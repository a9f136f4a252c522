"""One run of the task-stop hooks, and installing one into a harness's settings file.

:mod:`taskcore.collector.stop` holds the pure parts (answer validation, the decision, the
feedback text); this module does the reads around them. One run (:func:`run_hook`):

1. reads the harness's Stop payload (malformed: exit status 1, which does not block);
2. checks the continuation counter of the session and Change (exhausted: the stop is allowed
   without asking anything, and the counter starts again; unreadable: exit status 1);
3. reads the local subject of the Change (the data dir opened read-only, existing-only) and
   the workspace (HEAD, clean, base revision) without changing either;
4. asks ``qualification`` through a client made by ``connect`` (the token file, a 30 s
   timeout);
5. reads the subject and the workspace again: both must equal the first read;
6. passes (no output) only if :func:`~taskcore.collector.stop.decide` says so; everything else
   blocks in the harness's Stop-hook format and counts one continuation.

The hook never claims, collects, uploads, finalizes, reconciles or checkpoints. The only file
it writes is its counter, under ``$AGENT_TASK_STOP_DIR`` (default
``~/.local/share/agent-task/agent-stop``).

>>> counter_path("session-1", "c1").name.endswith(".count")
True
>>> hook_command_line("codex", executable="/bin/agent-task", change="c1",
...     endpoint="http://127.0.0.1:8787", repository="acme", profile="default",
...     token_file=Path("/t/agent.token"), workspace=Path("/w"), data_dir=Path("/d"))
'/bin/agent-task task-codex-stop c1 --endpoint http://127.0.0.1:8787 --repository acme --profile default --token-file /t/agent.token --workspace /w --data-dir /d'
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, Final

import attrs

from taskcore.authority.gitrev import git_argv, git_env, git_revision, work_tree_state
from taskcore.collector.nextstep import CommandOptions, advise
from taskcore.collector.stop import (
    Category,
    LocalRead,
    StopDecision,
    decide,
    error_decision,
    validate_answer,
)
from taskcore.donegate.light import hook_output
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    GATE_STDIN_MAX_BYTES,
    QUALIFICATION_TIMEOUT_SECONDS,
    STOP_CONTINUATIONS_MAX,
    STOP_DIRTY_PATHS_MAX,
)
from taskcore.paths import stop_counter_dir
from taskcore.tokenfile import read_token_file
from taskcore.workflow.reads import open_reader

TYPE_CHECKING = False  # the collector client (and its imports) only for the type checker
if TYPE_CHECKING:
    from taskcore.collector.client import WorkflowClient

__all__ = [
    "CLAUDE_CODE",
    "CODEX",
    "HOOK_COMMANDS",
    "Connect",
    "CounterError",
    "counter_dir",
    "counter_path",
    "evaluate",
    "hook_command_line",
    "install_hook",
    "install_stop_hook",
    "operation_in_progress",
    "read_counter",
    "read_payload",
    "run_hook",
    "settings_advice",
    "write_counter",
]

CLAUDE_CODE: Final = "claude-code"
CODEX: Final = "codex"
HOOK_COMMANDS: Final = {CLAUDE_CODE: "task-stop", CODEX: "task-codex-stop"}
"""The ``agent-task`` command of each harness's Stop hook."""

Connect = Callable[[Path, float], "WorkflowClient"]
"""Make a client of the service authenticated by a token file, with a timeout in seconds."""


# -- the counter ----------------------------------------------------------------------------------


class CounterError(Exception):
    """The continuation counter cannot be read or written (the hook exits 1)."""


def counter_dir() -> Path:
    """Where the counters live: ``$AGENT_TASK_STOP_DIR`` or ``<user data>/agent-stop``."""
    return stop_counter_dir()


def counter_path(session: str, change: str) -> Path:
    """The counter file of one harness session and Change (named by a digest of both)."""
    key = hashlib.sha256(f"{session}\x00{change}".encode()).hexdigest()
    return counter_dir() / f"{key}.count"


def read_counter(path: Path) -> int:
    """Return the continuations used (0 when there is no file); :class:`CounterError` else."""
    try:
        if not path.exists():
            return 0
        text = path.read_text(encoding="ascii").strip()
        value = int(text)
    except (OSError, ValueError, UnicodeDecodeError):
        raise CounterError("the continuation counter is unreadable") from None
    if value < 0:
        raise CounterError("the continuation counter is unreadable")
    return value


def write_counter(path: Path, value: int) -> None:
    """Durably store ``value`` (0 removes the file); :class:`CounterError` when it cannot."""
    from taskcore.durable import durable_write  # only when a counter is written

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if value == 0:
            path.unlink(missing_ok=True)
        else:
            durable_write(path, str(value).encode("ascii"), exclusive=False)
    except (OSError, TaskError):
        raise CounterError("the continuation counter cannot be written") from None


# -- the local reads and the question -------------------------------------------------------------


class _BlockedError(Exception):
    def __init__(self, decision: StopDecision) -> None:
        self.decision = decision


_IN_PROGRESS: Final = (
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "BISECT_LOG",
    "rebase-merge",
    "rebase-apply",
)


def operation_in_progress(workspace: Path) -> bool:
    """Whether a merge, rebase, cherry-pick, revert or bisect is in progress (read-only).

    ``STORAGE_UNAVAILABLE`` when git does not answer or ``workspace`` is not a work tree.
    """
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv, no shell
            git_argv(workspace, "rev-parse", "--absolute-git-dir"),
            capture_output=True,
            timeout=30,
            check=False,
            env=git_env(),
        )
    except (OSError, subprocess.TimeoutExpired):
        raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, "git did not answer") from None
    if done.returncode != 0:
        raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, "not a git work tree")
    git_dir = Path(done.stdout.decode("utf-8", "surrogateescape").strip())
    return any((git_dir / name).exists() for name in _IN_PROGRESS)


def _read_local(
    data_dir: Path, repository: str, profile: str, change: str, workspace: Path
) -> LocalRead:
    try:
        storage = open_reader(data_dir)
    except TaskError:
        raise _BlockedError(error_decision(Category.LOCAL_STORE_UNAVAILABLE)) from None
    try:
        with storage.read() as tx:
            record = tx.authority.latest_subject(repository, profile, change)
    except TaskError:
        raise _BlockedError(error_decision(Category.LOCAL_STORE_UNAVAILABLE)) from None
    finally:
        storage.close()
    subject = (
        None
        if record is None
        else (
            record.subject_seq,
            record.change_version,
            record.revision,
            record.commit,
            record.context_digest,
            record.requirement_digest,
        )
    )
    try:
        state = work_tree_state(workspace)
        clean = state.clean and not operation_in_progress(workspace)
        base: str | None = None
        if state.head is not None:
            base = (
                subject[2]
                if subject is not None and subject[3] == state.head
                else git_revision(workspace, state.head)
            )
    except TaskError:
        raise _BlockedError(error_decision(Category.WORKSPACE_UNAVAILABLE)) from None
    return LocalRead(
        subject=subject,
        head=state.head,
        clean=clean,
        base_revision=base,
        dirty_paths=state.paths[:STOP_DIRTY_PATHS_MAX],
    )


_REJECTED: Final = (
    ErrorCode.UNAUTHENTICATED,
    ErrorCode.TOKEN_REVOKED,
    ErrorCode.FORBIDDEN,
    ErrorCode.AUTHORIZATION_CHANGED,
)


def _ask(connect: Connect, token_file: Path, repository: str, profile: str, change: str) -> Any:
    try:
        read_token_file(token_file)
    except TaskError:
        raise _BlockedError(error_decision(Category.TOKEN_UNAVAILABLE)) from None
    client = connect(token_file, float(QUALIFICATION_TIMEOUT_SECONDS))
    body = json.dumps({"version": 1, "change_id": change}).encode()
    try:
        answer = client.workflow(repository, profile, "qualification", body)
    except TaskError as err:
        if err.code in _REJECTED:
            raise _BlockedError(error_decision(Category.TOKEN_REJECTED)) from None
        if err.code is ErrorCode.MALFORMED_RESPONSE:
            raise _BlockedError(error_decision(Category.MALFORMED_RESPONSE)) from None
        raise _BlockedError(error_decision(Category.SERVICE_REQUEST_FAILED)) from None
    if not isinstance(answer, dict) or answer.get("operation") != "qualification":
        raise _BlockedError(error_decision(Category.MALFORMED_RESPONSE))
    return answer.get("result")


def evaluate(
    *,
    change: str,
    repository: str,
    profile: str,
    token_file: Path,
    workspace: Path,
    data_dir: Path,
    connect: Connect,
    endpoint: str | None = None,
    before: LocalRead | None = None,
) -> StopDecision:
    """Run the read-only check and return the decision (never raises for a block).

    A block carries the documented command for its ``next``
    (:func:`taskcore.collector.nextstep.advise`), with the hook's endpoint, route and token
    file filled in.

    No subject at all blocks with ``next`` checkpoint before anything is asked. A token file
    that cannot be read, a refused token, a failed call or a malformed answer block with
    their fixed :class:`~taskcore.collector.stop.Category` (``next`` is checkpoint if the
    second local read is not clean at the subject's revision); the rest is
    :func:`~taskcore.collector.stop.decide` over the answer and the two local reads.

    ``before`` is a first local read already taken (the slim pass path's, when it hands over
    after asking): then only the question and the second read are done here.
    """
    decision = _evaluate(
        change=change,
        repository=repository,
        profile=profile,
        token_file=token_file,
        workspace=workspace,
        data_dir=data_dir,
        connect=connect,
        before=before,
    )
    if decision.passed:
        return decision
    options = CommandOptions(
        url=endpoint, repository=repository, profile=profile, token_file=str(token_file)
    )
    advice = advise(
        decision.next,
        decision.failures,
        change=change,
        options=options,
        run_failures=decision.run_failures,
    )
    return attrs.evolve(decision, command=advice.command)


def _evaluate(
    *,
    change: str,
    repository: str,
    profile: str,
    token_file: Path,
    workspace: Path,
    data_dir: Path,
    connect: Connect,
    before: LocalRead | None,
) -> StopDecision:
    try:
        if before is None:
            before = _read_local(data_dir, repository, profile, change, workspace)
        if before.subject is None:
            return StopDecision(
                passed=False, next={"operation": "checkpoint"}, dirty_paths=before.dirty_paths
            )
        raw = _ask(connect, token_file, repository, profile, change)
        after = _read_local(data_dir, repository, profile, change, workspace)
        dirty = not after.clean or after.subject is None or after.base_revision != after.subject[2]
        try:
            answer = validate_answer(raw, local_revision=before.subject[2])
        except TaskError:
            return error_decision(Category.MALFORMED_RESPONSE, dirty=dirty)
        return decide(answer, before, after)
    except _BlockedError as blocked:
        return blocked.decision


# -- one run --------------------------------------------------------------------------------------


def read_payload(stdin: BinaryIO) -> dict[str, Any]:
    """Read the harness's Stop payload: a JSON object of at most 4 MiB.

    Raises ``ValueError`` (or ``OSError``, ``RecursionError``) for anything else.

    >>> import io
    >>> read_payload(io.BytesIO(b'{"session_id": "s1"}'))
    {'session_id': 's1'}
    """
    raw = stdin.read(GATE_STDIN_MAX_BYTES + 1)
    if len(raw) > GATE_STDIN_MAX_BYTES:
        raise ValueError("the Stop payload is too large")
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("the Stop payload is not a JSON object")
    return data


def run_hook(
    harness: str,
    *,
    change: str,
    repository: str,
    profile: str,
    token_file: Path,
    workspace: Path,
    data_dir: Path,
    stdin: BinaryIO,
    connect: Connect,
    endpoint: str | None = None,
    before: LocalRead | None = None,
) -> tuple[int, str]:
    """Run one Stop hook for ``harness``; return ``(exit status, stdout text)``.

    Status 1 (with no text) means the payload or the counter could not be read or the counter
    not written; the harness does not block on it. Status 0 with no text passes; status 0
    with text is a block in the harness's format, or, once :data:`STOP_CONTINUATIONS_MAX`
    continuations are used, a ``systemMessage`` that allows the stop. ``before`` goes to
    :func:`evaluate`.
    """
    try:
        payload = read_payload(stdin)
    except (OSError, ValueError, RecursionError):
        return 1, ""
    session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else ""
    path = counter_path(str(session), change)
    try:
        used = read_counter(path)
        if used >= STOP_CONTINUATIONS_MAX:
            write_counter(path, 0)
            message = (
                f"agent-task task-stop: {STOP_CONTINUATIONS_MAX} continuations used; the stop "
                "was allowed without asking qualification"
            )
            return 0, json.dumps({"systemMessage": message})
        if not token_file.is_absolute():
            decision = error_decision(Category.TOKEN_UNAVAILABLE)
        else:
            decision = evaluate(
                change=change,
                repository=repository,
                profile=profile,
                token_file=token_file,
                workspace=workspace,
                data_dir=data_dir,
                connect=connect,
                endpoint=endpoint,
                before=before,
            )
        if decision.passed:
            write_counter(path, 0)
            return 0, ""
        write_counter(path, used + 1)
    except CounterError:
        return 1, ""
    return 0, hook_output(harness, "Stop", "block", [decision.text()])


# -- installing -----------------------------------------------------------------------------------


def install_hook(settings: Path, command: str, marker: str) -> None:
    """Put ``command`` into ``settings`` as the Stop hook, replacing our earlier entry only.

    An earlier entry is a Stop hook group with a command containing ``marker``; every other
    key and hook of the file is kept. The harness's timeout is twice the qualification limit.
    """
    data: dict[str, Any] = {}
    if settings.exists():
        text = settings.read_text(encoding="utf-8")
        if text.strip():
            try:
                loaded = json.loads(text)
            except ValueError:
                raise TaskError(
                    ErrorCode.MALFORMED_JSON,
                    f"{settings.name} is not valid JSON; fix it (or move it aside) and install again",
                ) from None
            if not isinstance(loaded, dict):
                raise TaskError(ErrorCode.INVALID_VALUE, "the settings file is not a JSON object")
            data = loaded
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise TaskError(ErrorCode.INVALID_VALUE, "the settings file's hooks is not an object")
    groups = [
        g
        for g in hooks.get("Stop", [])
        if not (
            isinstance(g, dict)
            and any(marker in str(h.get("command", "")) for h in g.get("hooks", []))
        )
    ]
    groups.append(
        {
            "hooks": [
                {
                    "type": "command",
                    "command": command,
                    "timeout": QUALIFICATION_TIMEOUT_SECONDS * 2,
                }
            ]
        }
    )
    hooks["Stop"] = groups
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def hook_command_line(
    harness: str,
    *,
    executable: str,
    change: str,
    endpoint: str,
    repository: str,
    profile: str,
    token_file: Path,
    workspace: Path,
    data_dir: Path,
) -> str:
    """The shell command line of ``harness``'s Stop hook for ``change``.

    The token file must be an absolute path outside the work tree (``INVALID_PATH``); the
    workspace and data dir are written resolved, so the hook does not depend on the harness's
    working directory.
    """
    if not token_file.is_absolute():
        raise TaskError(ErrorCode.INVALID_PATH, "--token-file must be an absolute path")
    if token_file.resolve().is_relative_to(workspace.resolve()):
        raise TaskError(
            ErrorCode.INVALID_PATH,
            "--token-file is inside the work tree: it would be committed (or, untracked, keep "
            "task-stop blocking on a dirty tree). Keep it outside, e.g. "
            "~/.config/agent-task/agent.token",
        )
    return shlex.join(
        [
            executable,
            HOOK_COMMANDS[harness],
            change,
            "--endpoint",
            endpoint,
            "--repository",
            repository,
            "--profile",
            profile,
            "--token-file",
            str(token_file),
            "--workspace",
            str(workspace.resolve()),
            "--data-dir",
            str(data_dir.resolve()),
        ]
    )


def settings_advice(settings: Path, harness: str, workspace: Path) -> list[str]:
    """What to do with the settings file ``install-stop`` wrote (lines for people).

    A settings file inside the work tree must be committed: task-stop passes only on a clean
    tree, so an untracked ``.claude/settings.json`` would block every stop. A Codex project
    file also needs the project (and the hook) trusted.

    >>> settings_advice(Path("/w/.claude/settings.json"), "claude-code", Path("/w"))[0][:37]
    'commit .claude/settings.json (it hold'
    >>> settings_advice(Path("/home/me/.codex/hooks.json"), "codex", Path("/w"))[0]
    '/home/me/.codex/hooks.json is outside the work tree: nothing to commit'
    """
    lines = []
    target = Path(os.path.abspath(settings))
    root = Path(os.path.abspath(workspace))
    if target.is_relative_to(root):
        rel = target.relative_to(root).as_posix()
        lines.append(
            f"commit {rel} (it holds no secret): task-stop passes only on a clean work tree, so "
            "an uncommitted settings file would block every stop"
        )
    else:
        lines.append(f"{target} is outside the work tree: nothing to commit")
    if harness == CODEX:
        lines.append(
            "Codex runs a new or changed hook only after you trust it in /hooks, and loads a "
            "project's .codex/hooks.json only in a trusted project"
        )
    else:
        lines.append("Claude Code 2.1.181 or later reads this hook's block feedback")
    return lines


def install_stop_hook(
    settings: Path,
    harness: str,
    *,
    executable: str,
    change: str,
    endpoint: str,
    repository: str,
    profile: str,
    token_file: Path,
    workspace: Path,
    data_dir: Path,
) -> str:
    """Write ``harness``'s Stop hook for ``change`` into ``settings``; return its command line.

    Only ``settings`` is written, and only our own earlier entry in it is replaced.
    """
    command = hook_command_line(
        harness,
        executable=executable,
        change=change,
        endpoint=endpoint,
        repository=repository,
        profile=profile,
        token_file=token_file,
        workspace=workspace,
        data_dir=data_dir,
    )
    install_hook(settings, command, f" {HOOK_COMMANDS[harness]} ")
    return command
