"""The local index: transcripts read incrementally, sessions placed on the ladder.

For every transcript file the index keeps the byte offset it has read and the reader state
at that offset, so a second pass reads only the bytes appended since (a file that shrank or
whose first line changed is read again from the start). A trailing line without its newline
is never stored as read: it is parsed for the current answer only, so a half-written record
is read again once it is complete. Lines longer than ``GATE_LINE_MAX_BYTES`` are skipped
without being buffered whole. A dsh session (concatenated Zstandard frames) is read frame by
frame through :func:`taskcore.donegate.dsh.iter_lines`: the stored offset is always the end of a
complete frame, and a torn last frame is read for the current answer only.

Nothing here sends anything anywhere or writes any file but the index.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import attrs

from taskcore.clock import Clock, SystemClock
from taskcore.donegate.budget import Decision, decide
from taskcore.donegate.config import CLAUDE_CODE, CODEX, DSH, GateConfig, harness_of, repository_of
from taskcore.donegate.evidence import Evidence
from taskcore.donegate.ladder import evaluate
from taskcore.donegate.transcript import (
    feeder,
    head_of,
    read_transcript,
    session_key_for,
    with_tail,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.gate_api import (
    GateBudgetRecord,
    GateFileRecord,
    GateSessionRecord,
    GateStore,
)
from taskcore.store.sqlite_gate import GateIndexDatabase

__all__ = [
    "GateIndex",
    "ReadResult",
    "ScanReport",
    "feeder",
    "read_transcript",
    "session_key_for",
]


@attrs.frozen(kw_only=True)
class ReadResult:
    """One transcript after a read: its state (with any trailing partial line) and its key."""

    path: Path
    harness: str
    session_key: str
    parent_key: str
    evidence: Evidence
    bytes_read: int


@attrs.frozen(kw_only=True)
class ScanReport:
    """What one ``gate index`` pass did."""

    files_seen: int
    files_read: int
    bytes_read: int
    sessions_updated: int
    seconds: float

    @property
    def mb_per_s(self) -> float:
        """Read throughput in MB/s (10^6 bytes)."""
        return (self.bytes_read / 1e6) / self.seconds if self.seconds > 0 else 0.0


class GateIndex:
    """The index file plus the logic that keeps it current."""

    def __init__(
        self, config: GateConfig, *, busy_timeout_ms: int = 10_000, clock: Clock | None = None
    ) -> None:
        self.config = config
        self.clock: Clock = clock or SystemClock()
        if config.index_path.is_symlink():
            raise TaskError(ErrorCode.INVALID_PATH, "the gate index must not be a symlink")
        try:
            self.db = GateIndexDatabase(config.index_path, busy_timeout_ms=busy_timeout_ms)
        except OSError:
            raise TaskError(
                ErrorCode.STORAGE_UNAVAILABLE,
                "the gate index cannot be created; "
                "check the directory of --index or $AGENT_TASK_GATE_INDEX",
            ) from None

    def close(self) -> None:
        """Release the index."""
        self.db.close()

    # -- reading one transcript -------------------------------------------------------------
    def refresh(self, path: Path, harness: str | None = None) -> ReadResult:
        """Bring one transcript up to date in the index and return its current state."""
        path = Path(os.path.realpath(path))
        harness = harness or harness_of(path, self.config)
        try:
            st = os.stat(path)
        except OSError:
            raise TaskError(
                ErrorCode.NOT_FOUND,
                "the transcript cannot be read; check the path and its permissions",
            ) from None
        with self.db.read() as store:
            rec = store.get_file(str(path))
        head = head_of(path)
        state: Evidence | None = None
        offset = 0
        if (
            rec is not None
            and rec.harness == harness
            and rec.offset <= st.st_size
            and (rec.offset == 0 or rec.head == head)
        ):
            try:
                state = Evidence.from_json(rec.state)
                offset = rec.offset
            except (ValueError, TypeError, KeyError):
                state, offset = None, 0
        start = offset

        def flush(ev: Evidence, at: int) -> None:
            with self.db.write() as w:
                self._store(w, path, harness, ev, at, st.st_size, st.st_mtime_ns, head)

        try:
            ev, offset, tail = read_transcript(
                path, harness, state, offset, st.st_size, on_flush=flush
            )
        except OSError:
            raise TaskError(
                ErrorCode.NOT_FOUND,
                "the transcript cannot be read; check the path and its permissions",
            ) from None
        if offset != start or rec is None or rec.size != st.st_size:
            with self.db.write() as w:
                key, parent = self._store(
                    w, path, harness, ev, offset, st.st_size, st.st_mtime_ns, head
                )
        else:
            key, parent = session_key_for(ev, path)
        current = with_tail(ev, harness, tail)
        return ReadResult(
            path=path,
            harness=harness,
            session_key=key,
            parent_key=parent,
            evidence=current,
            bytes_read=offset - start + len(tail),
        )

    def _store(
        self,
        w: GateStore,
        path: Path,
        harness: str,
        ev: Evidence,
        offset: int,
        size: int,
        mtime_ns: int,
        head: str,
    ) -> tuple[str, str]:
        key, parent = session_key_for(ev, path)
        now = self.clock.now_ms()
        w.put_file(
            GateFileRecord(
                path=str(path),
                harness=harness,
                session_key=key,
                offset=offset,
                size=size,
                mtime_ns=mtime_ns,
                head=head,
                state=ev.to_json(),
                updated_at_ms=now,
            )
        )
        states = [ev, *self._child_states(w, key)] if not ev.subagent else [ev]
        verdict = evaluate(states)
        w.put_verdict(key, verdict.to_json())
        w.put_session(
            GateSessionRecord(
                session_key=key,
                harness=harness,
                session_id=ev.session_id or path.stem,
                parent_key=parent,
                subagent=ev.subagent,
                path=str(path),
                cwd=ev.cwd,
                repository=repository_of(ev.cwd),
                first_ms=ev.first_ts,
                last_ms=ev.ts or mtime_ns // 1_000_000,
                rung=verdict.rung,
                rung_name=verdict.rung_name,
                prompts=ev.prompts,
                updated_at_ms=now,
            )
        )
        if parent:
            self._replace_parent(w, parent)
        return key, parent

    def _child_states(self, store: GateStore, key: str) -> list[Evidence]:
        out = []
        for child in store.children(key):
            rec = store.file_of_session(child.session_key)
            if rec is None:
                continue
            try:
                out.append(Evidence.from_json(rec.state))
            except (ValueError, TypeError, KeyError):
                continue
        return out

    def _replace_parent(self, w: GateStore, parent_key: str) -> None:
        parent = w.get_session(parent_key)
        rec = w.file_of_session(parent_key)
        if parent is None or rec is None:
            return
        try:
            pev = Evidence.from_json(rec.state)
        except (ValueError, TypeError, KeyError):
            return
        verdict = evaluate([pev, *self._child_states(w, parent_key)])
        w.put_verdict(parent_key, verdict.to_json())
        if verdict.rung != parent.rung:
            w.put_session(
                attrs.evolve(
                    parent,
                    rung=verdict.rung,
                    rung_name=verdict.rung_name,
                    updated_at_ms=self.clock.now_ms(),
                )
            )

    def states_of(self, result: ReadResult) -> list[Evidence]:
        """The session's own state first, then (for a main session) its subagents' states."""
        if result.evidence.subagent:
            return [result.evidence]
        with self.db.read() as store:
            children = self._child_states(store, result.session_key)
        return [result.evidence, *children]

    # -- scanning the roots -----------------------------------------------------------------
    def transcripts(self) -> Iterator[tuple[str, Path]]:
        """Every transcript file under the roots (main sessions before subagents).

        A symlinked file that resolves outside both roots is not a transcript of this machine's
        harnesses and is left out (a scan can be started by a remote lookup).
        """
        for harness, path in self._candidates():
            if path.is_symlink():
                real = os.path.realpath(path)
                if not any(
                    real.startswith(os.path.realpath(r).rstrip(os.sep) + os.sep)
                    for _h, r in self.config.roots()
                ):
                    continue
            yield harness, path

    def _candidates(self) -> Iterator[tuple[str, Path]]:
        claude_root, codex_root = self.config.claude_root, self.config.codex_root
        subagents: list[Path] = []
        if claude_root.is_dir():
            for project in sorted(_dirs(claude_root)):
                for entry in sorted(_entries(project)):
                    if entry.is_file() and entry.suffix == ".jsonl":
                        yield CLAUDE_CODE, entry
                    elif entry.is_dir():
                        sub = entry / "subagents"
                        if sub.is_dir():
                            subagents.extend(
                                p
                                for p in sorted(_entries(sub))
                                if p.suffix == ".jsonl" and p.is_file()
                            )
        for p in subagents:
            yield CLAUDE_CODE, p
        if codex_root.is_dir():
            for p in sorted(_walk(codex_root, depth=4)):
                yield CODEX, p
        dsh_root = self.config.dsh_root
        if dsh_root is not None and dsh_root.is_dir():
            # <root>/--<normalized-cwd>--/<encoded-id>/session.jsonl[.zstd]
            for project in sorted(_dirs(dsh_root)):
                for session in sorted(_dirs(project)):
                    for name in ("session.jsonl.zstd", "session.jsonl"):
                        p = session / name
                        if p.is_file():
                            yield DSH, p

    def scan(self) -> ScanReport:
        """Bring every transcript under the roots up to date (unchanged files are not read)."""
        t0 = time.perf_counter()
        seen = read = total = 0
        for harness, path in self.transcripts():
            seen += 1
            try:
                st = os.stat(path)
            except OSError:
                continue
            with self.db.read() as store:
                rec = store.get_file(os.path.realpath(path))
            if rec is not None and rec.size == st.st_size and rec.mtime_ns == st.st_mtime_ns:
                continue
            try:
                result = self.refresh(path, harness)
            except TaskError as err:
                if err.code is ErrorCode.NOT_FOUND:
                    continue
                raise
            read += 1
            total += result.bytes_read
        return ScanReport(
            files_seen=seen,
            files_read=read,
            bytes_read=total,
            sessions_updated=read,
            seconds=time.perf_counter() - t0,
        )

    # -- lookups ----------------------------------------------------------------------------
    def find_session(self, session_id: str) -> GateSessionRecord | None:
        """A session by harness session id (or full index key); main sessions first."""
        with self.db.read() as store:
            rec = store.get_session(session_id)
            if rec is not None:
                return rec
            found = store.sessions_with_id(session_id)
        return found[0] if found else None

    def latest_for(self, cwd: str, *, probe: bool = True) -> GateSessionRecord | None:
        """The most recently active indexed main session of the repository holding ``cwd``.

        With ``probe`` the repository is first looked for on disk (the nearest ``.git``);
        then, and always for a remote caller's directory, only the index is consulted: the
        nearest ancestor of ``cwd``, as a string, that is an indexed repository.
        """
        norm = os.path.normpath(cwd)
        with self.db.read() as store:
            if probe:
                rec = store.latest_in_repository(repository_of(norm))
                if rec is not None:
                    return rec
            probe_path = norm
            for _ in range(64):
                rec = store.latest_in_repository(probe_path)
                if rec is not None:
                    return rec
                parent = os.path.dirname(probe_path)
                if parent == probe_path:
                    return None
                probe_path = parent
        return None

    def repository_history(self, repository: str, exclude_key: str) -> tuple[int, int]:
        """(past sessions here with rung 1+, of those with rung 3+), this one excluded."""
        with self.db.read() as store:
            return store.repository_history(repository, exclude_key)

    def sessions(self, *, since_ms: int = 0) -> tuple[GateSessionRecord, ...]:
        """Every indexed session active since ``since_ms``."""
        with self.db.read() as store:
            return store.sessions(since_ms=since_ms)

    def counts(self) -> tuple[int, int]:
        """(files, sessions) in the index."""
        with self.db.read() as store:
            return store.counts()

    # -- the budget -------------------------------------------------------------------------
    def budget(self, session_key: str, prompt_key: str) -> tuple[int, bool]:
        """(re-entries used, receipt shown) for one session and prompt."""
        with self.db.read() as store:
            rec = store.get_budget(session_key, prompt_key)
        return (0, False) if rec is None else (rec.used, rec.receipt_shown)

    def spend(
        self, session_key: str, prompt_key: str, *, below_line: bool, stop_hook_active: bool
    ) -> Decision:
        """Decide one stop and record the spent budget, in one write transaction."""
        with self.db.write() as store:
            rec = store.get_budget(session_key, prompt_key)
            used, shown = (0, False) if rec is None else (rec.used, rec.receipt_shown)
            decision = decide(
                below_line=below_line, used=used, shown=shown, stop_hook_active=stop_hook_active
            )
            if (decision.used, decision.shown) != (used, shown):
                store.put_budget(
                    GateBudgetRecord(
                        session_key=session_key,
                        prompt_key=prompt_key,
                        used=decision.used,
                        receipt_shown=decision.shown,
                        updated_at_ms=self.clock.now_ms(),
                    )
                )
        return decision


def _entries(path: Path) -> Iterator[Path]:
    try:
        with os.scandir(path) as it:
            for e in it:
                yield Path(e.path)
    except OSError:
        return


def _dirs(path: Path) -> Iterator[Path]:
    for p in _entries(path):
        if p.is_dir() and not p.is_symlink():
            yield p


def _walk(root: Path, *, depth: int) -> Iterator[Path]:
    for p in _entries(root):
        if p.is_dir() and not p.is_symlink():
            if depth > 0:
                yield from _walk(p, depth=depth - 1)
        elif p.suffix == ".jsonl" and p.is_file():
            yield p
