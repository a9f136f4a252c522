r"""The agent-task pre-receive hook: a protected ref moves only if the authority admits it.

``agent-task landing install`` copies this file into a bare repository's ``hooks/pre-receive``
with its settings filled into :data:`CONFIG` (see :mod:`taskcore.evidence.landing_install`).
It is a thin caller and imports nothing but the Python standard library, so it starts fast.
For every update of a protected ref it:

1. computes the pushed commit's revision (``docs/git-mapping.md``: the same listing and
   digest as :func:`taskcore.authority.gitrev.git_revision`; git reads the pushed objects
   from the push's quarantine through the environment git gives the hook);
2. asks ``workflow.landing_check`` on the authority over HTTP, with the token file's bearer
   token and a bounded timeout;
3. prints a few lines (git shows them to the pusher as ``remote: ...``) and refuses the
   whole push unless every protected update is admitted.

It fails closed: an unreachable or slow authority, a rejected token, an unreadable token file
or a malformed answer refuses the push with one clear line. With ``fail_open`` (off unless
installed with ``--fail-open``) only an unreachable or failing authority lets the update
through, and the pass says so every time. Deleting a protected ref is refused. Refs that are
not protected are never looked at.

>>> parse_updates(b"0" * 40 + b" " + b"a" * 40 + b" refs/heads/main\n")
[('0000000000000000000000000000000000000000', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'refs/heads/main')]
>>> revision_of_listing(b"")
'a8f2224e03b9147739d6f242f9b67670b0d141d0e834ad0ed8c1442d47f4423b'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import IO, Any

CONFIG: dict[str, Any] = {}
"""The installed settings: url, repository, profile, protect, token_file, timeout, fail_open."""

MARKER = "# agent-task landing hook v1"
"""The line ``landing install`` writes as the hook's second line; ``uninstall`` looks for it."""

REVISION_DOMAIN = b"agentscm.git-revision.v1"
_LEAF_KINDS = {b"100644": b"blob", b"100755": b"blob", b"120000": b"blob", b"160000": b"commit"}
_ENTRIES_MAX = 1_000_000
_GIT_TIMEOUT = 120
_ANSWER_MAX = 64 * 1024
_STDIN_MAX = 1024 * 1024
_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_CODE = re.compile(r"[A-Za-z0-9._-]{1,128}")
_PREFIX = "agent-task: "


class HookError(Exception):
    """A local failure (git, the token file) that refuses the push."""


# -- the revision -----------------------------------------------------------------------------


def revision_of_listing(listing: bytes) -> str:
    """SHA-256 over the domain, one NUL, the listing length (u64 big-endian), the listing."""
    h = hashlib.sha256(REVISION_DOMAIN + b"\x00" + len(listing).to_bytes(8, "big"))
    h.update(listing)
    return h.hexdigest()


def _git_env() -> dict[str, str]:
    # Keep git's own variables: in a pre-receive hook they point at the push's quarantine.
    env = dict(os.environ)
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1", "LC_ALL": "C"})
    return env


def _feed(stdin: IO[bytes], oids: list[bytes]) -> None:
    try:
        for oid in oids:
            stdin.write(oid + b"\n")
        stdin.close()
    except (BrokenPipeError, ValueError):
        return  # git stopped early; the reader reports it


