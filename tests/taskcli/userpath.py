"""A new user's set-up, for real: a git repository with a pytest suite, the CLI, `agent-task serve`.

Everything goes through the installed ``agent-task`` script in subprocesses, the way
docs/operator.md and the AGENTS.md block tell a person to do it; the service is a real
``agent-task serve`` process on an ephemeral port.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

AGENT_TASK = str(Path(sys.executable).with_name("agent-task"))
PYTHON = sys.executable
# The collector's sandbox shows only the system directories, the snapshot and a private /tmp:
# a profile that runs this virtualenv's interpreter exposes it and its base installation.
EXPOSE_PYTHON = ("--read-only-path", sys.prefix, "--read-only-path", sys.base_prefix)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=dev", "-c", "user.email=dev@example.com", *args],
        check=True,
        capture_output=True,
    )
    return done.stdout.decode().strip()


class UserPath:
    """The repository, the operator's set-up, a running service and an agent token."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.home.mkdir()
        self.repo = tmp / "calc"
        self.data = tmp / "data"
        self.state = tmp / "collector"
        self.stop_dir = tmp / "stop"
        self.secrets = tmp / "secrets"
        self.secrets.mkdir(mode=0o700)
        self.token_file = self.secrets / "agent.token"
        self.serve: subprocess.Popen[bytes] | None = None
        self.url = ""
        self._repository()

    # -- running the CLI ----------------------------------------------------------------------
    def base_env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_TASK_", "GIT_"))}
        keep.update(
            HOME=str(self.home),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            AGENT_TASK_STOP_DIR=str(self.stop_dir),
            PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        )
        return keep

    def agent_env(self) -> dict[str, str]:
        """What the AGENTS.md block tells an agent to set (no data dir: it is the service's)."""
        env = self.base_env()
        env.update(
            AGENT_TASK_URL=self.url,
            AGENT_TASK_TOKEN_FILE=str(self.token_file),
            AGENT_TASK_REPOSITORY="calc",
            AGENT_TASK_PROFILE="default",
            AGENT_TASK_COLLECTOR_DIR=str(self.state),
        )
        return env

    def run(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        cwd: Path | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [AGENT_TASK, *args],
            env=env if env is not None else self.agent_env(),
            cwd=cwd or self.repo,
            input=None if stdin is None else stdin.decode(),
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"agent-task {shlex.join(args)} exited {done.returncode}:\n"
                f"{done.stdout}\n{done.stderr}"
            )
        return done

    def json(self, *args: str, env: dict[str, str] | None = None) -> object:
        return json.loads(self.run(*args, "--json", env=env).stdout)

    def printed(self, output: str, prefix: str = "run: ") -> list[str]:
        """The command a CLI output tells the user to run (``run: ...``), as argv."""
        lines = [line for line in output.splitlines() if line.startswith(prefix)]
        assert lines, f"no {prefix!r} line in:\n{output}"
        argv = shlex.split(lines[-1][len(prefix) :])
        assert argv[0] == "agent-task", argv
        return argv[1:]

    # -- the set-up --------------------------------------------------------------------------
    def _repository(self) -> None:
        (self.repo / "tests").mkdir(parents=True)
        git(self.repo.parent, "init", "-q", "-b", "main", str(self.repo))
        (self.repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        (self.repo / "tests" / "test_calc.py").write_text(
            "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
        )
        (self.repo / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", "calc with a test")

    def operator(self, *args: str) -> object:
        return self.json("operator", *args, "--data-dir", str(self.data), env=self.base_env())

    def set_up(self) -> None:
        """docs/operator.md steps 1-5, then ``agent-task serve`` and an agent token."""
        self.operator(
            "register-repository", "--workspace", "demo", "--repository", "calc", str(self.repo)
        )
        requirement = self.operator(
            "install-requirement", "--repository", "calc", "--test-step", "tests"
        )
        assert isinstance(requirement, dict)
        self.operator(
            "register-profile",
            "--repository",
            "calc",
            "--profile",
            "default",
            "--target",
            "main",
            "--requirement",
            requirement["requirement_digest"],
        )
        env = self.base_env()
        public = self.run(
            "collector", "keygen", "--state-dir", str(self.state), env=env
        ).stdout.strip()
        self.enrollment = self.operator(
            "enroll",
            "--repository",
            "calc",
            "--step",
            "tests",
            "--registration",
            "ci",
            "--executor",
            "this-host",
            "--public-key",
            public,
        )
        self.install_profile("pytest-1")
        self.start()
        token = self.run(
            "admin",
            "token",
            "create",
            "--workspace",
            "demo",
            "--tier",
            "agent",
            "--name",
            "agent",
            "--data-dir",
            str(self.data),
            env=self.base_env(),
        ).stdout.strip()
        self.token_file.write_text(token + "\n")
        self.token_file.chmod(0o600)

    def install_profile(self, profile_id: str, *python_args: str) -> dict[str, object]:
        argv = [PYTHON, *python_args, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        out = self.operator(
            "install-collector-profile",
            "--profile-id",
            profile_id,
            "--repository",
            "calc",
            "--profile",
            "default",
            "--step",
            "tests",
            "--registration",
            "ci",
            *[item for arg in argv for item in ("--arg", arg)],
            "--allow-env",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
            "--timeout-ms",
            "120000",
            "--output-limit",
            "65536",
            *EXPOSE_PYTHON,
        )
        assert isinstance(out, dict)
        return out

    def start(self) -> None:
        log = (self.tmp / "serve.log").open("wb")
        self.serve = subprocess.Popen(
            [AGENT_TASK, "serve", "--data-dir", str(self.data), "--port", "0"],
            env=self.base_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = re.search(r"http://127\.0\.0\.1:\d+", (self.tmp / "serve.log").read_text())
            if found:
                self.url = found.group(0)
                return
            if self.serve.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(
            "agent-task serve did not start:\n" + (self.tmp / "serve.log").read_text()
        )

    def stop(self) -> None:
        if self.serve is not None and self.serve.poll() is None:
            self.serve.send_signal(signal.SIGTERM)
            try:
                self.serve.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.serve.kill()
                self.serve.wait()

    # -- the agent's side ----------------------------------------------------------------------
    def commit(self, name: str, text: str, message: str) -> None:
        path = self.repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", message)

    def qualification(self, change: str) -> dict[str, object]:
        answer = self.json("qualification", change)
        assert isinstance(answer, dict)
        return answer

    def hook(self, change: str, harness_command: str = "task-stop") -> str:
        payload = b'{"session_id":"s-' + change.encode() + b'","hook_event_name":"Stop"}'
        done = self.run(
            harness_command,
            change,
            "--endpoint",
            self.url,
            "--repository",
            "calc",
            "--profile",
            "default",
            "--token-file",
            str(self.token_file),
            "--workspace",
            str(self.repo),
            "--data-dir",
            str(self.data),
            stdin=payload,
        )
        return done.stdout.strip()
