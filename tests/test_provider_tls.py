"""The model clients of one process share one TLS set-up: reading the CA bundle costs ~30 ms of
CPU, and a batch opens many sessions (two clients each) at once. A client still verifies
certificates with it, and a changed ``SSL_CERT_FILE`` gets a set-up of its own."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from reasonix.providers import tls
from reasonix.providers.openai_compat import OpenAICompatProvider


def _client_context(provider: OpenAICompatProvider) -> ssl.SSLContext:
    client = provider._get_client()
    context = client._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert isinstance(context, ssl.SSLContext)
    return context


def test_clients_share_one_tls_setup_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setattr(tls, "_MADE", {})
    made: list[ssl.SSLContext] = []
    real = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        context = real(*args, **kwargs)  # type: ignore[arg-type]
        made.append(context)
        return context

    monkeypatch.setattr(ssl, "create_default_context", counted)
    providers = [
        OpenAICompatProvider(base_url="https://api.example.invalid", model="m", api_key="k")
        for _ in range(4)
    ]
    contexts = [_client_context(p) for p in providers]
    assert len(made) == 1, f"the CA bundle was read {len(made)} times for 4 clients"
    assert all(c is made[0] for c in contexts)
    assert made[0].verify_mode == ssl.CERT_REQUIRED and made[0].check_hostname


def test_a_changed_ca_file_gets_its_own_setup(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import certifi

    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.setattr(tls, "_MADE", {})
    default = tls.tls_context()
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    own = tls.tls_context()
    assert own is not default and tls.tls_context() is own
