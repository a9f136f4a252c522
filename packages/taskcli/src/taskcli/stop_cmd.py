"""``agent-task task-stop``, ``task-codex-stop``, ``install-stop`` and ``init-repo``.

The two Stop hooks are read-only. They take ``CHANGE --endpoint URL --repository R
--profile ID --token-file ABS_PATH --workspace PATH`` (and ``--data-dir``, the local
authority). Each run:

1. reads the harness's Stop payload from stdin (malformed: exit 1, which does not block);
2. checks the 8-continuation counter for the session and Change (exhausted: the stop is
   allowed without asking anything; unreadable: exit 1);
3. reads the local subject of CHANGE (the data dir opened read-only, existing-only) and the
   workspace (HEAD, clean, base revision) without changing either;
4. calls ``qualification`` with the token file, within 30 seconds;
5. reads the subject and the workspace again: both must equal the first read;
6. passes (prints nothing, exit 0) only if the strictly validated answer is qualified and
   current and the clean workspace's base is the qualified revision. Everything else blocks
   with the typed failures, a fixed next_action sentence and ``next``, in the harness's
   Stop-hook format (Claude Code ``hookSpecificOutput.additionalContext``, Codex
   ``decision: block``, the shapes of the done gate's hook). Errors are fixed categories
   without paths or server text.

The hook never claims, collects, uploads, finalizes, reconciles or checkpoints: ``next`` is
data for the agent. The only file it writes is its own counter, under
``$AGENT_TASK_STOP_DIR`` (default ``~/.local/share/agent-task/agent-stop``).

``install-stop`` writes one of these hooks into the settings file you name (and nothing
else, never by itself); ``init-repo`` writes the managed "Workflow tasks" block into
AGENTS.md, the Cursor rules and the Copilot instructions, replacing only its own block.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import click
from taskcore import TaskError
from taskcore.auth import read_token_file
from taskcore.authority.gitrev import git_revision, work_tree_state
from taskcore.collector.state import durable_write
from taskcore.collector.stop import (
    Category,
    LocalRead,
    StopDecision,
    decide,
    error_decision,
    validate_answer,
)
from taskcore.errors import ErrorCode
from taskcore.gate.hook import hook_output
from taskcore.limits import QUALIFICATION_TIMEOUT_SECONDS, STOP_CONTINUATIONS_MAX
from taskcore.paths import user_data_root
from taskcore.workflow.reads import open_reader

from taskcli.common import ServiceClient

__all__ = ["MANAGED_BEGIN", "MANAGED_END", "register", "write_managed_block"]

_STDIN_MAX: Final = 4 * 1024 * 1024
_CLAUDE, _CODEX = "claude-code", "codex"


# -- the counter -----------------------------------------------------------------------------------


def _counter_dir() -> Path:
    override = os.environ.get("AGENT_TASK_STOP_DIR")
    return Path(override) if override else user_data_root() / "agent-stop"


class _CounterError(Exception):
    pass


def _counter_path(session: str, change: str) -> Path:
    key = hashlib.sha256(f"{session}\x00{change}".encode()).hexdigest()
    return _counter_dir() / f"{key}.count"


def _read_counter(path: Path) -> int:
    try:
        if not path.exists():
            return 0
        text = path.read_text(encoding="ascii").strip()
        value = int(text)
    except (OSError, ValueError, UnicodeDecodeError):
        raise _CounterError("the continuation counter is unreadable") from None
    if value < 0:
        raise _CounterError("the continuation counter is unreadable")
    return value


def _write_counter(path: Path, value: int) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if value == 0:
            path.unlink(missing_ok=True)
        else:
            durable_write(path, str(value).encode("ascii"), exclusive=False)
    except (OSError, TaskError):
        raise _CounterError("the continuation counter cannot be written") from None


# -- the local reads ---------------------------------------------------------------------------


class _BlockedError(Exception):
    def __init__(self, decision: StopDecision) -> None:
        self.decision = decision


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
        clean = state.clean and not _operation_in_progress(workspace)
        base: str | None = None
        if state.head is not None:
            base = (
                subject[2]
                if subject is not None and subject[3] == state.head
                else git_revision(workspace, state.head)
            )
    except TaskError:
        raise _BlockedError(error_decision(Category.WORKSPACE_UNAVAILABLE)) from None
    return LocalRead(subject=subject, head=state.head, clean=clean, base_revision=base)


_IN_PROGRESS: Final = (
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "BISECT_LOG",
    "rebase-merge",
    "rebase-apply",
)


def _operation_in_progress(workspace: Path) -> bool:
    """Whether a merge, rebase, cherry-pick, revert or bisect is in progress (read-only)."""
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv, no shell
            ["git", "-C", str(workspace), "rev-parse", "--absolute-git-dir"],  # noqa: S607
            capture_output=True,
            timeout=30,
            check=False,
            env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        )
    except (OSError, subprocess.TimeoutExpired):
        raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, "git did not answer") from None
    if done.returncode != 0:
        raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, "not a git work tree")
    git_dir = Path(done.stdout.decode("utf-8", "surrogateescape").strip())
    return any((git_dir / name).exists() for name in _IN_PROGRESS)


def _ask(endpoint: str, token_file: Path, repository: str, profile: str, change: str) -> Any:
    try:
        read_token_file(token_file)
    except TaskError:
        raise _BlockedError(error_decision(Category.TOKEN_UNAVAILABLE)) from None
    client = ServiceClient(endpoint, token_file, timeout=float(QUALIFICATION_TIMEOUT_SECONDS))
    body = json.dumps({"version": 1, "change_id": change}).encode()
    try:
        answer = client.workflow(repository, profile, "qualification", body)
    except TaskError as err:
        if err.code in (
            ErrorCode.UNAUTHENTICATED,
            ErrorCode.TOKEN_REVOKED,
            ErrorCode.FORBIDDEN,
            ErrorCode.AUTHORIZATION_CHANGED,
        ):
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
    endpoint: str,
    repository: str,
    profile: str,
    token_file: Path,
    workspace: Path,
    data_dir: Path,
) -> StopDecision:
    """Run the read-only check and return the decision (never raises for a block)."""
    try:
        before = _read_local(data_dir, repository, profile, change, workspace)
        if before.subject is None:
            return StopDecision(passed=False, next={"operation": "checkpoint"})
        raw = _ask(endpoint, token_file, repository, profile, change)
        after = _read_local(data_dir, repository, profile, change, workspace)
        dirty = not after.clean or after.subject is None or after.base_revision != after.subject[2]
        try:
            answer = validate_answer(raw, local_revision=before.subject[2])
        except TaskError:
            return error_decision(Category.MALFORMED_RESPONSE, dirty=dirty)
        return decide(answer, before, after)
    except _BlockedError as blocked:
        return blocked.decision


def _payload(stdin: Any) -> dict[str, Any]:
    raw = stdin.read(_STDIN_MAX + 1)
    if len(raw) > _STDIN_MAX:
        raise ValueError("the Stop payload is too large")
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("the Stop payload is not a JSON object")
    return data


def run_hook(
    harness: str,
    *,
    change: str,
    endpoint: str,
    repository: str,
    profile: str,
    token_file: Path,
    workspace: Path,
    data_dir: Path,
    stdin: Any,
) -> tuple[int, str]:
    """Run one Stop hook; return ``(exit status, stdout text)``."""
    try:
        payload = _payload(stdin)
    except (OSError, ValueError, RecursionError):
        return 1, ""
    session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else ""
    path = _counter_path(str(session), change)
    try:
        used = _read_counter(path)
        if used >= STOP_CONTINUATIONS_MAX:
            _write_counter(path, 0)
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
                endpoint=endpoint,
                repository=repository,
                profile=profile,
                token_file=token_file,
                workspace=workspace,
                data_dir=data_dir,
            )
        if decision.passed:
            _write_counter(path, 0)
            return 0, ""
        _write_counter(path, used + 1)
    except _CounterError:
        return 1, ""
    return 0, hook_output(harness, "Stop", "block", [decision.text()])


def _hook_command(name: str, harness: str) -> click.Command:
    @click.command(name)
    @click.argument("change")
    @click.option("--endpoint", required=True, help="Service base URL.")
    @click.option("--repository", required=True, help="Repository ID.")
    @click.option("--profile", required=True, help="Workflow profile ID.")
    @click.option(
        "--token-file", required=True, type=click.Path(path_type=Path), help="Absolute path."
    )
    @click.option(
        "--workspace", required=True, type=click.Path(path_type=Path), help="The work tree."
    )
    @click.option(
        "--data-dir",
        type=click.Path(path_type=Path),
        default=None,
        help="The local authority's data dir (opened read-only).",
    )
    def command(
        change: str,
        endpoint: str,
        repository: str,
        profile: str,
        token_file: Path,
        workspace: Path,
        data_dir: Path | None,
    ) -> None:
        from taskcli.common import resolve_data_dir

        status, text = run_hook(
            harness,
            change=change,
            endpoint=endpoint,
            repository=repository,
            profile=profile,
            token_file=token_file,
            workspace=workspace,
            data_dir=resolve_data_dir(data_dir),
            stdin=sys.stdin.buffer,
        )
        if text:
            click.echo(text)
        if status:
            click.echo("agent-task task-stop: unreadable Stop payload or counter", err=True)
        sys.exit(status)

    command.help = (
        f"Read-only {'Codex' if harness == _CODEX else 'Claude Code'} Stop hook: pass only if "
        "CHANGE's current subject is qualified and the clean workspace is at its revision."
    )
    return command


# -- install-stop ------------------------------------------------------------------------------


def _agent_task_executable() -> str:
    candidate = Path(sys.argv[0])
    if candidate.name == "agent-task" and candidate.exists():
        return str(candidate.resolve())
    return "agent-task"


def install_hook(settings: Path, command: str, marker: str) -> None:
    """Put ``command`` into ``settings`` as the Stop hook, replacing our earlier entry only."""
    data: dict[str, Any] = {}
    if settings.exists():
        text = settings.read_text(encoding="utf-8")
        if text.strip():
            loaded = json.loads(text)
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


@click.command("install-stop")
@click.argument("change")
@click.option("--harness", type=click.Choice([_CLAUDE, _CODEX]), required=True)
@click.option(
    "--settings",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The settings file to write (.claude/settings.json, ~/.codex/hooks.json, ...).",
)
@click.option("--endpoint", required=True)
@click.option("--repository", required=True)
@click.option("--profile", required=True)
@click.option("--token-file", required=True, type=click.Path(path_type=Path))
@click.option("--workspace", required=True, type=click.Path(path_type=Path))
@click.option("--data-dir", type=click.Path(path_type=Path), default=None)
def install_stop_command(
    change: str,
    harness: str,
    settings: Path,
    endpoint: str,
    repository: str,
    profile: str,
    token_file: Path,
    workspace: Path,
    data_dir: Path | None,
) -> None:
    """Write the task-stop hook for CHANGE into the settings file you name (only there)."""
    from taskcli.common import resolve_data_dir, run

    def act() -> str:
        if not token_file.is_absolute():
            raise TaskError(ErrorCode.INVALID_PATH, "--token-file must be an absolute path")
        name = "task-codex-stop" if harness == _CODEX else "task-stop"
        argv = [
            _agent_task_executable(),
            name,
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
            str(resolve_data_dir(data_dir).resolve()),
        ]
        command = shlex.join(argv)
        install_hook(settings, command, f" {name} ")
        return command

    command = run(False, act)
    click.echo(f"installed the {harness} Stop hook in {settings}:")
    click.echo(f"  {command}")
    click.echo(
        "instructions: the 'Workflow tasks' block ('agent-task init-repo') tells the agent how "
        "to discover, collect and qualify before it finishes"
    )


# -- init-repo ---------------------------------------------------------------------------------

MANAGED_BEGIN: Final = (
    "<!-- BEGIN agent-task: Workflow tasks (managed by 'agent-task init-repo') -->"
)
MANAGED_END: Final = "<!-- END agent-task: Workflow tasks -->"

_BLOCK: Final = """## Workflow tasks

