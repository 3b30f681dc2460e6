"""The shared formatting macros of templates/_pub_macros.html: one p-value format and one interval format for every
page (human evaluations, IRT fits, the admin's experiment page)."""

from __future__ import annotations

import pytest
from markupsafe import Markup

from hub.web.templating import templates

PUB = templates.env.get_template("_pub_macros.html").module


def text(markup: Markup) -> str:
    return str(markup).strip()


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.0, "&lt; 0.001"),
        (0.00099, "&lt; 0.001"),
        (0.001, "0.001"),
        (0.012345, "0.012"),
        (0.23269, "0.23"),
        (0.5, "0.5"),
        (1.0, "1"),
    ],
)
def test_pvalue_has_two_significant_digits_and_a_floor(value, shown):
    assert text(PUB.pvalue(value)) == shown


def test_a_missing_pvalue_is_a_muted_dash():
    assert text(PUB.pvalue(None)) == '<span class="muted">—</span>'


def test_interval_is_signed_to_two_decimals_with_open_bounds_as_question_marks():
    assert text(PUB.interval(-0.5, 1.234)) == "[-0.50, +1.23]"
    assert text(PUB.interval(None, 0.2)) == "[?, +0.20]"
    assert text(PUB.interval(0.2, None)) == "[+0.20, ?]"


def test_interval_of_shares_is_in_percent():
    assert text(PUB.interval(0.4545185, 0.7297511, percent=True)) == "[45.5%, 73.0%]"


def test_baseline_badge_only_for_baselines():
    assert text(PUB.baseline_badge(False)) == ""
    assert 'class="badge badge-baseline"' in text(PUB.baseline_badge(True))
    both = text(PUB.badges({"is_baseline": True, "is_public": False}))
    assert both.count('class="badge badge-baseline"') == 1 and both.count('class="badge badge-private"') == 1


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.0, "p &lt; 0.001"),
        (0.00099, "p &lt; 0.001"),
        (0.001, "p = 0.001"),
        (0.012345, "p = 0.012"),
        (None, 'p <span class="muted">n/a</span>'),
    ],
)
def test_a_pvalue_in_a_sentence_says_p_less_than_not_p_equals_less_than(value, shown):
    assert text(PUB.p_is(value)) == shown


def test_no_template_writes_p_equals_before_a_pvalue_that_may_read_less_than():
    """`p = {{ pub.pvalue(...) }}` reads "p = < 0.001" for small values; sentences use `pub.p_is`."""
    import re

    from hub.web.templating import TEMPLATES

    found = [
        f"{path.name}: {match.group(0)}"
        for path in sorted(TEMPLATES.glob("*.html"))
        for match in re.finditer(r"p\s*=\s*\{\{\s*pub\.pvalue", path.read_text(encoding="utf-8"))
    ]
    assert found == []
