"""Client ID metadata documents: the Python SDK client identifies itself by an HTTPS URL.

The document is served over real TLS on 127.0.0.1 (a certificate made here, trusted through
``SSL_CERT_FILE``). 127.0.0.1 is a private address, so the server fetches it only because the
operator allowed private client URLs; without that it refuses, and says why in the audit.
"""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import json
import ssl
import threading
from typing import Any

import anyio
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.oauth.support import (
    ConsentDesk,
    OAuthWorld,
    approve_on_host,
    consent_url_of,
    request_id_of,
)
from tests.oauth.test_python_sdk import (
    REDIRECT,
    MemoryStorage,
    _client,
    _finish,
    _in_thread,
    _provider,
    _text,
)


def _certificate(directory) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_path), str(key_path)


class _Documents:
    """An HTTPS server on 127.0.0.1 serving one client metadata document."""

    def __init__(self, directory) -> None:
        cert, key = _certificate(directory)
        self.cert = cert
        documents: dict[str, bytes] = {}
        self.documents = documents

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = documents.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body or b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def publish(self, path: str, **fields: Any) -> str:
        url = self.url + path
        self.documents[path] = json.dumps({"client_id": url, **fields}).encode()
        return url

    def stop(self) -> None:
        self.httpd.shutdown()


@pytest.fixture
def documents(tmp_path, monkeypatch):
    served = _Documents(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", served.cert)
    yield served
    served.stop()


def test_python_sdk_with_a_client_id_metadata_document(tmp_path, documents):
    url = documents.publish(
        "/oauth/client.json",
        client_name="cimd-client",
        redirect_uris=[REDIRECT],
        token_endpoint_auth_method="none",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    world = OAuthWorld(tmp_path / "data", oauth_allow_private_client_urls=True)
    try:
        desk, storage = ConsentDesk(), MemoryStorage()
        provider = _provider(world, desk, storage, client_metadata_url=url)

        async def session() -> Any:
            async with _client(world, provider) as client:
                return _text(await client.call_tool("observe_whoami", {}))

        thread, out = _in_thread(session)
        authorize = desk.next_request()
        assert httpx.URL(authorize).params["client_id"] == url  # CIMD, not a registration
        request_id = request_id_of(consent_url_of(authorize))
        pending = world.call(world.person, "oauth.request.show", {"requestId": request_id})
        assert pending["clientName"] == "cimd-client"
        assert pending["clientId"] == url
        desk.answer(approve_on_host(world, request_id))
        who = _finish(thread, out)
        assert who["tokenId"].startswith("oag_")
        assert storage.client is not None
        assert storage.client.client_id == url
        assert storage.client.client_secret is None  # a public client: PKCE protects the code
    finally:
        world.stop()


def test_a_metadata_document_on_a_private_address_is_not_fetched_unless_allowed(
    tmp_path, documents
):
    url = documents.publish("/c.json", client_name="x", redirect_uris=[REDIRECT])
    world = OAuthWorld(tmp_path / "data")
    try:
        answer = httpx.get(
            world.url + "/authorize",
            params={
                "response_type": "code",
                "client_id": url,
                "redirect_uri": REDIRECT,
                "code_challenge": "c" * 43,
                "code_challenge_method": "S256",
            },
            follow_redirects=False,
            timeout=30,
        )
        assert answer.status_code == 400
        assert world.service.audit_count(operation="oauth.client_metadata") == 1
        with world.service.storage.read() as tx:
            assert tx.oauth.get_client(url) is None
    finally:
        world.stop()


def test_a_document_that_does_not_name_itself_is_refused(tmp_path, documents):
    documents.documents["/liar.json"] = json.dumps(
        {"client_id": "https://elsewhere.example/c.json", "redirect_uris": [REDIRECT]}
    ).encode()
    world = OAuthWorld(tmp_path / "data", oauth_allow_private_client_urls=True)
    try:
        from taskcore.errors import TaskError
        from taskcore.oauth.server import OAuthServer

        server = OAuthServer(world.service, allow_private_client_urls=True)
        with pytest.raises(TaskError) as refused:
            anyio.run(anyio.to_thread.run_sync, server.client, documents.url + "/liar.json")
        assert "its own URL" in refused.value.message
    finally:
        world.stop()
