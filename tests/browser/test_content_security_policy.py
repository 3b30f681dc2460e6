"""The strict Content-Security-Policy in headless Chromium: every public page renders under it, charts drawn, with
no violation reported, on a demo hub holding the real ChatEval judgements (so the human-evaluation pages have
their outcome bars and charts)."""

from __future__ import annotations

import pytest

from tests.browser.conftest import copy_of, serving

PAGES = [
    "/",
    "/datasets",
    "/datasets/hub-open-v1",
    "/leaderboards/hub-open-v1",
    "/leaderboards/hub-open-v1?sort=bleu-2",  # unranked by default: a chosen column draws the chart
    "/systems/1",
    "/compare/hub-open-v1?systems=1,2",
    "/experiments",
    "/experiments/1",
    "/downloads",
    "/login",
    "/signup",
]
COLLECT_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""
COUNT_DRAWN = """(canvas) => {
  const d = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n;
}"""


@pytest.fixture(scope="module")
def judged_hub(tmp_path_factory, imported_chateval):
    env = copy_of(imported_chateval, tmp_path_factory.mktemp("hub-csp"))  # the votes imported by the CLI
    with serving(env, "--demo") as url:
        yield url


def test_public_pages_render_under_the_policy_without_violations(browser, judged_hub, tmp_path):
    context = browser.new_context()
    context.add_init_script(COLLECT_VIOLATIONS)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.on("pageerror", lambda error: console.append(str(error)))
    charts = 0
    for path in PAGES:
        console.clear()
        response = page.goto(f"{judged_hub}{path}")
        assert response is not None and response.status == 200, path
        assert "default-src 'self'" in response.headers["content-security-policy"], path
        page.wait_for_load_state("networkidle")
        for canvas in page.locator("canvas[data-chart]").all():
            assert canvas.evaluate(COUNT_DRAWN) > 1000, f"an empty chart on {path}"
            charts += 1
        violations = page.evaluate("window.__cspViolations")
        assert violations == [], f"{path}: {violations}"
        assert [m for m in console if "Content Security Policy" in m or "Refused" in m] == [], path
        if path == "/experiments":
            bars = page.locator("svg.exp-bar")
            assert bars.count() >= 20 and bars.first.bounding_box()["width"] > 50  # the outcome bars, drawn
            page.screenshot(path=str(tmp_path / "experiments.png"), full_page=True)
    assert charts >= 3  # leaderboard, system profile and experiment charts at least