def _blob_hashes(oids: list[bytes]) -> dict[bytes, str]:
    unique = list(dict.fromkeys(oids))
    if not unique:
        return {}
    proc = subprocess.Popen(
        ["git", "cat-file", "--batch"],  # noqa: S607 - the git on PATH that runs this hook
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_git_env(),
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    feeder = threading.Thread(target=_feed, args=(proc.stdin, unique), daemon=True)
    feeder.start()
    timer = threading.Timer(_GIT_TIMEOUT, proc.kill)
    timer.start()
    out: dict[bytes, str] = {}
    try:
        for oid in unique:
            header = proc.stdout.readline().rstrip(b"\n").split(b" ")
            if len(header) != 3 or header[0] != oid or header[1] != b"blob":
                raise HookError("git could not read an object of the pushed commit")
            remaining = int(header[2])
            h = hashlib.sha256()
            while remaining:
                chunk = proc.stdout.read(min(1 << 16, remaining))
                if not chunk:
                    raise HookError("git stopped while reading an object")
                h.update(chunk)
                remaining -= len(chunk)
            if proc.stdout.read(1) != b"\n":
                raise HookError("git returned a malformed object")
            out[oid] = h.hexdigest()
    finally:
        timer.cancel()
        proc.stdout.close()
        proc.kill()
        proc.wait()
        feeder.join()
    return out


def commit_revision(commit: str) -> str:
    """The revision of ``commit`` in the repository the hook runs in (``docs/git-mapping.md``)."""
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv, no shell
            ["git", "ls-tree", "-r", "-z", "--full-tree", commit],  # noqa: S607
            capture_output=True,
            env=_git_env(),
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        raise HookError("git did not list the pushed commit") from None
    if done.returncode != 0:
        raise HookError("git did not list the pushed commit")
    leaves: list[tuple[bytes, bytes, bytes, bytes]] = []
    for record in done.stdout.split(b"\x00"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid = meta.split(b" ")
        if _LEAF_KINDS.get(mode) != kind:
            raise HookError("the pushed commit has an unexpected tree entry")
        leaves.append((mode, kind, oid, path))
        if len(leaves) > _ENTRIES_MAX:
            raise HookError(f"the pushed commit has more than {_ENTRIES_MAX} files")
    hashes = _blob_hashes([oid for _m, kind, oid, _p in leaves if kind == b"blob"])
    lines = []
    for mode, kind, oid, path in leaves:
        digest = hashes[oid].encode("ascii") if kind == b"blob" else oid
        lines.append((path, mode + b" " + kind + b" " + digest + b"\t" + path + b"\x00"))
    lines.sort(key=lambda item: item[0])
    return revision_of_listing(b"".join(line for _path, line in lines))


# -- the push ---------------------------------------------------------------------------------


def parse_updates(data: bytes) -> list[tuple[str, str, str]]:
    """``<old> SP <new> SP <ref> LF`` lines from git, as ``(old, new, ref)``."""
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        parts = line.split(" ")
        if len(parts) == 3:
            out.append((parts[0], parts[1], parts[2]))
    return out


def _is_zero(oid: str) -> bool:
    return bool(oid) and set(oid) == {"0"}


def _clean(text: object, limit: int = 300) -> str:
    # Only printable characters reach the pusher's terminal.
    return "".join(c for c in str(text) if c.isprintable())[:limit]


def _read_token(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            token = handle.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        raise HookError("the token file cannot be read") from None
    if not token:
        raise HookError("the token file is empty")
    return token


def ask(config: dict[str, Any], token: str, ref: str, commit: str, revision: str) -> Any:
    """POST ``workflow.landing_check``; return the parsed answer or raise.

    Raises :class:`urllib.error.URLError` / :class:`TimeoutError` / :class:`OSError` when the
    authority cannot be reached, and :class:`urllib.error.HTTPError` for a non-2xx answer.
    """
    url = (
        str(config["url"]).rstrip("/")
        + "/v1/hub/workspace/repositories/"
        + urllib.parse.quote(str(config["repository"]), safe="")
        + "/profiles/"
        + urllib.parse.quote(str(config["profile"]), safe="")
        + "/agent-tasks"
    )
    body = json.dumps(
        {
            "operation": "landing_check",
            "request": {"version": 1, "ref": ref, "commit": commit, "revision": revision},
        }
    ).encode("utf-8")
    request = urllib.request.Request(  # noqa: S310 - the operator's configured URL
        url,
        data=body,
        method="POST",
        headers={
            "Authorization": "Bearer " + token,
            "Content-Type": "application/json",
            "Accept": "application/json",
        },
    )
    timeout = float(config["timeout"])
    outcome: dict[str, Any] = {}

    def exchange() -> None:
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                outcome["answer"] = json.loads(
                    response.read(_ANSWER_MAX + 1)[:_ANSWER_MAX] or b"null"
                )
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc

    # The timeout bounds the whole exchange, not only each socket read: a server that
    # trickles bytes cannot hold the push open.
    worker = threading.Thread(target=exchange, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError("timed out")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("answer")


def _result(answer: Any) -> dict[str, Any] | None:
    if not isinstance(answer, dict) or answer.get("operation") != "landing_check":
        return None
    result = answer.get("result")
    if not isinstance(result, dict) or not isinstance(result.get("admitted"), bool):
        return None
    if not isinstance(result.get("code"), str) or not isinstance(result.get("next"), dict):
        return None
    return result


def _explain(out: IO[str], ref: str, new: str, result: dict[str, Any]) -> None:
    out.write(f"{_PREFIX}{ref} -> {new[:12]} REFUSED: {_clean(result.get('code'), 64)}\n")
    out.write(f"{_PREFIX}  {_clean(result.get('message'))}\n")
    failures = result.get("failures")
    if isinstance(failures, list):
        shown = [
            f"{f['task_id']} {f['code']}"
            for f in failures[:4]
            if isinstance(f, dict)
            and _CODE.fullmatch(str(f.get("task_id", "")))
            and _CODE.fullmatch(str(f.get("code", "")))
        ]
        if shown:
            out.write(f"{_PREFIX}  failures: {'; '.join(shown)}\n")
    step = result["next"]
    operation = _clean(step.get("operation", "none"), 32)
    task = step.get("task_id")
    task_text = f" {task}" if isinstance(task, str) and _CODE.fullmatch(task) else ""
    change = result.get("change_id")
    change_text = (
        f" (Change {change})" if isinstance(change, str) and _CODE.fullmatch(change) else ""
    )
    out.write(f"{_PREFIX}  next: {operation}{task_text}{change_text}\n")


def _unavailable(config: dict[str, Any], out: IO[str], ref: str, new: str, why: str) -> bool:
    """Report an authority that cannot answer; return whether the update may pass."""
    if config.get("fail_open"):
        out.write(
            f"{_PREFIX}WARNING {ref} -> {new[:12]} NOT CHECKED: {why}; this hook was "
            "installed with --fail-open, so the update goes through unchecked\n"
        )
        return True
    out.write(f"{_PREFIX}{ref} -> {new[:12]} REFUSED: {why} (the landing check fails closed)\n")
    return False


def check_update(config: dict[str, Any], token: str, ref: str, new: str, out: IO[str]) -> bool:
    """Check one protected update; print what happened; return whether it may land."""
    if _is_zero(new):
        out.write(f"{_PREFIX}{ref} REFUSED: a protected ref cannot be deleted by a push\n")
        return False
    if _OID.fullmatch(new) is None:
        out.write(f"{_PREFIX}{ref} REFUSED: git gave a malformed object name\n")
        return False
    try:
        revision = commit_revision(new)
    except HookError as err:
        out.write(f"{_PREFIX}{ref} -> {new[:12]} REFUSED: {err}\n")
        return False
    try:
        answer = ask(config, token, ref, new, revision)
    except urllib.error.HTTPError as err:
        if err.code in (401, 403):
            out.write(
                f"{_PREFIX}{ref} -> {new[:12]} REFUSED: the authority rejected the hook's "
                f"token (HTTP {err.code}); ask the operator to issue a new one\n"
            )
            return False
        if err.code >= 500 or err.code == 429:
            return _unavailable(config, out, ref, new, f"the authority failed (HTTP {err.code})")
        out.write(
            f"{_PREFIX}{ref} -> {new[:12]} REFUSED: the authority refused the check "
            f"(HTTP {err.code}); check the hook's repository and profile\n"
        )
        return False
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        why = (
            "timed out"
            if isinstance(reason, TimeoutError) or "timed out" in str(reason)
            else ("is unreachable")
        )
        return _unavailable(
            config, out, ref, new, f"the authority at {_clean(config['url'], 200)} {why}"
        )
    result = _result(answer)
    if result is None:
        out.write(f"{_PREFIX}{ref} -> {new[:12]} REFUSED: the authority's answer is malformed\n")
        return False
    if result["admitted"] is True and result.get("code") == "admitted":
        receipt = result.get("receipt_digest")
        receipt_text = f", receipt {receipt[:16]}" if isinstance(receipt, str) else ""
        out.write(
            f"{_PREFIX}{ref} -> {new[:12]} admitted "
            f"(Change {_clean(result.get('change_id'), 128)}{receipt_text})\n"
        )
        return True
    _explain(out, ref, new, result)
    return False


def run(data: bytes, config: dict[str, Any], out: IO[str]) -> int:
    """Judge a push (git's stdin ``data``); 0 lets it through, 1 refuses it."""
    protected = set(config.get("protect", ()))
    updates = [(old, new, ref) for old, new, ref in parse_updates(data) if ref in protected]
    if not updates:
        return 0
    try:
        token = _read_token(str(config["token_file"]))
    except HookError as err:
        out.write(f"{_PREFIX}push REFUSED: {err} (the landing check fails closed)\n")
        return 1
    verdicts = [check_update(config, token, ref, new, out) for _old, new, ref in updates]
    return 0 if all(verdicts) else 1


def main() -> int:
    """Entry point when git runs the hook."""
    data = sys.stdin.buffer.read(_STDIN_MAX + 1)
    if len(data) > _STDIN_MAX:
        sys.stderr.write(f"{_PREFIX}push REFUSED: too many ref updates in one push\n")
        return 1
    return run(data, CONFIG, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
