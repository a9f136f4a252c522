"""A live service for the OAuth tests: real tokens, a real socket, the board for consent.

:class:`OAuthWorld` serves a journal over HTTP on ``127.0.0.1`` (port 0), so the issuer is
the loopback origin (no ``--public-url`` needed). Consent is given the ways a person gives
it: on the board in Chromium (:func:`consent_in_browser`), or on the host with ``agent-task
admin oauth approve`` (:func:`approve_on_host`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from taskcore import Service, Tier
from taskcore.auth import issue_token
from taskhttp import BackgroundServer, create_app

AGENT_TASK = str(Path(sys.executable).with_name("agent-task"))


class OAuthWorld:
    """The service, an admin token for the person who consents, and an agent token."""

    def __init__(self, data_dir: Path, **app: Any) -> None:
        self.data_dir = data_dir
        self.service = Service.open(data_dir)
        clock, storage = self.service.clock, self.service.storage
        self.person = issue_token(
            storage, clock, workspace="ws1", tier=Tier.ADMIN, autonomy=2, name="person"
        ).token
        self.agent = issue_token(storage, clock, workspace="ws1", tier=Tier.AGENT).token
        self.server = BackgroundServer(create_app(self.service, **app))
        self.url = self.server.start()

    def call(self, bearer: str, verb: str, body: dict[str, Any] | None = None) -> Any:
        """One call through the HTTP front door (setup and checks)."""
        response = httpx.post(
            f"{self.url}/v/{verb}",
            json=body or {},
            headers={"Authorization": f"Bearer {bearer}"},
            timeout=30,
        )
        assert response.status_code == 200, response.text
        return response.json()

    def stop(self) -> None:
        """Stop serving and close the journal."""
        self.server.stop()
        self.service.close()


def consent_url_of(authorize_url: str) -> str:
    """Follow ``/authorize`` once: the board's consent page it sends the person to."""
    response = httpx.get(authorize_url, follow_redirects=False, timeout=30)
    assert response.status_code == 302, response.text
    return response.headers["location"]


def request_id_of(consent_url: str) -> str:
    """The request id at the end of a consent page's URL."""
    return urlsplit(consent_url).path.rsplit("/", 1)[-1]


def callback_params(url: str) -> dict[str, str]:
    """The query of the redirect that completes the flow (code, state, iss or error)."""
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def approve_on_host(
    world: OAuthWorld, request_id: str, *, tier: str = "agent", autonomy: int = 1
) -> str:
    """``agent-task admin oauth approve`` on the host; return the redirect URL it printed."""
    done = subprocess.run(
        [
            AGENT_TASK,
            "admin",
            "oauth",
            "approve",
            request_id,
            "--workspace",
            "ws1",
            "--tier",
            tier,
            "--autonomy",
            str(autonomy),
            "--data-dir",
            str(world.data_dir),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["redirect_to"])


def consent_in_browser(
    page: Any, world: OAuthWorld, consent_url: str, *, tier: str = "agent", autonomy: int = 1
) -> str:
    """Sign in on the board (it returns to the consent page), approve; return the redirect.

    The browser follows the redirect to the client's URI (a client's own callback listener
    completes its flow from there; where none listens the navigation just fails); the test
    reads where it went from the browser's requests.
    """
    seen: list[str] = []
    target = urlsplit(world.url)

    def note(request: Any) -> None:
        if urlsplit(request.url).netloc != target.netloc:
            seen.append(request.url)

    page.on("request", note)
    page.goto(consent_url)
    page.wait_for_url("**/board/login**")
    page.fill("#token", world.person)
    page.click("button[type=submit]")
    page.wait_for_selector("#consent")
    page.select_option("#tier", tier)
    page.select_option("#autonomy", str(autonomy))
    page.click("button.approve")
    page.wait_for_timeout(200)
    for _ in range(100):
        if seen:
            break
        page.wait_for_timeout(100)
    assert seen, "the approval did not send the browser to the client"
    return seen[0]


class ConsentDesk:
    """Hands authorization URLs from a client's thread to the test's thread and back.

    The SDK clients run their event loop in a thread of their own; Playwright's sync API
    belongs to the test's thread. The client's redirect handler :meth:`ask` s with the
    authorization URL and waits; the test :meth:`next_request` s it, gives consent the way
    the test chose, and :meth:`answer` s with the redirect URL the person's browser was sent to.
    """

    def __init__(self) -> None:
        import queue

        self.requests: queue.Queue[str] = queue.Queue()
        self.answers: queue.Queue[str] = queue.Queue()

    def ask(self, authorize_url: str) -> str:
        """(client thread) Hand over the authorization URL; wait for the redirect URL."""
        self.requests.put(authorize_url)
        return self.answers.get(timeout=120)

    def next_request(self, timeout: float = 60) -> str:
        """(test thread) The next authorization URL a client opened."""
        return self.requests.get(timeout=timeout)

    def answer(self, redirect_url: str) -> None:
        """(test thread) Where the person's browser was sent after consent."""
        self.answers.put(redirect_url)
