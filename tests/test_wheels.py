"""The built files: every wheel and sdist, as a user downloads and installs them.

One module-scoped build (``uv build --all-packages``: each sdist from the tree, each wheel
from its sdist, as a release is built) feeds every check here (``.ci/run`` runs them as part
of the suite, on the clean clone). The metadata checks read the files
(tests/test_distributions.py checks the same rules on the workspace's pyprojects); the
install checks put each side into a fresh venv and use it as its users do:

* (a) ``agenttask-core`` alone: no starlette, mcp, click, uvicorn, psycopg; taskcore opens a
  journal and answers calls; a ``postgresql://`` journal is the typed error naming the extra;
  and ``python -m doctest docs/library.md`` runs there;
* (b) ``agenttask`` alone (the agent's side, at most 30 packages): ``--help``, ``call`` and a
  queue verb against the server of (c), ``gate-stop`` on a Stop payload, ``task-stop``,
  ``collect --help``; ``serve`` and ``mcp`` exit 2 with one line naming the extra;
* (c) ``agenttask[server]``: ``agent-task serve`` and ``uvicorn taskhttp.asgi:app`` both answer
  ``/v1/hub/health``.

How the venvs are built, without the workspace: ``uv venv`` from this interpreter, then ``uv
pip install --compile-bytecode`` of our wheel *files* (never a name an index could answer),
run from a directory outside the workspace, with the third-party versions constrained to
``uv.lock`` (``uv export``). It runs ``--offline`` first (after ``./dev`` synced the workspace,
every third-party wheel is in uv's cache) and only on a cold cache asks PyPI. Every program
then runs from the venv's own ``bin`` with ``-I`` (or the venv's scripts), in a directory
outside the workspace and without ``PYTHONPATH``, and each check that imports our packages
asserts they came from the venv.
"""

from __future__ import annotations

import email.message
import email.parser
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import threading
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.ci import skip_or_fail
from tests.test_distributions import DISTRIBUTIONS, ROOT, VERSION, check_requirements

UV = ROOT / ".tools" / "bin" / "uv"


@pytest.fixture(autouse=True, scope="module")
def _needs_uv() -> None:
    """Every check here builds with the pinned uv (a skip locally, a failure under CI)."""
    if not UV.exists():
        skip_or_fail("needs the pinned uv in .tools (./dev installs it on first use)")


@pytest.fixture(autouse=True)
def _both_backends() -> str:
    """Nothing here opens a journal of the test run's backend: one run."""
    return "sqlite"


def _stem(distribution: str) -> str:
    return f"{distribution.replace('-', '_')}-{VERSION}"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [str(UV), "build", "--all-packages", "-o", str(out), "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out


def _wheel(built: Path, distribution: str) -> Path:
    return built / f"{_stem(distribution)}-py3-none-any.whl"


def _sdist(built: Path, distribution: str) -> Path:
    return built / f"{_stem(distribution)}.tar.gz"


def _wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"{wheel.name.split('-py3')[0]}.dist-info/METADATA").decode()
    return email.parser.Parser().parsestr(text)


def test_every_distribution_is_built_as_a_wheel_and_an_sdist_and_nothing_else(built):
    expected = {_wheel(built, d).name for d in DISTRIBUTIONS}
    expected |= {_sdist(built, d).name for d in DISTRIBUTIONS}
    assert {p.name for p in built.iterdir() if p.name != ".gitignore"} == expected


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_the_wheel_carries_the_license_readme_and_metadata(built, distribution):
    wheel = _wheel(built, distribution)
    meta = _wheel_metadata(wheel)
    assert meta["Name"] == distribution
    assert meta["Version"] == VERSION
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().startswith(f"# {distribution}\n")
    assert meta.get_all("Classifier")
    assert {url.split(",")[0] for url in meta.get_all("Project-URL")} >= {"Homepage", "Source"}
    with zipfile.ZipFile(wheel) as archive:
        license_text = archive.read(f"{_stem(distribution)}.dist-info/licenses/LICENSE")
        package = DISTRIBUTIONS[distribution][1]
        names = archive.namelist()
    assert license_text == (ROOT / "LICENSE").read_bytes()
    assert f"{package}/__init__.py" in names
    assert f"{package}/py.typed" in names
    assert not [n for n in names if n.split("/")[0] in {"tests", "docs"}]


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_the_wheel_depends_only_on_ours_pinned_or_bounded_third_parties(built, distribution):
    requires = _wheel_metadata(_wheel(built, distribution)).get_all("Requires-Dist") or []
    assert requires
    assert check_requirements(distribution, requires, VERSION) == []


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_the_sdist_carries_the_license_readme_and_its_resolved_metadata(built, distribution):
    stem = _stem(distribution)
    with tarfile.open(_sdist(built, distribution)) as archive:
        names = set(archive.getnames())
        license_text = archive.extractfile(f"{stem}/LICENSE").read()
        pkg_info = archive.extractfile(f"{stem}/PKG-INFO").read().decode()
    assert license_text == (ROOT / "LICENSE").read_bytes()
    assert {f"{stem}/README.md", f"{stem}/pyproject.toml", f"{stem}/hatch_build.py"} <= names
    meta = email.parser.Parser().parsestr(pkg_info)
    # The version and the pinned dependencies are resolved into PKG-INFO, so the sdist builds
    # its wheel without the repository's VERSION file.
    assert meta["Version"] == VERSION
    assert check_requirements(distribution, meta.get_all("Requires-Dist") or [], VERSION) == []


