"""Both protocol eras, as the official clients speak them, against ``agent-task serve``.

The SDKs this server is built with speak two eras: 2025-11-25 (``initialize``, then requests
on the negotiated version; our endpoints answer it statelessly, with no session id, which
the transport allows) and 2026-07-28 (no handshake: ``server/discover`` and a ``_meta``
envelope on every request). Each era is run with the Python SDK client (``mcp``, pinned in
uv.lock) and the TypeScript SDK client (npm, pinned in tests/harness/install.py: the 1.x SDK
for 2025-11-25, the 2.x client package for 2026-07-28), on both endpoints. MCP Inspector's
CLI (``--strict``) lists the tools and finds no schema portability problem.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from mcp import Client

from tests.ci import in_ci
from tests.harness.install import InstallError, ensure, node22
from tests.taskmcp.support import WORKSPACE_PATH, QueueService, run

ERAS = ("2025-11-25", "2026-07-28")
SCRIPT = Path(__file__).parent / "clients" / "ts_eras.mjs"


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    return module_backend


@pytest.fixture(scope="module")
def queue(tmp_path_factory, _both_backends):
    svc = QueueService(tmp_path_factory.mktemp("eras")).start()
    yield svc
    svc.stop()


@pytest.fixture(scope="module")
def node_clients() -> dict[str, str]:
    try:
        return {
            "node": str(node22()),
            "MCP_SDK_DIR": str(ensure("mcp-sdk-ts").package_dir),
            "MCP_CLIENT_DIR": str(ensure("mcp-client-ts").package_dir),
        }
    except InstallError as err:
        if in_ci():  # the one rule (tests/ci.py): under CI a missing client fails
            raise
        pytest.skip(str(err))


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("path", ["/mcp", WORKSPACE_PATH])
def test_python_sdk_client_in_each_era(queue, era, path):
    mode = "legacy" if era == "2025-11-25" else era

    async def script(client: Client):
        listed = await client.list_tools()
        name = "observe_whoami" if path == "/mcp" else "capabilities"
        result = await client.call_tool(name, {})
        bad = await client.call_tool(name, {"unexpected": 1})
        return client.protocol_version, [t.name for t in listed.tools], result, bad

    version, names, result, bad = run(queue.http("agent1", path, mode=mode), script)
    assert version == era
    assert names == sorted(names)
    assert not result.is_error
    assert bad.is_error
    assert json.loads(bad.content[0].text)["code"] == "UNKNOWN_FIELD"


@pytest.mark.parametrize("era", ERAS)
def test_typescript_sdk_client_in_each_era(queue, node_clients, era):
    env = {**os.environ, **{k: v for k, v in node_clients.items() if k != "node"}}
    done = subprocess.run(
        [node_clients["node"], str(SCRIPT), era, queue.url + "/mcp", queue.tokens["agent1"]],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["protocolVersion"] == era
    assert "agenttask_claimNext" in answer["tools"]
    assert "session_gate" not in answer["tools"]  # a default serve answers no one about it
    assert answer["tools"] == sorted(answer["tools"])
    assert answer["who"]["tokenId"] == queue.token_ids["agent1"]
    assert answer["refused"]["isError"] is True
    assert answer["refused"]["body"]["code"] == "WRONG_TYPE"


def test_inspector_cli_finds_no_schema_portability_problem(queue, tmp_path):
    try:
        node = node22()
        launcher = (
            ensure("mcp-inspector").package_dir / "clients" / "launcher" / "build" / "index.js"
        )
    except InstallError as err:
        if in_ci():  # the one rule (tests/ci.py): under CI a missing client fails
            raise
        pytest.skip(str(err))
    for path in ("/mcp", WORKSPACE_PATH):
        done = subprocess.run(
            [
                str(node),
                str(launcher),
                "--cli",
                "--server-url",
                queue.url + path,
                "--header",
                f"Authorization: Bearer {queue.tokens['admin']}",
                "--method",
                "tools/list",
                "--format",
                "json",
                "--strict",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "HOME": str(tmp_path)},
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert len(answer["result"]["tools"]) > 5
        assert "schemaFindings" not in answer, answer.get("schemaFindings")
        assert "portability" not in done.stderr, done.stderr
