"""The upstream transport over TLS: a loopback HTTPS server with a certificate made for the test, trusted by
the client's context, then not trusted."""

from __future__ import annotations

import asyncio
import datetime
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.providers.transport import LeanTransport
from tests.test_upstream_faults import RawUpstream


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
    upstream = RawUpstream()
    upstream.server = await asyncio.start_server(upstream._serve, "127.0.0.1", 0, ssl=server_context)
    port = upstream.server.sockets[0].getsockname()[1]
    yield f"https://localhost:{port}/v1/chat/completions", cert_path
    upstream.server.close()


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
