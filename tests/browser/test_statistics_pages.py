"""The statistics pages in headless Chromium, on the real ChatEval judgements: imported with the CLI, fitted with
`chateval ratings refit-irt`, then read as a visitor: the ability chart is drawn, the table ranks the systems as
the fit does, a prompt page shows its discrimination, and a system profile says whom it beats significantly."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import pytest

from tests.browser.conftest import CHATEVAL, copy_of, serving


@pytest.fixture(scope="module")
def stats_hub(tmp_path_factory, imported_chateval):
    env = copy_of(imported_chateval, tmp_path_factory.mktemp("hub-stats"))  # the votes imported by the CLI
    command = [CHATEVAL, "ratings", "refit-irt", "--bootstrap", "50"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with serving(env) as url:
        yield url


def _json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def test_a_visitor_reads_the_statistics_of_the_real_judgements(browser, stats_hub):
    fit = _json(f"{stats_hub}/api/irt/ncm")["fit"]
    page = browser.new_context().new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{stats_hub}/irt/ncm")
    # Chart.js drew the abilities: the canvas has a size and non-blank pixels.
    canvas = page.locator("canvas[data-chart=chart-irt]")
    assert canvas.bounding_box()["height"] > 100
    drawn = page.evaluate(
        "() => { const c = document.querySelector('canvas[data-chart=chart-irt]');"
        " const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"
    )
    assert drawn > 1000
    names = page.locator("table.irt-systems tbody tr td:nth-child(2) a").all_inner_texts()
    assert names == [row["system"] for row in fit["systems"]] and len(names) == 10
    assert page.locator("table.irt-pairs tbody tr").count() == 45

    top = fit["most_discriminating"][0]["prompt"]
    page.click(f"section >> text={top}")
    page.wait_for_url(f"**/datasets/ncm/prompts/{top}")
    assert "number 1 of 200 prompts" in page.inner_text("#prompt-discrimination")
    assert page.locator("ol.conversation li").count() == 1  # the prompt's text, from the imported judgements

    ncm = next(row for row in fit["systems"] if row["system"] == "NCM")
    page.goto(f"{stats_hub}/systems/{ncm['system_id']}")
    section = page.locator("section.irt-profile")
    assert "rank 3 of 10" in section.inner_text() or "rank 2 of 10" in section.inner_text()
    verdicts = dict(
        zip(
            section.locator("tbody td:nth-child(1)").all_inner_texts(),
            section.locator("tbody td.irt-verdict").all_inner_texts(),
            strict=True,
        )
    )
    assert verdicts["Cakechat"] == "better"  # the paper's finding: NCM beats CakeChat
    assert errors == []
