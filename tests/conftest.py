"""The ``backend`` fixture: suites that touch the journal run on SQLite and on PostgreSQL.

A directory opts in with an autouse fixture that asks for ``backend`` (see
``tests/taskcore/store/conftest.py``); each of its tests then runs twice, ``[sqlite]`` and
``[postgresql]``. On PostgreSQL the test sees ``AGENT_TASK_DATABASE`` pointing at this
session's own database (so ``open_storage``, ``Service.open`` and every ``agent-task`` process
the test starts use it), emptied before the test.

The server is ``$AGENT_TASK_TEST_POSTGRES`` (a libpq URL of a database to connect to for
creating ours; default ``postgresql://postgres@127.0.0.1:5432/postgres``). This session
creates ``agent_task_test_<worker>_<pid>`` there (``<worker>`` is pytest-xdist's
``PYTEST_XDIST_WORKER``, ``main`` without it) and drops it at the end. If the server cannot
be reached the PostgreSQL tests fail under CI (:func:`tests.ci.in_ci`, the one rule; or with
``--require-postgres``), and are skipped with the reason otherwise; they are never skipped
silently in CI.

A test that only makes sense on one backend says so with
``@pytest.mark.backend_only("sqlite", reason=...)``.

The Hypothesis profiles: two instead of per-test ``max_examples``:

* ``ci`` (chosen under CI, :func:`tests.ci.in_ci`, as ``.ci/run`` runs): derandomized, so a CI run is
  reproducible and a failure reproduces locally with ``HYPOTHESIS_PROFILE=ci``; 100 examples;
  no example database; no deadline (a shared CI machine is not a timing instrument).
* ``dev`` (the default elsewhere): random, 50 examples, no deadline, the local example
  database (failures are replayed first on the next run).

``HYPOTHESIS_PROFILE`` picks one explicitly. The few tests whose single example is expensive
(a live server, a state machine, a whole contract type tree) keep their own smaller
``max_examples`` beside the test, saying why.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from hypothesis import HealthCheck, settings

from tests.ci import in_ci

SERVER_ENV = "AGENT_TASK_TEST_POSTGRES"
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
BACKENDS = ("sqlite", "postgresql")

# Tables kept by the per-test reset: the schema record and the authority's audience.
_KEEP = ("schema_versions", "collector_meta")


settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=100,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if in_ci() else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--require-postgres",
        action="store_true",
        default=False,
        help="fail (never skip) the PostgreSQL tests when no server answers (CI sets CI=1)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "backend_only(name, reason): the test runs on that backend only, for the reason given",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a test marked ``backend_only`` on the other backend (either fixture's param)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    _skip_other_backend(item, params.get("backend", params.get("module_backend")))


def _required(config: pytest.Config) -> bool:
    return bool(config.getoption("--require-postgres")) or in_ci()


def _with_db(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


class PostgresServer:
    """This session's test database on the server (created on first use, dropped at exit)."""

    def __init__(self, admin_url: str, name: str) -> None:
        self.admin_url = admin_url
        self.name = name
        self.url = _with_db(admin_url, name)
        self.error: str | None = None
        self.created = False

    def create(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
                conn.execute(f"CREATE DATABASE \"{self.name}\" ENCODING 'UTF8' TEMPLATE template0")
        except psycopg.Error as exc:
            self.error = f"PostgreSQL at {self.admin_url} is not reachable: {exc}"
            return
        self.created = True

    def drop(self) -> None:
        if not self.created:
            return
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def reset(self) -> None:
        """Empty every table this release created (the schema stays)."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            # A test that changed the recorded versions must put them back; if one did not,
            # start the next test from an empty schema (its open migrates it) rather than
            # failing every later test for it.
            from taskcore.store.postgres.migrations import COMPONENTS, schema_versions

            versions = schema_versions(conn)
            if versions and versions != {c.name: c.latest for c in COMPONENTS}:
                conn.execute("DROP SCHEMA public CASCADE")
                conn.execute("CREATE SCHEMA public")
                return
            rows = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
            names = [r[0] for r in rows if r[0] not in _KEEP]
            if not names:
                return
            # TRUNCATE gives every table it names (and, with CASCADE, every table referring to
            # one) new files: about 130 ms for the whole schema, per test. A test writes to a
            # few small tables: find those that hold a row (one statement) and DELETE their
            # rows, referring tables first; then restart every sequence a test used. The same
            # end state as truncating everything with RESTART IDENTITY.
            probe = " UNION ALL ".join(
                f'SELECT {_literal(n)} WHERE EXISTS (SELECT 1 FROM "{n}")' for n in names
            )
            full = {r[0] for r in conn.execute(probe).fetchall()}
            if full:
                with conn.transaction():
                    for name in _referring_first(conn, names):
                        if name in full:
                            conn.execute(f'DELETE FROM "{name}"')
            # setval, unlike ALTER SEQUENCE ... RESTART, writes no new file.
            conn.execute(
                "SELECT setval(format('%I.%I', schemaname, sequencename)::regclass,"
                " start_value, false) FROM pg_sequences"
                " WHERE schemaname = 'public' AND last_value IS NOT NULL"
            )


def _referring_first(conn: Any, names: list[str]) -> list[str]:
    """``names`` ordered so that a table comes before every table its foreign keys name."""
    edges = conn.execute(
        "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c"
        " JOIN pg_namespace n ON n.oid = c.connamespace"
        " WHERE c.contype = 'f' AND n.nspname = 'public'"
    ).fetchall()
    refers: dict[str, set[str]] = {n: set() for n in names}
    for referring, referred in edges:
        referring, referred = referring.strip('"'), referred.strip('"')
        if referring != referred and referring in refers:
            refers[referring].add(referred)
    placed: set[str] = set()
    referred_first: list[str] = []  # every table after the tables it refers to

    def visit(name: str, trail: frozenset[str]) -> None:
        if name in placed or name in trail:
            return
        for target in sorted(refers.get(name, ())):
            visit(target, trail | {name})
        placed.add(name)
        referred_first.append(name)

    for name in sorted(names):
        visit(name, frozenset())
    return list(reversed(referred_first))


def _literal(name: str) -> str:
    """A table name as an SQL string literal (names come from pg_tables, never from a test)."""
    return "'" + name.replace("'", "''") + "'"


def _skip_other_backend(node: pytest.Item | pytest.Collector, active: str | None) -> None:
    """Skip, saying why, a test marked ``backend_only`` for the other backend."""
    marker = node.get_closest_marker("backend_only")
    if marker is not None and active is not None and active != marker.args[0]:
        pytest.skip(f"{marker.args[0]} only: {marker.kwargs.get('reason', '')}")


def _need_server(config: pytest.Config, server: PostgresServer) -> None:
    """Fail (under CI or --require-postgres) or skip, saying how to fix it, without a server."""
    if server.error is not None:
        message = f"{server.error}. Start it (.ci/postgres) or point {SERVER_ENV} at a server"
        if _required(config):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def postgres_server(request: pytest.FixtureRequest) -> Iterator[PostgresServer]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"agent_task_test_{worker}_{os.getpid()}"
    server = PostgresServer(os.environ.get(SERVER_ENV, DEFAULT_SERVER), name)
    server.create()
    yield server
    server.drop()


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest, postgres_server: PostgresServer) -> str:
    """The URL of this session's emptied test database (fails or skips when unreachable)."""
    _need_server(request.config, postgres_server)
    postgres_server.reset()
    return postgres_server.url


@pytest.fixture(scope="module", params=BACKENDS)
def module_backend(
    request: pytest.FixtureRequest, postgres_server: PostgresServer
) -> Iterator[str]:
    """``backend`` for suites whose fixtures live for a module (a running service).

    On PostgreSQL the database is emptied when the module starts and shared by its tests, as
    the module's SQLite data dir is.
    """
    name = str(request.param)
    _skip_other_backend(request.node, name)
    with pytest.MonkeyPatch.context() as patch:
        if name == "postgresql":
            _need_server(request.config, postgres_server)
            postgres_server.reset()
            patch.setenv("AGENT_TASK_DATABASE", postgres_server.url)
        else:
            patch.delenv("AGENT_TASK_DATABASE", raising=False)
        yield name


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``"sqlite"`` or ``"postgresql"``; on PostgreSQL ``AGENT_TASK_DATABASE`` is set."""
    name = str(request.param)
    _skip_other_backend(request.node, name)
    if name == "postgresql":
        url = request.getfixturevalue("postgres_url")
        monkeypatch.setenv("AGENT_TASK_DATABASE", url)
    else:
        monkeypatch.delenv("AGENT_TASK_DATABASE", raising=False)
    return name
