"""A new user's path through docs/operator.md and the AGENTS.md block, for real (issue 11).

A git repository with a small pytest suite, the operator's set-up through the CLI, a real
``agent-task serve`` process, and the agent's commands with only the environment the
instructions list. Each test walks one thing a user hit and follows the command the tool
printed.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.taskcli.userpath import AGENT_TASK, EXPOSE_PYTHON, UserPath, git


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    """This module's service lives for the module: its backend does too (the service's
    fixture depends on this one, so it is made again for each backend)."""
    return module_backend


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory, _both_backends: str):
    path = UserPath(tmp_path_factory.mktemp("user-path"))
    path.set_up()
    yield path
    path.stop()


def _block(hook_stdout: str) -> tuple[str, dict[str, object]]:
    text = json.loads(hook_stdout)["hookSpecificOutput"]["additionalContext"]
    return text, json.loads(text.rsplit("\n", 1)[1])


# -- 1. a failed collect never strands a Change ---------------------------------------------------


def test_collect_without_the_service_data_dir_claims_nothing_and_names_the_dir(user):
    user.run("checkpoint", "no-data-dir")
    done = user.run("collect", "no-data-dir", check=False)
    assert done.returncode != 0
    default = user.home / ".local" / "share" / "agent-task"
    assert str(default) in done.stderr
    assert "Nothing was claimed" in done.stderr
    answer = user.qualification("no-data-dir")
    assert answer["next"]["operation"] == "collector_claim"
    assert answer["failures"] == []
    out = user.run("collect", "no-data-dir", "--data-dir", str(user.data))
    assert "qualified: true" in out.stdout
    assert "claimed attempt a-" in out.stderr


def test_a_collection_that_died_is_recovered_with_the_printed_commands(user):
    user.commit(
        "tests/test_slow.py", "import time\n\n\ndef test_slow():\n    time.sleep(4)\n", "slow"
    )
    user.run("checkpoint", "died")
    env = user.agent_env()
    env["AGENT_TASK_DATA_DIR"] = str(user.data)
    collect = subprocess.Popen(
        [AGENT_TASK, "collect", "died", "--lease-ms", "1000"],
        env=env,
        cwd=user.repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert collect.stderr is not None
    for line in collect.stderr:
        if "running..." in line:
            break
    collect.send_signal(signal.SIGKILL)  # the collector dies holding the attempt
    collect.wait()
    held = user.run("qualification", "died", check=False)
    status = user.json("collector", "status")
    assert isinstance(status, dict)
    [died] = [row for row in status["attempts"] if row.get("change_id") == "died"]
    assert (died["state"], died["reserved"], died["signed"]) == ("claimed", True, False)
    # the killed attempt is listed once (its retained directory is on its claim's row)
    assert [r["attempt_id"] for r in status["attempts"]].count(died["attempt_id"]) == 1
    assert all(r["state"] != "uncertain" for r in status["attempts"])
    time.sleep(2.5)  # the 1 s lease runs out without renewal
    stuck = user.run("qualification", "died", check=False)
    assert stuck.returncode == 1  # not qualified
    assert "next: reconcile" in stuck.stdout, held.stdout + stuck.stdout
    reconcile = user.printed(stuck.stdout)
    assert reconcile[:2] == ["reconcile", "died"]
    done = user.run(*reconcile)
    assert "reconciled: attempt a-" in done.stdout
    after = user.json("collector", "status")["attempts"]
    assert [r["attempt_id"] for r in after].count(died["attempt_id"]) == 1
    assert all(r["state"] != "uncertain" for r in after)  # reconcile leaves no extra row
    collect_again = user.printed(done.stdout)
    assert collect_again[:2] == ["collect", "died"]
    out = user.run(*collect_again, env=env)
    assert "qualified: true" in out.stdout
    git(user.repo, "rm", "-q", "tests/test_slow.py")
    git(user.repo, "commit", "-qm", "no slow test")


# -- 2 and 3. a failed run says why, and is collected again on the same revision ------------------


def test_a_broken_profile_says_why_and_the_same_revision_is_collected_again(user):
    env = user.agent_env()
    env["AGENT_TASK_DATA_DIR"] = str(user.data)
    # The operator pins an interpreter that has no pytest (-S: no site-packages).
    broken = user.install_profile("pytest-broken", "-S")
    assert json.loads(broken["profile"]["profile"])["recipe"]["argv"][1] == "-S"
    user.run("checkpoint", "retry-me")
    out = user.run("collect", "retry-me", env=env)
    assert "collected: failed" in out.stdout
    assert "No module named pytest" in out.stdout
    answer = user.qualification("retry-me")
    [run] = answer["run_failures"]
    assert "No module named pytest" in run["stderr_tail"]
    assert run["exit_status"] == 1
    shown = user.run("qualification", "retry-me", check=False)
    assert shown.returncode == 1  # not qualified
    assert "No module named pytest" in shown.stdout
    text, feedback = _block(user.hook("retry-me"))
    assert "No module named pytest" in text
    assert "Nothing you can run" not in text
    assert feedback["run_failures"][0]["stderr_tail"] == run["stderr_tail"]
    # The operator fixes the profile; checkpointing the same commit is 'unchanged' ...
    user.install_profile("pytest-fixed")
    again = user.run("checkpoint", "retry-me")
    assert again.stdout.startswith("unchanged")
    assert "--retry" in again.stdout
    # ... and qualification names the one command that retries the same revision.
    q = user.run("qualification", "retry-me", check=False).stdout
    retry = user.printed(q)
    assert retry[:3] == ["checkpoint", "retry-me", "--retry"]
    recorded = user.run(*retry)
    assert recorded.stdout.startswith("recorded")
    collect = user.printed(user.run("qualification", "retry-me", check=False).stdout)
    final = user.run(*collect, env=env)
    assert "collected: passed" in final.stdout
    assert "qualified: true" in final.stdout
    assert user.hook("retry-me") == ""


def test_operator_show_names_what_argv0_resolves_to(user):
    shown = user.operator("show", "--repository", "calc")
    assert isinstance(shown, dict)
    current = [p for p in shown["collector_profiles"] if p["superseded_at_ms"] is None]
    assert "python" in json.loads(current[0]["profile"])["recipe"]["argv"][0]
    # The readable answer says what that argv[0] resolves to on this host, probed now.
    text = user.run(
        "operator",
        "show",
        "--repository",
        "calc",
        "--data-dir",
        str(user.data),
        env=user.base_env(),
    ).stdout
    resolved = re.findall(
        r"^(\S+): the command's argv\[0\] .* resolves here to '([^']+)'", text, re.M
    )
    assert current[0]["profile_id"] in dict(resolved)
    assert Path(dict(resolved)[current[0]["profile_id"]]).is_absolute()


# -- 4. stop hooks name what blocks ---------------------------------------------------------------


def test_install_stop_as_documented_and_a_block_that_names_the_dirty_paths(user):
    settings = user.repo / ".claude" / "settings.json"
    inside = user.run(
        "install-stop",
        "hooked",
        "--harness",
        "claude-code",
        "--settings",
        str(settings),
        "--endpoint",
        user.url,
        "--repository",
        "calc",
        "--profile",
        "default",
        "--token-file",
        str(user.repo / "agent.token"),
        "--workspace",
        str(user.repo),
        "--data-dir",
        str(user.data),
        check=False,
    )
    assert inside.returncode != 0
    assert "inside the work tree" in inside.stderr
    installed = user.run(
        "install-stop",
        "hooked",
        "--harness",
        "claude-code",
        "--settings",
        str(settings),
        "--endpoint",
        user.url,
        "--repository",
        "calc",
        "--profile",
        "default",
        "--token-file",
        str(user.token_file),
        "--workspace",
        str(user.repo),
        "--data-dir",
        str(user.data),
    )
    assert "commit .claude/settings.json" in installed.stdout
    command = json.loads(settings.read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    text, feedback = _block(
        user.run(*command.split()[1:], stdin=b'{"session_id":"s-hooked"}').stdout
    )
    assert feedback["next"] == {"operation": "checkpoint"}
    assert feedback["dirty_paths"] == [".claude/settings.json"]
    assert "Uncommitted: .claude/settings.json" in text
    assert feedback["command"].startswith("agent-task checkpoint hooked --url ")
    git(user.repo, "add", ".claude/settings.json")
    git(user.repo, "commit", "-qm", "the task-stop hook")
    text, feedback = _block(user.hook("hooked"))
    assert feedback["next"] == {"operation": "checkpoint"}
    assert "dirty_paths" not in feedback
    user.run("checkpoint", "hooked")
    text, feedback = _block(user.hook("hooked"))
    assert feedback["next"]["operation"] == "collector_claim"
    collect = feedback["command"].split()[1:]
    assert collect[:2] == ["collect", "hooked"]
    env = user.agent_env()
    env["AGENT_TASK_DATA_DIR"] = str(user.data)
    user.run(*collect, env=env)
    assert user.hook("hooked") == ""


# -- 5. a collector on another machine: only a clone, a token and its own key ---------------------


def test_a_remote_collector_with_only_a_clone_qualifies_a_change(user, tmp_path):
    laptop = tmp_path / "laptop"
    (laptop / "home").mkdir(parents=True)
    clone = laptop / "calc"
    git(tmp_path, "clone", "-q", str(user.repo), str(clone))
    state = laptop / "collector"
    env = user.agent_env()
    env.update(
        HOME=str(laptop / "home"),
        XDG_DATA_HOME=str(laptop / "home" / ".local" / "share"),
        AGENT_TASK_COLLECTOR_DIR=str(state),
    )
    assert "AGENT_TASK_DATA_DIR" not in env
    public = user.run("collector", "keygen", env=env).stdout.strip()
    enrolled = user.run(
        "operator",
        "enroll",
        "--repository",
        "calc",
        "--step",
        "tests",
        "--registration",
        "laptop",
        "--executor",
        "laptop-1",
        "--public-key",
        public,
        "--data-dir",
        str(user.data),
        env=user.base_env(),
    ).stdout
    recipe = ["--arg", user_python(), "--arg", "-m", "--arg", "pytest", "--arg", "-q"]
    recipe += ["--arg", "-p", "--arg", "no:cacheprovider"]
    limits = ["--allow-env", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "--timeout-ms", "120000"]
    limits += ["--output-limit", "65536", *EXPOSE_PYTHON]
    probe = user.json("collector", "runtime-probe", *recipe, *limits, env=env)
    assert isinstance(probe, dict)
    user.operator(
        "install-collector-profile",
        "--profile-id",
        "pytest-laptop",
        "--repository",
        "calc",
        "--profile",
        "default",
        "--step",
        "tests",
        "--registration",
        "laptop",
        *recipe,
        *limits,
        "--runtime-identity",
        probe["runtime_identity_sha256"],
    )
    pin = user.printed(enrolled, "on a remote collector: ")
    assert pin[:2] == ["collector", "pin-authority"]
    user.run(*pin, env=env)
    # The agent commits and checkpoints on the service host's work tree ...
    user.commit(
        "tests/test_more.py",
        "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
        "more",
    )
    user.run("checkpoint", "remote-work")
    # ... the laptop's clone does not have that commit yet: nothing is claimed.
    early = user.run("collect", "remote-work", "--clone", str(clone), env=env, check=False)
    assert early.returncode != 0
    assert "git fetch" in early.stderr
    assert "Nothing was claimed" in early.stderr
    assert user.qualification("remote-work")["next"]["operation"] == "collector_claim"
    git(clone, "pull", "-q", "--ff-only")
    out = user.run("collect", "remote-work", "--clone", str(clone), env=env)
    assert "collected: passed" in out.stdout
    assert "qualified: true" in out.stdout
    answer = user.qualification("remote-work")
    assert answer["qualified"] is True
    assert not (laptop / "home" / ".local" / "share" / "agent-task" / "journal.sqlite").exists()
    # Same-host collection again for the tests after this one.
    user.install_profile("pytest-same-host")


def user_python() -> str:
    from tests.taskcli.userpath import PYTHON

    return PYTHON


# -- 6. smaller things a new user hit ---------------------------------------------------------------


def test_an_unknown_profile_points_to_operator_show_and_claim_next_help_says_priority(user):
    env = user.agent_env()
    env["AGENT_TASK_PROFILE"] = "no-such-profile"
    done = user.run("qualification", "anything", env=env, check=False)
    assert done.returncode == 5
    assert "agent-task operator show" in done.stderr
    assert "'agent-task admin'" not in done.stderr
    helped = user.run("queue", "claim-next", "--help").stdout
    assert "highest priority first" in " ".join(helped.split())


# -- 6. OWNER/NAME repository IDs everywhere --------------------------------------------------------


def test_an_owner_name_repository_is_registered_collected_and_qualified(user):
    user.operator(
        "register-repository", "--workspace", "demo", "--repository", "acme/calc", str(user.repo)
    )
    requirement = user.operator(
        "install-requirement", "--repository", "acme/calc", "--test-step", "tests"
    )
    assert isinstance(requirement, dict)
    user.operator(
        "register-profile",
        "--repository",
        "acme/calc",
        "--profile",
        "default",
        "--target",
        "main",
        "--requirement",
        requirement["requirement_digest"],
    )
    public = user.json("collector", "keygen", "--state-dir", str(user.tmp / "acme-collector"))
    assert isinstance(public, dict)
    user.operator(
        "enroll",
        "--repository",
        "acme/calc",
        "--step",
        "tests",
        "--registration",
        "acme-ci",
        "--executor",
        "this-host",
        "--public-key",
        public["public_key"],
    )
    user.operator(
        "install-collector-profile",
        "--profile-id",
        "acme-pytest",
        "--repository",
        "acme/calc",
        "--profile",
        "default",
        "--step",
        "tests",
        "--registration",
        "acme-ci",
        "--arg",
        "/bin/sh",
        "--arg",
        "-c",
        "--arg",
        "test -f calc.py",
    )
    env = user.agent_env()
    env.update(
        AGENT_TASK_REPOSITORY="acme/calc",
        AGENT_TASK_COLLECTOR_DIR=str(user.tmp / "acme-collector"),
        AGENT_TASK_DATA_DIR=str(user.data),
    )
    user.run("checkpoint", "owner-name", env=env)
    out = user.run("collect", "owner-name", env=env)
    assert "qualified: true" in out.stdout
    answer = json.loads(user.run("qualification", "owner-name", "--json", env=env).stdout)
    assert answer["qualified"] is True
