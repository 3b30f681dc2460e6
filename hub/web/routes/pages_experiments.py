"""Public HTML pages of human evaluations, twins of `/api/experiments`: the list (filtered by dataset) and one
experiment's results (wins, ties, losses, win rate with its interval, sign test, agreement, progress).

An experiment the viewer may not see answers the same 404 as a missing one (the services decide). Rater
identities never appear here, only counts; the per-rater table belongs to the admin pages.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from evaluation.dataset import installed_dataset_dirs
from hub.errors import NotFound
from hub.services.human import experiment_access, experiment_results, human_summaries
from hub.services.publishing.exports import MEDIA_TYPES
from hub.web import pagination
from hub.web.deps import SessionDep, ViewerDep
from hub.web.pagination import PageDep
from hub.web.read_cache import public_page
from hub.web.templating import render
from hub.web.threads import RequestSessionRoute

router = APIRouter(
    route_class=RequestSessionRoute, tags=["pages"], include_in_schema=False, default_response_class=HTMLResponse
)
# A better, B better: the site's accent and a warm contrast; ties grey. The chart spec needs them as values; the
# table swatches in hub/static/app.css (.exp-a, .exp-tie, .exp-b) must use the same colours.
OUTCOME_COLORS = {"A": "#1f5fa8", "tie": "#8a94a0", "B": "#c07a1a"}


@router.get("/experiments")
@public_page("experiments")
def experiments_page(
    request: Request, session: SessionDep, viewer: ViewerDep, page: PageDep, dataset: str | None = None
):
    dataset = dataset or None  # the filter form sends an empty value for "all datasets"
    listing = human_summaries.experiment_list(session, viewer, dataset=dataset, page=page)
    params = {**({"dataset": dataset} if dataset else {}), **pagination.non_default(page)}
    query = f"?{urlencode(params)}" if params else ""
    context = {
        "viewer": viewer,
        "page": listing,
        "pagination": pagination.links(request, listing["pagination"]),
        "json_url": f"/api/experiments{query}",
    }
    return render(request, "experiments.html", context)


def _outcome_chart(view: dict[str, Any]) -> dict[str, Any] | None:
    """Kept judgements as three bars: A better, tie, B better."""
    summary, experiment = view["summary"], view["experiment"]
    if not summary["n"]:
        return None
    a, b = experiment["system_a"]["name"], experiment["system_b"]["name"]
    return {
        "title": "Judgements of the two systems (excluded raters left out, automatic ties included)",
        "label": "judgements",
        "labels": [f"A: {a} better", "tie", f"B: {b} better"],
        "values": [summary["wins"], summary["ties"], summary["losses"]],
        "colors": [OUTCOME_COLORS["A"], OUTCOME_COLORS["tie"], OUTCOME_COLORS["B"]],
        "integer": True,
    }


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _agreement_rows(agreement: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Cohen's weighted kappa, Fleiss' kappa and what they rest on, each without and with the excluded raters."""
    if not agreement:
        return []
    parts = {"kept": agreement["without_excluded"], "all": agreement["with_excluded"]}

    def fleiss_basis(f: dict[str, Any]) -> str:
        if not f["fleiss_ratings_per_item"]:
            return "no prompt with two raters or more"
        basis = f"{_plural(f['fleiss_items'], 'prompt')} x {f['fleiss_ratings_per_item']} raters"
        return basis + (f", {f['fleiss_items_dropped']} left out" if f["fleiss_items_dropped"] else "")

    return [
        {
            "id": "cohen",
            "label": "Cohen's weighted kappa, mean over rater pairs",
            **{
                k: {"value": f["cohen_kappa"], "basis": _plural(f["rater_pairs"], "rater pair")}
                for k, f in parts.items()
            },
        },
        {
            "id": "fleiss",
            "label": "Fleiss' kappa",
            **{k: {"value": f["fleiss_kappa"], "basis": fleiss_basis(f)} for k, f in parts.items()},
        },
        {
            "id": "judgements",
            "label": "Judgements used (raters)",
            **{
                k: {"count": f"{f['n_judgements']} ({f['n_raters']})", "basis": _plural(f["n_items"], "prompt")}
                for k, f in parts.items()
            },
        },
    ]


@router.get("/experiments/{experiment_id}")
@public_page("experiment")
def experiment_page(request: Request, experiment_id: str, session: SessionDep, viewer: ViewerDep):
    if not re.fullmatch(r"[0-9]{1,18}", experiment_id):  # the 404 page, as for an id that does not exist (and fits)
        raise NotFound(f"no experiment #{experiment_id}")
    experiment = experiment_access.visible_experiment(session, int(experiment_id), viewer)
    view = experiment_results.results(session, experiment, with_raters=False)
    context = {
        "viewer": viewer,
        "view": view,
        "chart": _outcome_chart(view),
        "agreement": _agreement_rows(view["agreement"]),
        "dataset_installed": experiment.dataset_name in installed_dataset_dirs(),
        "is_public": experiment_access.experiment_is_public(session, experiment),
        "downloads": [{"format": fmt, "url": f"/api/downloads/ratings.{fmt}"} for fmt in MEDIA_TYPES],
        "json_url": f"/api/experiments/{experiment.id}",
    }
    return render(request, "experiment.html", context)