def test_the_board_wheel_holds_every_template_and_static_file(built):
    package = ROOT / "packages" / "taskboard" / "src" / "taskboard"
    expected = {
        f"taskboard/{p.relative_to(package).as_posix()}"
        for p in package.rglob("*")
        if p.is_file() and p.parent.name in ("templates", "static")
    }
    assert expected
    with zipfile.ZipFile(_wheel(built, "agenttask-board")) as archive:
        assert expected <= set(archive.namelist())


# -- installs, each side in a fresh venv, from the built files ------------------------------

SERVER_ONLY = ("starlette", "uvicorn", "mcp", "jinja2", "taskhttp", "taskmcp", "taskboard")
AGENT_GOAL_PACKAGES = 30
"""docs/performance.md, "Install size per side": the agent's install, at most."""


def _clean_env(home: Path, **extra: str) -> dict[str, str]:
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("AGENT_TASK_")}
    env.update(
        AGENT_TASK_DATA_DIR=str(home / "data"),
        AGENT_TASK_GATE_INDEX=str(home / "gate-index.sqlite"),
        AGENT_TASK_STOP_DIR=str(home / "stop"),
        AGENT_TASK_COLLECTOR_DIR=str(home / "collector"),
    )
    env.update(extra)
    return env


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


class Venv:
    """A fresh venv holding one side, installed from the built wheel files."""

    def __init__(self, base: Path, name: str, requirements: list[str], constraints: Path) -> None:
        self.root = base / name
        self.home = base / f"{name}-home"
        self.home.mkdir()
        env = _clean_env(self.home)
        made = _run(
            [str(UV), "venv", "--quiet", "--python", sys.executable, str(self.root)], base, env
        )
        assert made.returncode == 0, made.stderr
        install = [str(UV), "pip", "install", "--quiet", "--compile-bytecode"]
        install += ["--python", str(self.python), "-c", str(constraints), *requirements]
        done = _run([*install, "--offline"], base, env)
        if done.returncode != 0:  # a cold cache: third-party wheels from the index
            done = _run(install, base, env)
        assert done.returncode == 0, done.stderr

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def env(self, **extra: str) -> dict[str, str]:
        return _clean_env(self.home, **extra)

    def py(self, code: str, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return _run([str(self.python), "-I", "-c", code, *args], self.home, self.env(**extra))

    def tool(
        self, name: str, *args: str, stdin: str = "", **extra: str
    ) -> subprocess.CompletedProcess[str]:
        return _run([str(self.root / "bin" / name), *args], self.home, self.env(**extra), stdin)

    def packages(self) -> list[str]:
        listed = _run(
            [str(UV), "pip", "list", "--format", "json", "--python", str(self.python)],
            self.home,
            self.env(),
        )
        assert listed.returncode == 0, listed.stderr
        return sorted(p["name"] for p in json.loads(listed.stdout))


@pytest.fixture(scope="module")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("venvs")


@pytest.fixture(scope="module")
def constraints(venvs: Path) -> Path:
    out = venvs / "constraints.txt"
    exported = _run(
        [
            *(str(UV), "export", "--frozen", "--no-hashes", "--all-packages", "--all-extras"),
            *("--no-dev", "--no-emit-workspace", "--quiet", "-o", str(out)),
        ],
        ROOT,
        dict(os.environ),
    )
    assert exported.returncode == 0, exported.stderr
    return out


@pytest.fixture(scope="module")
def core(built: Path, venvs: Path, constraints: Path) -> Venv:
    return Venv(venvs, "core", [str(_wheel(built, "agenttask-core"))], constraints)


@pytest.fixture(scope="module")
def agent(built: Path, venvs: Path, constraints: Path) -> Venv:
    wheels = [str(_wheel(built, d)) for d in ("agenttask", "agenttask-core")]
    return Venv(venvs, "agent", wheels, constraints)


@pytest.fixture(scope="module")
def server(built: Path, venvs: Path, constraints: Path) -> Venv:
    wheels = [
        str(_wheel(built, d))
        for d in ("agenttask-core", "agenttask-http", "agenttask-mcp", "agenttask-board")
    ]
    extra = f"agenttask[server] @ {_wheel(built, 'agenttask').as_uri()}"
    return Venv(venvs, "server", [extra, *wheels], constraints)


FIND = """
import importlib.util, json, sys
names = sys.argv[1].split(",")
print(json.dumps([n for n in names if importlib.util.find_spec(n) is not None]))
"""

VERSIONS = """
import importlib, importlib.metadata, json, sys
found = {}
for pair in sys.argv[1].split(","):
    dist, package = pair.split("=")
    module = importlib.import_module(package)
    found[dist] = [module.__version__, importlib.metadata.version(dist), module.__file__]
print(json.dumps(found))
"""


def _versions(venv: Venv, distributions: list[str]) -> None:
    pairs = ",".join(f"{d}={DISTRIBUTIONS[d][1]}" for d in distributions)
    done = venv.py(VERSIONS, pairs)
    assert done.returncode == 0, done.stderr
    for dist, (version, metadata, path) in json.loads(done.stdout).items():
        assert version == metadata == VERSION, dist
        assert path.startswith(str(venv.root)), path  # the wheel's copy, not the workspace's


# (a) ----------------------------------------------------------------------------------------

CORE_ABSENT = ("starlette", "mcp", "click", "uvicorn", "psycopg", "psycopg_pool", "httpx")

CORE_WORKS = """
import json, sys, tempfile
from pathlib import Path
from taskcore import Service, TaskError, Tier
from taskcore.auth import TokenAdmin
from taskcore.store import open_storage

data = Path(tempfile.mkdtemp()) / "data"
with TokenAdmin(data, create=True) as admin:
    token = admin.create(workspace="w1", tier=Tier.ADMIN, autonomy=3).token
service = Service.open(data)
created = service.call(token, "agenttask.create", {"verb": "agent.run", "payload": {"goal": "g"}}).json()
got = service.call(token, "agenttask.get", {"taskId": created["taskId"]}).json()
health = service.health()
service.close()
try:
    open_storage(data, database="postgresql://postgres@127.0.0.1:5432/postgres")
    refused = None
except TaskError as err:
    refused = err.to_json()
print(json.dumps({"status": got["status"], "backend": health["backend"], "refused": refused}))
"""


def test_a_the_core_alone_has_no_adapter_server_or_driver(core):
    done = core.py(FIND, ",".join(CORE_ABSENT))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    _versions(core, ["agenttask-core"])


def test_a_the_core_alone_opens_a_journal_answers_calls_and_names_the_postgres_extra(core):
    done = core.py(CORE_WORKS)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["status"] == "QUEUED"
    assert answer["backend"] == "sqlite"
    assert answer["refused"]["code"] == "STORAGE_UNAVAILABLE"
    assert "pip install 'agenttask-core[postgres]'" in answer["refused"]["error"]


LIBRARY_GUIDE = ROOT / "docs" / "library.md"


def test_a_the_library_guide_runs_from_the_core_wheel(core):
    """``python -m doctest docs/library.md`` in the core's venv: the guide needs nothing else."""
    done = _run(
        [str(core.python), "-I", "-m", "doctest", str(LIBRARY_GUIDE)], core.home, core.env()
    )
    assert done.returncode == 0, done.stdout + done.stderr


# (c), started first: (b) calls it ------------------------------------------------------------

LISTENING = re.compile(r"(http://127\.0\.0\.1:\d+)")


class Running:
    """A server of the server venv as a child process, until ``stop``."""

    def __init__(
        self, argv: list[str], venv: Venv, marker: str, env: dict[str, str] | None = None
    ) -> None:
        self.proc = subprocess.Popen(
            argv,
            cwd=venv.home,
            env=env or venv.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self.url = ""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            found = LISTENING.search(line)
            if marker in line and found:
                self.url = found.group(1)
                break
        if not self.url:
            self.proc.wait(60)
            raise AssertionError("".join(self.lines))
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def health(self) -> httpx.Response:
        return httpx.get(f"{self.url}/v1/hub/health", timeout=30)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        self._drain.join(timeout=10)
        return code


@pytest.fixture(scope="module")
def served(server: Venv):
    running = Running(
        [str(server.root / "bin" / "agent-task"), "serve", "--port", "0"], server, "serving"
    )
    yield running
    assert running.stop() == 0, "".join(running.lines)


def test_c_agent_task_serve_from_the_wheels_answers_health(server, served):
    answer = served.health()
    assert answer.status_code == 200
    assert answer.json()["status"] == "ok"
    _versions(server, sorted(DISTRIBUTIONS))


def test_c_uvicorn_runs_the_asgi_app_from_the_wheels(server):
    argv = [str(server.root / "bin" / "uvicorn"), "taskhttp.asgi:app", "--port", "0"]
    argv += ["--http", "taskhttp.asgi:Protocol"]
    env = server.env(AGENT_TASK_DATA_DIR=str(server.home / "asgi-data"))
    running = Running(argv, server, "Uvicorn running on", env=env)
    try:
        assert running.health().status_code == 200
        assert "agent-task admin token create" in "".join(running.lines)
    finally:
        running.stop()  # uvicorn re-raises the SIGTERM it handled gracefully
    assert "agent-task: stopped" in "".join(running.lines)


# (b) ----------------------------------------------------------------------------------------


def test_b_the_agent_side_is_small_and_has_no_server_package(agent):
    packages = agent.packages()
    assert len(packages) <= AGENT_GOAL_PACKAGES, packages
    assert not {"psycopg", "mcp", "uvicorn", "starlette", "pydantic"} & set(packages)
    done = agent.py(FIND, ",".join(SERVER_ONLY))
    assert json.loads(done.stdout) == []
    _versions(agent, ["agenttask", "agenttask-core"])


def test_b_help_and_collect_help(agent):
    top = agent.tool("agent-task", "--help")
    assert top.returncode == 0, top.stderr
    assert "serve" in top.stdout
    collect = agent.tool("agent-task", "collect", "--help")
    assert collect.returncode == 0, collect.stderr
    assert collect.stdout.startswith("Usage: agent-task collect")


@pytest.mark.parametrize("argv", [["serve", "--port", "0"], ["mcp", "--stdio"]])
def test_b_the_serving_commands_name_the_server_extra_in_one_line(agent, argv):
    done = agent.tool("agent-task", *argv)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"agent-task: '{argv[0]}' needs the server extra (")
    assert line.endswith("pip install 'agenttask[server]'")
    assert "Traceback" not in done.stderr


def test_b_call_and_a_queue_verb_reach_the_service_from_the_agent_side(agent, served, server):
    token_file = server.home / "data" / "admin.token"
    common = ["--url", served.url, "--token-file", str(token_file)]
    created = agent.tool(
        "agent-task",
        "call",
        "agenttask.create",
        "--request",
        '{"verb": "agent.run", "payload": {"goal": "from the wheel"}}',
        "--json",
        *common,
    )
    assert created.returncode == 0, created.stderr
    task_id = json.loads(created.stdout)["taskId"]
    claimed = agent.tool("agent-task", "queue", "claim-next", "--json", *common)
    assert claimed.returncode == 0, claimed.stderr
    assert json.loads(claimed.stdout)["task"]["taskId"] == task_id


def test_b_gate_stop_answers_a_stop_payload(agent):
    transcript = agent.home / "transcript.jsonl"
    transcript.write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "s1",
                "message": {"role": "user", "content": "fix the test"},
            }
        )
        + "\n"
        + json.dumps(
            {
                "type": "assistant",
                "sessionId": "s1",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            }
        )
        + "\n"
    )
    payload = {
        "session_id": "s1",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "transcript_path": str(transcript),
        "cwd": str(agent.home),
    }
    done = agent.tool(
        "agent-task", "gate-stop", "--harness", "claude-code", stdin=json.dumps(payload)
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "Stop"
    assert "done gate" in answer["hookSpecificOutput"]["additionalContext"]


def test_b_task_stop_answers_a_stop_payload_against_the_service(agent, served, server):
    workspace = agent.home / "work"
    workspace.mkdir(exist_ok=True)
    done = agent.tool(
        "agent-task",
        "task-stop",
        "c1",
        "--endpoint",
        served.url,
        "--repository",
        "r1",
        "--profile",
        "p1",
        "--token-file",
        str(server.home / "data" / "admin.token"),
        "--workspace",
        str(workspace),
        stdin='{"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": false}',
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "Stop"
    assert "not done yet" in answer["hookSpecificOutput"]["additionalContext"]
