"""Lifecycle fixtures: a hub app without a worker (jobs run in the test), and a real local SMTP server."""

from __future__ import annotations

import socket

import pytest
from fastapi.testclient import TestClient

from hub.web.app import create_app


@pytest.fixture
def client(hub_env):
    with TestClient(create_app(), follow_redirects=False) as client:
        yield client


class Inbox:
    """Collects every message a real aiosmtpd server on 127.0.0.1 (port 0) accepts."""

    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        from email import message_from_bytes, policy

        self.messages.append(message_from_bytes(envelope.content, policy=policy.default))
        return "250 OK"


@pytest.fixture
def smtp(monkeypatch):
    """A running SMTP server; HUB_SMTP_* point at it (no TLS, no login)."""
    aiosmtpd = pytest.importorskip("aiosmtpd.controller", reason="aiosmtpd is in the test extra")
    from hub import settings

    inbox = Inbox()
    with socket.socket() as probe:  # a free port from the OS (the controller's own start-up check cannot use 0)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = aiosmtpd.Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    monkeypatch.setenv("HUB_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("HUB_SMTP_PORT", str(port))
    monkeypatch.setenv("HUB_SMTP_SECURITY", "none")
    settings.get_settings.cache_clear()
    yield inbox
    controller.stop()
    settings.get_settings.cache_clear()
