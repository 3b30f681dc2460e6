"""Public HTML pages, twins of the public JSON API: overview, datasets, leaderboards, profiles, comparison, downloads.

Each route renders the view-model its JSON twin serves (hub.services.publishing.leaderboard / exports), plus only
what a page needs on top: links for sorting and navigation, and the data of its charts. Visibility is the services' job.
"""

from __future__ import annotations

import re
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from hub.errors import NotFound
from hub.services.publishing import exports, leaderboard
from hub.services.statistics import irt_views
from hub.storage import get_storage
from hub.web import pagination
from hub.web.deps import SessionDep, ViewerDep
from hub.web.pagination import PageDep
from hub.web.read_cache import public_page
from hub.web.routes.api_public import MAX_COMPARED_SYSTEMS, _system_ids
from hub.web.templating import render
from hub.web.threads import RequestSessionRoute

router = APIRouter(
    route_class=RequestSessionRoute, tags=["pages"], include_in_schema=False, default_response_class=HTMLResponse
)
SAFE_LINK_SCHEMES = ("http://", "https://")


def _url(path: str, **params: Any) -> str:
    """`path?params`, leaving out empty parameters."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return f"{path}?{query}" if query else path


# --- overview and datasets --------------------------------------------------------------------------------------


@router.get("/")
@public_page("overview")
def overview_page(request: Request, session: SessionDep, viewer: ViewerDep):
    context = {"viewer": viewer, "page": leaderboard.overview(session, viewer), "json_url": "/api/overview"}
    return render(request, "overview.html", context)


@router.get("/datasets")
def datasets_page(request: Request, viewer: ViewerDep):
    context = {"viewer": viewer, "datasets": leaderboard.list_datasets(), "json_url": "/api/datasets"}
    return render(request, "datasets.html", context)


@router.get("/datasets/{name}")
@public_page("dataset")
def dataset_page(request: Request, name: str, session: SessionDep, viewer: ViewerDep, page: PageDep):
    """The prompts (a page of them), each with its discrimination in the newest IRT fit (statistics at `/irt/NAME`)."""
    detail = leaderboard.dataset_detail(name, page)
    context = {
        "viewer": viewer,
        "dataset": detail,
        "pagination": pagination.links(request, detail["pagination"]),
        "discrimination": irt_views.discrimination_by_prompt(session, name),
        "json_url": _url(f"/api/datasets/{name}", **pagination.non_default(page)),
    }
    return render(request, "dataset.html", context)


# --- leaderboard ------------------------------------------------------------------------------------------------


def _sort_columns(board: dict[str, Any]) -> list[dict[str, Any]]:
    """Each metric column with the link that sorts by it: best first, or the other way round when already sorted."""
    path = f"/leaderboards/{board['dataset']['name']}"
    columns = []
    for column in board["columns"]:
        current = column["metric"] == board["sort"]
        if current:
            href = _url(path, sort=column["metric"], order="asc" if board["order"] == "desc" else "desc", q=board["q"])
        else:
            href = _url(path, sort=column["metric"], q=board["q"])
        direction = {True: "higher is better", False: "lower is better"}.get(column["higher_is_better"], "")
        aria = ("descending" if board["order"] == "desc" else "ascending") if current else "none"
        columns.append({**column, "href": href, "current": current, "aria_sort": aria, "direction": direction})
    return columns


def _ranked_rows(board: dict[str, Any], columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with one cell per column and a rank for those that have a value for the sorted column."""
    rows, rank = [], 0
    for row in board["rows"]:
        has_value = leaderboard.sort_value(row, board["sort"]) is not None
        rank += has_value
        cells = [row["scores"].get(column["metric"]) for column in columns]
        rows.append({**row, "rank": rank if has_value else None, "cells": cells})
    return rows


def _kind(row: dict[str, Any]) -> str:
    return "baseline" if row["is_baseline"] else "public" if row["is_public"] else "private"


def _leaderboard_chart(board: dict[str, Any]) -> dict[str, Any]:
    """The sorted metric as one bar per row that has it, in table order."""
    shown = [row for row in board["rows"] if row["scores"].get(board["sort"], {}).get("corpus") is not None]
    return {
        "title": f"{board['sort']} ({'highest' if board['order'] == 'desc' else 'lowest'} first)",
        "label": board["sort"],
        "labels": [row["system_name"] for row in shown],
        "values": [row["scores"][board["sort"]]["corpus"] for row in shown],
        "kinds": [_kind(row) for row in shown],
    }


@router.get("/leaderboards/{dataset}")
@public_page("leaderboard")
def leaderboard_page(
    request: Request,
    dataset: str,
    session: SessionDep,
    viewer: ViewerDep,
    sort: str | None = None,
    order: str | None = None,
    q: str | None = None,
):
    board = leaderboard.leaderboard(session, dataset, viewer, sort=sort, order=order, q=q)
    columns = _sort_columns(board)
    system_ids = list(dict.fromkeys(row["system_id"] for row in board["rows"]))[:MAX_COMPARED_SYSTEMS]
    context = {
        "viewer": viewer,
        "board": board,
        "columns": columns,
        "rows": _ranked_rows(board, columns),
        "chart": _leaderboard_chart(board),
        "compare_url": _url(f"/compare/{dataset}", systems=",".join(map(str, system_ids))),
        "json_url": _url(f"/api/leaderboards/{dataset}", sort=board["sort"], order=board["order"], q=board["q"]),
        "q_param": "&q=" + quote(board["q"]) if board["q"] else "",
    }
    return render(request, "leaderboard.html", context)


