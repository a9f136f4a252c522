"""``agent-task admin oauth pending|approve|deny|list|revoke`` on a real journal."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

from taskcore import Service
from taskcore.oauth.server import OAuthServer

from tests.taskcli.frontdoor import agent_task


def _pending_request(data_dir, name="Claude Desktop"):
    service = Service.open(data_dir)
    try:
        server = OAuthServer(service)
        client = server.register(
            {"client_name": name, "redirect_uris": ["http://127.0.0.1:9/cb"]},
            client_id="client-" + name.replace(" ", "-"),
            secret=None,
        )
        return server.begin(
            client,
            redirect_uri="http://127.0.0.1:9/cb",
            explicit=True,
            scopes=None,
            resource=None,
            resources=("http://127.0.0.1:8787", "http://127.0.0.1:8787/mcp"),
            issuer="http://127.0.0.1:8787",
            code_challenge="c" * 43,
            state="s",
        )
    finally:
        service.close()


def _cli(*args, data_dir):
    return agent_task("admin", "oauth", *args, "--data-dir", str(data_dir))


def test_pending_lists_the_request_and_approve_prints_the_url_that_finishes_the_flow(tmp_path):
    request = _pending_request(tmp_path)
    listed = _cli("pending", data_dir=tmp_path)
    assert listed.exit_code == 0
    assert request.request_id in listed.stdout
    assert "Claude Desktop" in listed.stdout
    approved = _cli(
        "approve",
        request.request_id,
        "--workspace",
        "w1",
        "--autonomy",
        "1",
        "--json",
        data_dir=tmp_path,
    )
    assert approved.exit_code == 0, approved.stderr
    answer = json.loads(approved.stdout)
    query = parse_qs(urlsplit(answer["redirect_to"]).query)
    assert query["code"][0].startswith("atc_")
    assert query["state"] == ["s"]
    assert query["iss"] == ["http://127.0.0.1:8787"]
    assert answer["workspace"] == "w1"
    assert "no OAuth" not in _cli("pending", data_dir=tmp_path).stdout
    assert request.request_id not in _cli("pending", data_dir=tmp_path).stdout
    grants = _cli("list", data_dir=tmp_path)
    assert answer["grant_id"] in grants.stdout
    revoked = _cli("revoke", answer["grant_id"], data_dir=tmp_path)
    assert revoked.exit_code == 0
    assert revoked.stdout.strip() == f"revoked {answer['grant_id']}"
    again = _cli("revoke", answer["grant_id"], data_dir=tmp_path)
    assert "already revoked" in again.stdout


def test_deny_tells_the_client_and_a_decided_request_cannot_be_approved(tmp_path):
    request = _pending_request(tmp_path, "Inspector")
    denied = _cli("deny", request.request_id, data_dir=tmp_path)
    assert denied.exit_code == 0
    assert "error=access_denied" in denied.stdout
    late = _cli("approve", request.request_id, "--workspace", "w1", data_dir=tmp_path)
    assert late.exit_code != 0
    assert "already denied" in late.stderr


def test_a_malformed_request_id_is_refused_before_anything_is_written(tmp_path):
    _pending_request(tmp_path)
    refused = _cli("approve", "not-an-id", "--workspace", "w1", data_dir=tmp_path)
    assert refused.exit_code != 0
    assert "request_id" in refused.stderr
