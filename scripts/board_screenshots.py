"""Take the README's screenshots of the operator board (docs/board/*.png).

Run from the checkout: ``./dev run .venv/bin/python scripts/board_screenshots.py``. It builds
a throwaway service with a real git repository, a failed and a passing collection, queued,
leased and escalated tasks, then drives Debian's Chromium (``/usr/bin/chromium`` or
``$AGENT_TASK_CHROMIUM``) through the board and saves one PNG per main page. The data is
made up; nothing outside a temporary directory is touched but ``docs/board/``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402
from taskcore.actors import Tier  # noqa: E402
from taskcore.auth import issue_token  # noqa: E402
from taskcore.collector.state import CollectorState  # noqa: E402
from taskhttp import BackgroundServer, create_app  # noqa: E402

from tests.taskcore.collector.conftest import Authority, commit_file, git, recipe  # noqa: E402
from tests.taskcore.evidence.flow import Flow  # noqa: E402

OUT = ROOT / "docs" / "board"
CHROMIUM = os.environ.get("AGENT_TASK_CHROMIUM", "/usr/bin/chromium")


def _repo(tmp: Path) -> Path:
    path = tmp / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "one")
    return path


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    state = CollectorState.open(tmp / "state" / "collector", create=True)
    state.generate_key()
    repo = _repo(tmp)
    authority = Authority(tmp / "data", repo, state.load_key().public_key)
    script = "echo 'collected 42 items'; echo 'FAILED tests/test_api.py::test_limits - assert 413 == 200' >&2; exit 1"
    flow = Flow(authority, state, tmp, command=recipe(script))
    flow.run_to_receipt()  # a failed collection: the subject shows the failure excerpt
    commit_file(repo, "README.md", "two\n")
    flow.checkpoint()
    service, clock = flow.service, flow.clock
    admin = issue_token(service.storage, clock, workspace="w1", tier=Tier.ADMIN, autonomy=3, name="operator").token
    agent = issue_token(service.storage, clock, workspace="w1", tier=Tier.AGENT, autonomy=1, name="claude-1").token
    issue_token(service.storage, clock, workspace="w1", tier=Tier.MEMBER, autonomy=2, name="reviewer")

    def call(token: str, verb: str, body: dict) -> dict:
        return service.call(token, verb, body).json()

    call(admin, "agenttask.verb.register", {"verb": "docs.write", "description": "write docs"})
    for i, (verb, title) in enumerate(
        [
            ("agent.run", "Fix flaky test_upload_retry"),
            ("agent.run", "Bump httpx and re-run the suite"),
            ("docs.write", "Document the retention sweep"),
            ("agent.run", "Triage <script>alert('x')</script> in issue #88"),
            ("agent.run", "Migrate CI to the new runner"),
        ]
    ):
        task = call(admin, "agenttask.create", {"verb": verb, "payload": {"title": title}})
        clock.advance(60_000)
        if i == 1:
            call(admin, "agenttask.reorder", {"taskId": task["taskId"], "priority": 5})
        if i == 4:
            call(admin, "agenttask.reorder", {"taskId": task["taskId"], "priority": 2})
    leased = call(admin, "agenttask.create", {"verb": "agent.run", "payload": {"title": "Refactor the lease guard"}})
    claim = call(agent, "agenttask.claim", {"taskId": leased["taskId"]})
    risky = call(admin, "agenttask.create", {"verb": "agent.run", "payload": {"title": "Roll out release 2.4"}})
    claimed = call(agent, "agenttask.claim", {"taskId": risky["taskId"]})
    call(
        agent,
        "agenttask.escalate",
        {
            "taskId": risky["taskId"],
            "targetVerb": "deploy.production",
            "inputHash": "9f2c" * 16,
            "reason": "The release needs a production deploy, above my autonomy.",
            "fence": claimed["lease"]["fence"],
        },
    )
    call(
        agent,
        "agenttask.checkpoint.write",
        {"taskId": leased["taskId"], "phaseKey": "plan", "state": {"steps": ["read", "change", "test"]}, "outputs": [], "fence": claim["lease"]["fence"]},
    )
    OUT.mkdir(parents=True, exist_ok=True)
    with BackgroundServer(create_app(service)) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1360, "height": 860})
        page.goto(f"{url}/board/login")
        page.screenshot(path=str(OUT / "login.png"))
        page.fill("#token", admin)
        page.click("button[type=submit]")
        page.wait_for_url("**/board/queue")
        shots = [
            ("queue.png", "/board/queue"),
            ("approvals.png", "/board/approvals"),
            ("task.png", f"/board/tasks/{leased['taskId']}"),
            ("changes.png", "/board/changes?repository=acme"),
            ("subject.png", "/board/subject?repository=acme&seq=1"),
            ("audit.png", "/board/audit"),
            ("tokens.png", "/board/tokens"),
        ]
        for name, path in shots:
            page.goto(url + path)
            page.screenshot(path=str(OUT / name), full_page=name in ("task.png", "subject.png"))
            print("saved", OUT / name)
        browser.close()
    service.close()
    authority.storage.close()


if __name__ == "__main__":
    main()