# --- system profile ---------------------------------------------------------------------------------------------


def _links(profile: dict[str, Any]) -> list[dict[str, str]]:
    """Paper, code and weights links; only http(s) addresses become links (the submit form already insists)."""
    labels = {"paper_url": "Paper", "code_url": "Code", "weights_url": "Weights"}
    return [
        {"label": label, "url": profile[key], "linkable": profile[key].startswith(SAFE_LINK_SCHEMES)}
        for key, label in labels.items()
        if profile[key]
    ]


def _submission_chart(submission: dict[str, Any]) -> dict[str, Any] | None:
    """The newest score of each metric on a logarithmic axis, since metrics differ in scale (BLEU-2 0-100,
    distinct-n 0-1, perplexity in the hundreds); values a log axis cannot draw (zero, negative) stay in the table."""
    latest = {score["metric"]: score for score in submission["scores"]}
    drawn = {m: s for m, s in latest.items() if s["corpus"] is not None and s["corpus"] > 0}
    if not drawn:
        return None
    arrows = {True: " ↑", False: " ↓"}
    return {
        "id": f"chart-submission-{submission['id']}",
        "title": f"Automatic results on {submission['dataset']} (logarithmic axis; ↑ higher is better, ↓ lower)",
        "label": "score",
        "labels": [metric + arrows.get(score["higher_is_better"], "") for metric, score in drawn.items()],
        "values": [score["corpus"] for score in drawn.values()],
        "kinds": ["public"] * len(drawn),
        "scale": "logarithmic",
        "left_out": sorted(set(latest) - set(drawn)),
    }


@router.get("/systems/{system_id}")
@public_page("system")
def system_page(request: Request, system_id: str, session: SessionDep, viewer: ViewerDep):
    if not re.fullmatch(r"[0-9]{1,18}", system_id):  # the 404 page, as for an id that does not exist (and fits)
        raise NotFound(f"no system #{system_id}")
    profile = leaderboard.system_profile(session, int(system_id), viewer)
    submissions = [
        {
            **submission,
            "chart": _submission_chart(submission),
            "compare_url": _url(f"/compare/{submission['dataset']}", systems=str(profile["id"])),
        }
        for submission in profile["submissions"]
    ]
    context = {
        "viewer": viewer,
        "profile": profile,
        "links": _links(profile),
        "submissions": submissions,
        "json_url": f"/api/systems/{profile['id']}",
    }
    return render(request, "system.html", context)


# --- comparison -------------------------------------------------------------------------------------------------


def _choices(ranked: list[dict[str, Any]], compared: dict[str, Any], chosen: list[int]) -> list[dict[str, Any]]:
    """Checkboxes: every system on the leaderboard the viewer sees, plus any chosen one that is not ranked there."""
    choices: dict[int, dict[str, Any]] = {}
    for row in [*ranked, *({**s, "system_id": s["id"], "system_name": s["name"]} for s in compared["systems"])]:
        choices.setdefault(
            row["system_id"],
            {
                "id": row["system_id"],
                "name": row["system_name"],
                "is_baseline": row["is_baseline"],
                "is_public": row["is_public"],
                "checked": row["system_id"] in chosen,
            },
        )
    return list(choices.values())


@router.get("/compare/{dataset}")
@public_page("compare")
def compare_page(
    request: Request,
    dataset: str,
    session: SessionDep,
    viewer: ViewerDep,
    page: PageDep,
    systems: Annotated[list[str] | None, Query()] = None,
    q: str | None = None,
):
    """`systems` as the API takes it (`1,2`) or repeated, as the form's checkboxes send it (`systems=1&systems=2`)."""
    system_ids = _system_ids(",".join(systems or []))
    compared = leaderboard.compare(session, get_storage(), dataset, system_ids, viewer, q=q, page=page)
    ranked = leaderboard.leaderboard_rows(session, dataset, viewer)
    prompts = [
        {
            **prompt,
            "answers": [
                {"system": s, "response": r} for s, r in zip(compared["systems"], prompt["responses"], strict=True)
            ],
        }
        for prompt in compared["prompts"]
    ]
    context = {
        "viewer": viewer,
        "page": compared,
        "prompts": prompts,
        "choices": _choices(ranked, compared, system_ids),
        "pagination": pagination.links(request, compared["pagination"]),
        "max_systems": MAX_COMPARED_SYSTEMS,
        "json_url": _url(
            f"/api/compare/{dataset}", systems=",".join(map(str, system_ids)), q=q, **pagination.non_default(page)
        ),
    }
    return render(request, "compare.html", context)


# --- downloads --------------------------------------------------------------------------------------------------


def _downloads() -> dict[str, Any]:
    return {
        "schema_version": exports.SCHEMA_VERSION,
        "kinds": [
            {
                "kind": kind,
                "fields": list(fields),
                "files": [{"format": fmt, "url": f"/api/downloads/{kind}.{fmt}"} for fmt in exports.MEDIA_TYPES],
            }
            for kind, fields in exports.FIELDS.items()
        ],
    }


@router.get("/downloads")
def downloads_page(request: Request, viewer: ViewerDep):
    return render(request, "downloads.html", {"viewer": viewer, "page": _downloads()})
