"""Human evaluation in headless Chromium: an admin creates an experiment (cost shown before launch), launches it and
makes an invite link; a rater on a phone opens the link, answers a block (keyboard and taps), submits only once
every pair is answered, and gets a completion code; the ratings appear in the admin page and the download."""

from __future__ import annotations

import csv
import io
import re
import urllib.request

from tests.browser.conftest import log_in


def test_admin_launches_and_a_rater_completes_a_block(browser, hub):
    admin = browser.new_context().new_page()
    log_in(admin, hub, "admin@example.org", "admin-password-long")
    admin.goto(f"{hub}/admin/experiments")
    admin.select_option("select[name=dataset]", "hub-open-v1")
    for field, name in (("system_a_id", "echo"), ("system_b_id", "retrieval")):
        option = admin.locator(f"select[name={field}] option", has_text=re.compile(rf"^{name} \(#"))
        admin.select_option(f"select[name={field}]", option.get_attribute("value"))
    admin.fill("input[name=seed]", "11")
    admin.click("form[action='/admin/experiments'] button[type=submit]")
    admin.wait_for_url(re.compile(r"/admin/experiments/\d+$"))
    experiment_id = admin.url.rsplit("/", 1)[1]
    cost = admin.inner_text("#cost-estimate")
    assert "3 raters" in cost and "$" in cost
    admin.click(f"form[action='/admin/experiments/{experiment_id}/launch'] button")
    admin.wait_for_load_state()
    assert "open" in admin.inner_text("dl.acct-meta")
    admin.fill("input[name=label]", "Alice")
    admin.click(f"form[action='/admin/experiments/{experiment_id}/invites'] button")
    invite_url = admin.get_attribute("#new-invite-url", "href")
    assert invite_url and "/rate/cei_" in invite_url
    invite_path = invite_url.split("/rate/", 1)[1]

    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    rater = phone.new_page()
    rater.goto(f"{hub}/rate/{invite_path}")
    pairs = rater.locator("fieldset.pair")
    count = pairs.count()
    assert count >= 10  # ten prompts plus the quality checks
    submit = rater.locator("#submit-ratings")
    assert submit.is_disabled()
    # The page fits a phone: nothing wider than the screen.
    assert rater.evaluate("document.documentElement.scrollWidth") <= 390
    # Keyboard: "1" answers the current pair and moves on to the next unanswered one.
    rater.locator("fieldset.pair").first.click(position={"x": 5, "y": 5})
    rater.keyboard.press("1")
    rater.keyboard.press("3")
    assert rater.locator("fieldset.pair input:checked").count() == 2
    for i in range(2, count):
        assert submit.is_disabled()
        pairs.nth(i).locator("input[type=radio]").nth(1).check()
    assert submit.is_enabled()
    submit.click()
    rater.wait_for_selector("#completion-code")
    code = rater.inner_text("#completion-code").strip()
    assert re.fullmatch(r"[0-9A-F]{10}", code)

    admin.goto(f"{hub}/admin/experiments/{experiment_id}")
    assert "1 of 36 task assignments done" in admin.inner_text("dl.acct-meta")
    rows = admin.locator("table.raters tbody tr")
    assert rows.count() == 1 and "Alice" in rows.first.inner_text()  # the invite label the admin typed (issue 11)

    with urllib.request.urlopen(f"{hub}/api/downloads/ratings.csv") as response:
        ratings = list(csv.DictReader(io.StringIO(response.read().decode())))
    mine = [r for r in ratings if r["experiment_id"] == experiment_id and r["rater"]]
    assert len(mine) == count
    assert {r["backend"] for r in mine} == {"hub"}