This repository's work is checked by agent-task. Discover, then fetch:

1. `agent-task task capabilities` for the supported schema, then `agent-task task next --json
   '{"version": 1, "change_id": "<change>"}'` to see what the installed requirement asks.
2. `agent-task task instructions` for a task: every required criterion is inline. Call
   `agent-task task reference` for one named reference only when you need it. A
   `schema_mismatch` carries `server_schema_versions` and a fixed action hint, never a command.
3. Commit your work and run `agent-task checkpoint <change>` (a dirty tree is refused).
4. Run `agent-task collect <change>`: a trusted collector runs the pinned checks on that exact
   revision and uploads signed evidence. A failed run is collected too.
5. Run `agent-task qualification <change>`. You are done only when it says `qualified: true`
   for the current subject at your committed revision. `next` is data
   (collector_claim, reconcile, collector_finalize, checkpoint, none): decide what to run.

Your own statements and results never make a task pass; only the collector's validated record
and the authority's receipt do.
"""


def write_managed_block(path: Path, *, header: str = "") -> bool:
    """Write or replace the managed block in ``path``; return whether the file changed.

    Content outside the block is left exactly as it was.
    """
    block = f"{MANAGED_BEGIN}\n{_BLOCK}{MANAGED_END}\n"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    begin, end = old.find(MANAGED_BEGIN), old.find(MANAGED_END)
    if begin != -1 and end != -1 and end > begin:
        stop = end + len(MANAGED_END)
        if old[stop : stop + 1] == "\n":
            stop += 1
        new = old[:begin] + block + old[stop:]
    elif old:
        new = old + ("" if old.endswith("\n") else "\n") + "\n" + block
    else:
        new = header + block
    if new == old:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new, encoding="utf-8")
    return True


_INSTRUCTION_FILES: Final = (
    ("AGENTS.md", ""),
    (
        ".cursor/rules/agent-task.mdc",
        "---\ndescription: agent-task workflow tasks\nalwaysApply: true\n---\n",
    ),
    (".github/copilot-instructions.md", ""),
)


@click.command("init-repo")
@click.option(
    "--path",
    "root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The repository root.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")
def init_repo_command(root: Path, as_json: bool) -> None:
    """Write the managed 'Workflow tasks' block into the instruction files.

    AGENTS.md, .cursor/rules/agent-task.mdc and .github/copilot-instructions.md; re-running
    replaces only that block and leaves other content alone.
    """
    from taskcli.common import emit

    changed = {
        name: write_managed_block(root / name, header=head) for name, head in _INSTRUCTION_FILES
    }
    emit(
        {"files": changed},
        as_json,
        lambda v: "\n".join(f"{'wrote' if c else 'unchanged'} {n}" for n, c in v["files"].items()),
    )


def register(group: click.Group) -> None:
    """Add ``task-stop``, ``task-codex-stop``, ``install-stop`` and ``init-repo``."""
    group.add_command(_hook_command("task-stop", _CLAUDE))
    group.add_command(_hook_command("task-codex-stop", _CODEX))
    group.add_command(install_stop_command)
    group.add_command(init_repo_command)
