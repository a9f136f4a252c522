"""``agent-task queue ...``: friendly commands for the everyday queue verbs.

Each builds the verb's JSON request from flags and prints the answer readably (``--json``
for programs). Anything not covered here is reachable with ``agent-task call agenttask.X``.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import click
from taskcore.codec import parse_json

from taskcli.common import ServiceClient, client_options, emit, human, json_option, run

__all__ = ["readable", "register"]


def _iso(ms: Any) -> str:
    if not isinstance(ms, int):
        return str(ms)
    stamp = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def _task_line(task: dict[str, Any]) -> str:
    """One line for a task view: id, verb, status, fence and lease expiry when leased."""
    parts = [str(task.get("taskId")), f"({task.get('verb')})", str(task.get("status"))]
    if task.get("fence"):
        parts.append(f"fence {task['fence']}")
    lease = task.get("lease")
    if isinstance(lease, dict) and isinstance(lease.get("expiresAtMs"), int):
        parts.append(f"lease until {_iso(lease['expiresAtMs'])}")
    return " ".join(parts)


def readable(answer: Any) -> str:
    """A summary line for the everyday answers, then the full answer, for people.

    >>> readable({"claimed": False})
    'nothing to claim: no queued task this token may run'
    >>> readable({"taskId": "at_1", "verb": "agent.run", "status": "DONE"}).splitlines()[0]
    'at_1 (agent.run) DONE'
    """
    if isinstance(answer, dict):
        if answer.get("claimed") is False:
            return "nothing to claim: no queued task this token may run"
        task = answer.get("task") if answer.get("claimed") is True else answer
        if isinstance(task, dict) and "taskId" in task and "status" in task:
            return _task_line(task) + "\n" + human(answer)
    return human(answer)


def _send(
    url: str, token_file: Path | None, verb: str, body: dict[str, Any], as_json: bool
) -> None:
    def act() -> Any:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        return ServiceClient(url, token_file).verb(verb, data)

    emit(run(as_json, act), as_json, readable)


def _json_value(text: str | None, as_json: bool) -> Any:
    if text is None:
        return None
    return run(as_json, lambda: parse_json(text))


def _prune(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


@click.group("queue")
def queue_group() -> None:
    """The agent task queue (agenttask.* verbs)."""


@queue_group.command("claim-next")
@click.option("--verb", default=None, help="Only tasks of this carrier verb (e.g. agent.run).")
@client_options
@json_option
def claim_next(verb: str | None, url: str, token_file: Path | None, as_json: bool) -> None:
    """Claim the next queued task this token may run: highest priority first, then oldest.

    (agenttask.claimNext)
    """
    _send(url, token_file, "agenttask.claimNext", _prune({"verb": verb}), as_json)


@queue_group.command("checkpoint")
@click.argument("task_id")
@click.option(
    "--status",
    type=click.Choice(["DONE", "FAILED"]),
    default=None,
    help="Finish the task (terminal checkpoint).",
)
@click.option(
    "--checkpoint", "state", default=None, metavar="JSON", help="Durable agent state to persist."
)
@click.option("--last-error", default=None, help="Why it failed.")
@click.option("--fence", type=int, default=None, help="Fence from the claim's lease handle.")
@client_options
@json_option
def checkpoint(
    task_id: str,
    status: str | None,
    state: str | None,
    last_error: str | None,
    fence: int | None,
    url: str,
    token_file: Path | None,
    as_json: bool,
) -> None:
    """Persist state and renew the lease, or finish the task (agenttask.checkpoint)."""
    body = _prune(
        {
            "taskId": task_id,
            "checkpoint": _json_value(state, as_json),
            "status": status,
            "lastError": last_error,
            "fence": fence,
        }
    )
    _send(url, token_file, "agenttask.checkpoint", body, as_json)


@queue_group.command("create")
@click.argument("verb")
@click.option("--payload", default=None, metavar="JSON", help="Task payload.")
@click.option("--parent", "parent_task_id", default=None, help="Parent task id.")
@click.option("--matter", "matter_id", default=None, help="Matter id.")
@client_options
@json_option
def create(
    verb: str,
    payload: str | None,
    parent_task_id: str | None,
    matter_id: str | None,
    url: str,
    token_file: Path | None,
    as_json: bool,
) -> None:
    """Queue a task for carrier VERB (agenttask.create)."""
    body = _prune(
        {
            "verb": verb,
            "payload": _json_value(payload, as_json),
            "parentTaskId": parent_task_id,
            "matterId": matter_id,
        }
    )
    _send(url, token_file, "agenttask.create", body, as_json)


def _by_id(name: str, verb: str, summary: str) -> None:
    @queue_group.command(name, help=f"{summary} ({verb}).")
    @click.argument("task_id")
    @client_options
    @json_option
    def command(task_id: str, url: str, token_file: Path | None, as_json: bool) -> None:
        _send(url, token_file, verb, {"taskId": task_id}, as_json)


_by_id("get", "agenttask.get", "Show one task")
_by_id("feed", "agenttask.feed", "Show a task's status and checkpoint")
_by_id("cancel", "agenttask.cancel", "Cancel a non-terminal task")
_by_id("requeue", "agenttask.requeue", "Return a FAILED task to the queue")


@queue_group.command("release")
@click.argument("task_id")
@click.option("--fence", type=int, default=None, help="Fence from the claim's lease handle.")
@client_options
@json_option
def release(
    task_id: str, fence: int | None, url: str, token_file: Path | None, as_json: bool
) -> None:
    """Give a held lease back; the task returns to the queue (agenttask.release)."""
    _send(
        url, token_file, "agenttask.release", _prune({"taskId": task_id, "fence": fence}), as_json
    )


@queue_group.command("list")
@click.option("--status", default=None, help="Only tasks in this status.")
@client_options
@json_option
def list_tasks(status: str | None, url: str, token_file: Path | None, as_json: bool) -> None:
    """List the workspace's tasks (agenttask.list)."""
    _send(url, token_file, "agenttask.list", _prune({"status": status}), as_json)


def register(group: click.Group) -> None:
    """Add ``queue``."""
    group.add_command(queue_group)
