"""The IRT lists show each prompt's text (its last turn, cut to 120 characters), not only its id."""

from __future__ import annotations

import html

from evaluation.dataset import load_dataset
from tests.hub.test_irt_publishing import DATASET, _api, _page, site  # noqa: F401  (the module's fitted hub)


def test_irt_lists_show_the_prompt_text(site):  # noqa: F811
    fit = _api(site, f"/api/irt/{DATASET}")["fit"]
    turns = {p.id: p.context[-1].content for p in load_dataset(DATASET).prompts}  # read from the dataset files
    for key in ("prompts", "most_discriminating", "least_discriminating"):
        for row in fit[key]:
            full = turns[row["prompt"]]
            expected = full if len(full) <= 120 else full[:119] + "…"
            assert row["text"] == expected and len(row["text"]) <= 120, (key, row["prompt"])
    page = _page(site, f"/irt/{DATASET}")
    top = fit["most_discriminating"][0]
    assert f'<q class="prompt-text">{html.escape(top["text"], quote=True)}</q>' in page
