"""The upstream transport on its own: TLS with a certificate made for the test (trusted, then not), compressed
answers, and the cap on requests in flight."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.providers.transport import LeanTransport, upstream_transport
from tests.conftest import completion
from tests.test_upstream_faults import read_request, serve_raw


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
async def https_upstream(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    cert_path, key_path = _certificate(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert_path, key_path)
    upstream = await serve_raw(tls=server_context)
    assert upstream.server is not None
    port = upstream.server.sockets[0].getsockname()[1]
    yield f"https://localhost:{port}/v1/chat/completions", cert_path
    upstream.close()


async def test_https_with_a_trusted_certificate_and_keep_alive(https_upstream: tuple[str, Path]) -> None:
    url, cert_path = https_upstream
    trusted = ssl.create_default_context(cafile=str(cert_path))
    async with httpx.AsyncClient(transport=LeanTransport(ssl_context=trusted)) as client:
        for _ in range(2):
            response = await client.post(url, json={"model": "m", "messages": []})
            assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "fine"


async def test_an_untrusted_certificate_is_refused(https_upstream: tuple[str, Path]) -> None:
    url, _ = https_upstream
    async with httpx.AsyncClient(transport=LeanTransport(ssl_context=ssl.create_default_context())) as client:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.post(url, json={"model": "m", "messages": []})


async def test_a_compressed_answer_is_decoded() -> None:
    async def gzipped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        body = gzip.compress(json.dumps(completion("unzipped")).encode())
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
        writer.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    upstream = await serve_raw(gzipped)
    async with httpx.AsyncClient(transport=LeanTransport()) as client:
        response = await client.post(upstream.url + "/chat/completions", json={})
    upstream.close()
    assert response.json()["choices"][0]["message"]["content"] == "unzipped"


async def test_requests_beyond_max_connections_wait_for_a_slot_or_time_out() -> None:
    in_flight = peak = 0

    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal in_flight, peak
        while True:
            await read_request(reader)
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.2)
            in_flight -= 1
            body = json.dumps(completion("fine")).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()

    upstream = await serve_raw(slow)
    url = upstream.url + "/chat/completions"
    async with httpx.AsyncClient(transport=LeanTransport(max_connections=2)) as client:
        answers = await asyncio.gather(*(client.post(url, json={}) for _ in range(5)))
        assert [a.status_code for a in answers] == [200] * 5 and peak == 2
        short = httpx.Timeout(5, pool=0.05)
        results = await asyncio.gather(
            *(client.post(url, json={}, timeout=short) for _ in range(3)), return_exceptions=True
        )
        assert sum(isinstance(r, httpx.PoolTimeout) for r in results) == 1
    upstream.close()


def test_a_proxy_in_the_environment_keeps_httpx_own_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(upstream_transport(), LeanTransport)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    assert upstream_transport() is None, "None: httpx builds its own transport, which honours the proxy"
