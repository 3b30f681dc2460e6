"""Every response carries a strict Content-Security-Policy (no inline script or style, nothing from elsewhere), may
not be framed (X-Frame-Options DENY, frame-ancestors 'none'), is never sniffed (nosniff) and sends a same-origin
Referrer-Policy. Two routes differ, each only as far as it must: /docs (Swagger UI from its CDN, with an inline
start-up script) and the MTurk task page, which Mechanical Turk shows in a frame and which posts to MTurk."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from hub.web.app import create_app

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
HTML = {"Accept": "text/html"}
STRICT = "default-src 'self'"


@pytest.fixture
def client(hub_env):
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        yield client


def _directives(response) -> dict[str, str]:
    policy = response.headers["content-security-policy"]
    return {part.split()[0]: part.strip() for part in policy.split(";") if part.strip()}


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/datasets",
        "/leaderboards/hub-open-v1",
        "/login",
        "/downloads",
        "/no-such-page",
        "/api/overview",
        "/api/downloads/systems.csv",
        "/static/app.css",
        "/openapi.json",
    ],
)
def test_every_response_has_the_strict_headers(client, path):
    response = client.get(path, headers=HTML)
    assert response.status_code in (200, 404)
    directives = _directives(response)
    assert directives["default-src"] == STRICT
    assert directives["frame-ancestors"] == "frame-ancestors 'none'"
    assert directives["object-src"] == "object-src 'none'"
    assert "unsafe-inline" not in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "same-origin"


def test_docs_may_load_swagger_ui_from_its_cdn_but_not_be_framed(client):
    response = client.get("/docs")
    assert response.status_code == 200 and "cdn.jsdelivr.net" in response.text
    directives = _directives(response)
    assert (
        "https://cdn.jsdelivr.net" in directives["script-src"] and "https://cdn.jsdelivr.net" in directives["style-src"]
    )
    assert directives["frame-ancestors"] == "frame-ancestors 'none'" and response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_the_mturk_task_page_may_be_framed_by_mturk_only(client):
    response = client.get("/mturk/experiments/1/task", headers=HTML)
    directives = _directives(response)
    hosts = "https://www.mturk.com https://workersandbox.mturk.com"
    assert directives["frame-ancestors"] == f"frame-ancestors {hosts}"
    assert directives["form-action"] == f"form-action 'self' {hosts}"
    assert directives["default-src"] == STRICT and "x-frame-options" not in response.headers


def test_templates_have_no_inline_script_or_style():
    """What a strict policy would block: inline scripts (data blocks of type application/json are not run and are
    allowed), event-handler attributes, javascript: links, style attributes and <style> elements."""
    found = []
    for template in sorted(TEMPLATES.glob("*.html")):
        text = template.read_text(encoding="utf-8")
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag and 'type="application/json"' not in tag:
                found.append(f"{template.name}: {tag}")
        for pattern in (r"\sstyle\s*=", r"\son[a-z]+\s*=", r"javascript:", r"<style\b"):
            found += [f"{template.name}: {m.group(0)}" for m in re.finditer(pattern, text, flags=re.IGNORECASE)]
    assert found == []
