"""Opening the journal fixtures of earlier releases with this release's code.

Every folder of ``tests/fixtures/journals/`` that holds a ``manifest.json`` is a fixture
(``generate.py`` there writes one per release); a new release adds a folder and the tests pick
it up. A fixture is opened the way an operator upgrades: the SQLite data dir is copied and
opened (its migrations run on open); the PostgreSQL dump is restored with ``psql`` into a new
database of its own and opened there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import apsw
import psycopg

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "journals"


def fixture_dirs() -> list[Path]:
    """Every release fixture, oldest release folder name first."""
    return sorted(p.parent for p in FIXTURES.glob("*/manifest.json"))


def manifest(fixture: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((fixture / "manifest.json").read_text())
    return loaded


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


class ScratchDatabase:
    """A PostgreSQL database of this test's own, created empty and dropped at the end."""

    def __init__(self, admin_url: str, name: str) -> None:
        self.admin_url = admin_url
        self.name = name
        self.url = with_database(admin_url, name)

    def create(self) -> ScratchDatabase:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            conn.execute(f"CREATE DATABASE \"{self.name}\" ENCODING 'UTF8' TEMPLATE template0")
        return self

    def drop(self) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def reset_schema(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("DROP SCHEMA public CASCADE")
            conn.execute("CREATE SCHEMA public")


def restore_dump(dump: Path, url: str) -> None:
    """Load a plain-SQL ``pg_dump`` into ``url`` with ``psql``, stopping at the first error."""
    done = subprocess.run(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-f", str(dump)],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()


def copy_data_dir(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    for path in target.rglob("*"):
        os.chmod(path, 0o600 if path.is_file() else 0o700)
    os.chmod(target, 0o700)
    return target


# -- what a journal holds, read with SQL (before and after the code opens it) ---------------

_SQLITE_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
_PG_TABLES = (
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
    "AND table_type = 'BASE TABLE' ORDER BY table_name"
)
_AUDIT_OPS = "SELECT operation, sum(calls) FROM audit_event GROUP BY operation ORDER BY operation"


def sqlite_counts(journal: Path) -> dict[str, Any]:
    conn = apsw.Connection(str(journal), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        names = [str(r[0]) for r in conn.execute(_SQLITE_TABLES)]
        counts = {n: int(conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]) for n in names}
        ops = {str(o): int(n) for o, n in conn.execute(_AUDIT_OPS)}
        seq = [
            int(v) for v in conn.execute("SELECT min(seq), max(seq) FROM audit_event").fetchone()
        ]
    finally:
        conn.close()
    return {"counts": counts, "audit_operations": ops, "audit_seq": seq}


def postgres_counts(url: str) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        names = [str(r[0]) for r in conn.execute(_PG_TABLES)]
        counts = {}
        for n in names:
            row = conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()
            counts[n] = int(row[0]) if row else 0
        ops = {str(o): int(n) for o, n in conn.execute(_AUDIT_OPS)}
        row = conn.execute("SELECT min(seq), max(seq) FROM audit_event").fetchone()
    return {"counts": counts, "audit_operations": ops, "audit_seq": [int(v) for v in row or ()]}


# -- the schema, for comparing an upgraded journal with a fresh one -------------------------


def sqlite_schema(journal: Path) -> list[tuple[str, str, str, str]]:
    """Every table, index, trigger and view with its SQL, sorted (SQLite's own rows aside)."""
    conn = apsw.Connection(str(journal), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute(
            "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master "
            "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
        ).fetchall()
    finally:
        conn.close()
    return [tuple(str(v) for v in r) for r in rows]  # type: ignore[misc]


_PG_SCHEMA = {
    "columns": (
        "SELECT table_name, column_name, ordinal_position, data_type, is_nullable, "
        "coalesce(column_default, ''), coalesce(collation_name, ''), is_identity "
        "FROM information_schema.columns WHERE table_schema = 'public' "
        "ORDER BY table_name, ordinal_position"
    ),
    "indexes": (
        "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' "
        "ORDER BY tablename, indexname"
    ),
    "constraints": (
        "SELECT rel.relname, con.conname, pg_get_constraintdef(con.oid) "
        "FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid "
        "JOIN pg_namespace ns ON ns.oid = rel.relnamespace WHERE ns.nspname = 'public' "
        "ORDER BY rel.relname, con.conname"
    ),
    "triggers": (
        "SELECT event_object_table, trigger_name, event_manipulation, action_statement "
        "FROM information_schema.triggers WHERE trigger_schema = 'public' "
        "ORDER BY event_object_table, trigger_name, event_manipulation"
    ),
    "routines": (
        "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p "
        "JOIN pg_namespace ns ON ns.oid = p.pronamespace WHERE ns.nspname = 'public' "
        "ORDER BY p.proname"
    ),
    "sequences": (
        "SELECT sequencename, data_type::text, increment_by FROM pg_sequences "
        "WHERE schemaname = 'public' ORDER BY sequencename"
    ),
}


def postgres_schema(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Columns, indexes, constraints, triggers, functions and sequences of ``public``."""
    with psycopg.connect(url, autocommit=True) as conn:
        return {k: [tuple(r) for r in conn.execute(q).fetchall()] for k, q in _PG_SCHEMA.items()}


# -- a client of the live service (the public reads) -----------------------------------------


class Client:
    """JSON over HTTP to a running service, with the fixture's tokens by name."""

    def __init__(self, url: str, tokens: dict[str, dict[str, Any]]) -> None:
        self.url = url
        self.tokens = tokens

    def post(self, path: str, body: Any, token: str) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {self.tokens[token]['token']}",
                "Content-Type": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        return status, json.loads(raw) if raw else None

    def verb(self, name: str, body: Any, token: str) -> Any:
        status, answer = self.post("/v/" + name, body, token)
        assert status == 200, (name, body, status, answer)
        return answer

    def workflow(self, repository: str, profile: str, op: str, request: Any, token: str) -> Any:
        path = (
            f"/v1/hub/workspace/repositories/{quote(repository, safe='')}"
            f"/profiles/{quote(profile, safe='')}/agent-tasks"
        )
        status, answer = self.post(path, {"operation": op, "request": request}, token)
        assert status == 200, (op, request, status, answer)
        return answer["result"]
