"""An MCP tool call with an OAuth access token against the same call with a bearer token.

One live server (``BackgroundServer`` on 127.0.0.1, a fresh SQLite journal), one kept-alive
client; rounds alternate between the two credentials so both see the same machine. Each
round sends ``--calls`` ``tools/call observe_whoami`` requests to ``/mcp``. The OAuth token
comes from the real flow (``/register``, ``/authorize``, the consent operation, ``/token``).
Reports the median seconds per call of each and their ratio (OAuth / bearer).

    .venv/bin/python benchmarks/bench_oauth.py --rounds 9 --calls 200
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from taskcore import Service, Tier
from taskcore.auth import issue_token
from taskhttp import BackgroundServer, create_app

CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "observe_whoami", "arguments": {}},
}


def _oauth_token(url: str, person: str) -> str:
    client = httpx.post(
        url + "/register",
        json={"client_name": "bench", "redirect_uris": ["http://127.0.0.1:9/cb"]},
        timeout=30,
    ).json()
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode()
    consent = httpx.get(
        url + "/authorize",
        params={
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": "http://127.0.0.1:9/cb",
            "code_challenge": challenge.rstrip("="),
            "code_challenge_method": "S256",
            "resource": url + "/mcp",
        },
        timeout=30,
    ).headers["location"]
    decided = httpx.post(
        url + "/v/oauth.request.approve",
        json={"requestId": consent.rsplit("/", 1)[1], "tier": "agent", "autonomy": 1},
        headers={"Authorization": f"Bearer {person}"},
        timeout=30,
    ).json()
    code = httpx.URL(decided["redirectTo"]).params["code"]
    return str(
        httpx.post(
            url + "/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": "http://127.0.0.1:9/cb",
                "client_id": client["client_id"],
                "client_secret": client["client_secret"],
                "code_verifier": verifier,
            },
            timeout=30,
        ).json()["access_token"]
    )


def _round(http: httpx.Client, url: str, bearer: str, calls: int) -> float:
    headers = {
        "Authorization": f"Bearer {bearer}",
        "Accept": "application/json, text/event-stream",
    }
    started = time.perf_counter()
    for _ in range(calls):
        answer = http.post(url + "/mcp", json=CALL, headers=headers)
        assert answer.status_code == 200, answer.text
    return (time.perf_counter() - started) / calls


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    service = Service.open(Path(tempfile.mkdtemp()) / "data")
    person = issue_token(service.storage, service.clock, workspace="w", tier=Tier.ADMIN, autonomy=2)
    agent = issue_token(service.storage, service.clock, workspace="w", tier=Tier.AGENT, autonomy=1)
    with BackgroundServer(create_app(service)) as url, httpx.Client(timeout=30) as http:
        oauth = _oauth_token(url, person.token)
        _round(http, url, agent.token, 20)  # warm up both paths
        _round(http, url, oauth, 20)
        bearer_s, oauth_s = [], []
        for _ in range(args.rounds):
            bearer_s.append(_round(http, url, agent.token, args.calls))
            oauth_s.append(_round(http, url, oauth, args.calls))
    service.close()
    b, o = statistics.median(bearer_s), statistics.median(oauth_s)
    print(f"bearer token: {b * 1000:.2f} ms per MCP tool call (median of {args.rounds} rounds)")
    print(f"OAuth token:  {o * 1000:.2f} ms per MCP tool call")
    print(f"ratio OAuth/bearer: {o / b:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
