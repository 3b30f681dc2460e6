"""Every response carries a strict Content-Security-Policy (no inline script or style, nothing from elsewhere), may
not be framed (X-Frame-Options DENY, frame-ancestors 'none'), is never sniffed (nosniff) and sends a same-origin
Referrer-Policy. /docs too (Swagger UI is served from the hub's static files). One route differs, only as far as it
must: the MTurk task page, which Mechanical Turk shows in a frame and which posts to MTurk."""

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
        "/docs",
        "/static/vendor/swagger-ui/swagger-ui-bundle.js",
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


def test_docs_load_swagger_ui_from_the_hub_only(client):
    response = client.get("/docs")
    assert response.status_code == 200
    sources = re.findall(r'(?:src|href)="([^"]+)"', response.text)
    assert "/static/vendor/swagger-ui/swagger-ui-bundle.js" in sources and "/static/api_docs.js" in sources
    assert [s for s in sources if "//" in s or s.startswith("http")] == []  # nothing from another site
    assert set(_directives(response)) == {
        "default-src",
        "img-src",
        "object-src",
        "base-uri",
        "form-action",
        "frame-ancestors",
    }  # no script-src/style-src exception
    for path in ("/redoc", "/docs/oauth2-redirect"):  # FastAPI's CDN pages are gone
        assert client.get(path).status_code == 404


def test_the_mturk_task_page_may_be_framed_by_mturk_only(client):
    response = client.get("/mturk/experiments/1/task", headers=HTML)
    directives = _directives(response)
    hosts = "https://www.mturk.com https://workersandbox.mturk.com"
    assert directives["frame-ancestors"] == f"frame-ancestors {hosts}"
    assert directives["form-action"] == f"form-action 'self' {hosts}"
    assert directives["default-src"] == STRICT and "x-frame-options" not in response.headers


def test_templates_have_no_inline_script_or_style():
    """What a strict policy would block: inline scripts (data blocks of type application/json are not run and are
    allowed), event-handler attributes, javascript: links, style attributes and <style> elements. Pages the hub serves
    are the top-level templates and those of templates/studies/; templates/standalone/ holds files written for reading
    outside the hub (a snapshot's index.html, opened from disk or S3 with no server and no policy), which must carry
    their own style."""
    found = []
    for template in sorted([*TEMPLATES.glob("*.html"), *TEMPLATES.glob("studies/*.html")]):
        text = template.read_text(encoding="utf-8")
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag and 'type="application/json"' not in tag:
                found.append(f"{template.name}: {tag}")
        for pattern in (r"\sstyle\s*=", r"\son[a-z]+\s*=", r"javascript:", r"<style\b"):
            found += [f"{template.name}: {m.group(0)}" for m in re.finditer(pattern, text, flags=re.IGNORECASE)]
    assert found == []
