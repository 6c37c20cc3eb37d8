"""The upstream HTTP client over real sockets: TLS with a certificate made for the test (trusted through the
environment, then not), compressed answers, httpx's pool limits, and a proxy named in the environment."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.providers.transport import upstream_client
from tests.support import chat_body, completion, make_config
from tests.support.raw import read_request, serve_raw

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


async def _gateway(gateway_factory: Any, base_url: str) -> Any:
    provider = {"base_url": base_url, "api_key": "sk-test", "max_retries": 0, "read_timeout": 5.0}
    client, _ = await gateway_factory(make_config(providers={"up": provider}, mcpServers={}, tool_sets={}), {})
    return client


def _certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.fixture
async def https_upstream(tmp_path: Path) -> AsyncIterator[tuple[str, Path, Any]]:
    cert_path, key_path = _certificate(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert_path, key_path)
    upstream = await serve_raw(tls=server_context)
    assert upstream.server is not None
    port = upstream.server.sockets[0].getsockname()[1]
    yield f"https://localhost:{port}/v1", cert_path, upstream
    upstream.close()


async def test_https_with_a_certificate_trusted_through_the_environment(
    https_upstream: tuple[str, Path, Any], gateway_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, cert_path, upstream = https_upstream
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_path))
    client = await _gateway(gateway_factory, url)
    for _ in range(2):
        response = await client.post("/v1/chat/completions", json=chat_body("x"))
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["content"] == "fine"
    assert upstream.connections == 1, "kept alive"


async def test_an_untrusted_certificate_is_refused(https_upstream: tuple[str, Path, Any], gateway_factory: Any) -> None:
    url, _, _ = https_upstream
    client = await _gateway(gateway_factory, url)
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.status_code == 502 and response.json()["error"]["code"] == "upstream_unreachable"
    async with upstream_client() as direct:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await direct.post(url + "/chat/completions", json={})


async def test_a_compressed_answer_is_decoded() -> None:
    async def gzipped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        body = gzip.compress(json.dumps(completion("unzipped")).encode())
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
        writer.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    upstream = await serve_raw(gzipped)
    async with upstream_client() as client:
        response = await client.post(upstream.url + "/chat/completions", json={})
    upstream.close()
    assert response.json()["choices"][0]["message"]["content"] == "unzipped"


async def test_httpx_pool_limits_hold_in_flight_and_idle() -> None:
    in_flight = peak = open_connections = 0

    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal in_flight, peak, open_connections
        open_connections += 1
        try:
            while True:
                await read_request(reader)
                in_flight += 1
                peak = max(peak, in_flight)
                await asyncio.sleep(0.5)
                in_flight -= 1
                body = json.dumps(completion("fine")).encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
                await writer.drain()
        finally:
            open_connections -= 1

    upstream = await serve_raw(slow)
    url = upstream.url + "/chat/completions"
    limits = httpx.Limits(max_connections=2, max_keepalive_connections=1)
    async with upstream_client(limits=limits) as client:
        answers = await asyncio.gather(*(client.post(url, json={}) for _ in range(5)))
        assert [a.status_code for a in answers] == [200] * 5 and peak == 2
        await asyncio.sleep(0.3)  # the server sees the surplus connection close
        assert open_connections == 1, "at most max_keepalive_connections stay open when idle"
        short = httpx.Timeout(5, pool=0.2)
        results = await asyncio.gather(
            *(client.post(url, json={}, timeout=short) for _ in range(3)), return_exceptions=True
        )
        assert sum(isinstance(r, httpx.TimeoutException) for r in results) == 1, results
    upstream.close()


async def test_a_proxy_named_in_the_environment_is_used(gateway_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head.split(b"\r\n", 1)[0])
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        await reader.readexactly(length)
        body = json.dumps(completion("via the proxy")).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    server = await serve_raw(proxy)
    monkeypatch.setenv("HTTP_PROXY", server.url.removesuffix("/v1"))
    client = await _gateway(gateway_factory, "http://upstream.invalid/v1")
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    server.close()
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "via the proxy"
    assert seen == [b"POST http://upstream.invalid/v1/chat/completions HTTP/1.1"]
