"""`/docs` in headless Chromium with no network beyond the hub: Swagger UI comes from the hub's own static files, runs
under the strict Content-Security-Policy with no violation, and lists every operation of /openapi.json."""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request

import pytest

from tests.browser.conftest import serving

METHODS = {"get", "put", "post", "delete", "patch", "options", "head", "trace"}
COLLECT_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


@pytest.fixture(scope="module")
def plain_hub(tmp_path_factory):
    data = tmp_path_factory.mktemp("hub-docs")
    env = {**os.environ, "HUB_DATA_DIR": str(data / "hub"), "CHATEVAL_HOME": str(data / "home")}
    with serving(env) as url:
        yield url


def test_docs_render_every_operation_offline_under_the_strict_policy(browser, plain_hub, tmp_path):
    with urllib.request.urlopen(f"{plain_hub}/openapi.json", timeout=10) as response:
        schema = json.load(response)
    operations = {
        (method.upper(), path) for path, item in schema["paths"].items() for method in item if method in METHODS
    }
    assert len(operations) > 20

    elsewhere: list[str] = []
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(COLLECT_VIOLATIONS)

    def only_the_hub(route):
        if urllib.parse.urlsplit(route.request.url).netloc == urllib.parse.urlsplit(plain_hub).netloc:
            route.continue_()
        else:  # what a machine with no network would see
            elsewhere.append(route.request.url)
            route.abort("internetdisconnected")

    context.route("**/*", only_the_hub)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(f"{plain_hub}/docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=60_000)
    shown = page.eval_on_selector_all(  # an operation with several tags is listed under each
        ".swagger-ui .opblock",
        "(blocks) => blocks.map((b) => [b.querySelector('.opblock-summary-method').textContent,"
        " b.querySelector('.opblock-summary-path').dataset.path])",
    )
    assert {tuple(pair) for pair in shown} == operations
    assert page.locator(".swagger-ui .info .title").inner_text().startswith("ChatEval Hub")
    assert page.locator(".opblock-summary-path[data-path='/api/submissions']").count() >= 1

    page.screenshot(path=str(tmp_path / "docs-top.png"), full_page=False)
    # an operation opens and shows its parameters and responses
    page.locator(".opblock-summary-path[data-path='/api/leaderboards/{dataset}']").first.click()
    page.wait_for_selector(".opblock.is-open .parameters", timeout=30_000)
    page.screenshot(path=str(tmp_path / "docs.png"), full_page=False)

    assert page.evaluate("window.__cspViolations") == []
    assert elsewhere == [] and errors == []
    context.close()
