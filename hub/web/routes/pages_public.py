"""Public HTML pages, twins of the public JSON API: overview, datasets, leaderboards, profiles, comparison, downloads.

Each route renders the view-model its JSON twin serves (hub.services.publishing.leaderboard / exports), plus only
what a page needs on top: links for sorting and navigation, and the data of its charts. Visibility is the services' job.
"""

from __future__ import annotations

import re
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from hub.errors import NotFound
from hub.services.publishing import comparison, exports, leaderboard
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


def _kept(board: dict[str, Any]) -> dict[str, Any]:
    """What a leaderboard link keeps besides the sort: the name filter and the chosen columns."""
    return {"q": board["q"], "columns": board["chosen"]}


def _board_url(board: dict[str, Any], **params: Any) -> str:
    """The leaderboard with `params` (sort, order) and what it keeps, chosen columns repeated as the form sends."""
    kept = {**params, **{k: v for k, v in _kept(board).items() if k not in params}}  # sort first, as in every link
    query = urlencode({k: v for k, v in kept.items() if v not in (None, "", [])}, doseq=True)
    return f"/leaderboards/{board['dataset']['name']}" + (f"?{query}" if query else "")


def _sort_columns(board: dict[str, Any]) -> list[dict[str, Any]]:
    """Each metric column with the link that sorts by it: best first, or the other way round when already sorted."""
    columns = []
    for column in board["columns"]:
        current = column["metric"] == board["sort"]
        if current:
            href = _board_url(board, sort=column["metric"], order="asc" if board["order"] == "desc" else "desc")
        else:
            href = _board_url(board, sort=column["metric"])
        direction = {True: "higher is better", False: "lower is better"}.get(column["higher_is_better"], "")
        aria = ("descending" if board["order"] == "desc" else "ascending") if current else "none"
        columns.append({**column, "href": href, "current": current, "aria_sort": aria, "direction": direction})
    return columns


def _table_rows(board: dict[str, Any], columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with one cell per metric column shown."""
    return [{**row, "cells": [row["scores"].get(column["metric"]) for column in columns]} for row in board["rows"]]


HEAT_SHADES = 10  # CSS classes heat-0 .. heat-9, from 0-10% to 90-100% win rate


def _heat_map(board: dict[str, Any]) -> dict[str, Any] | None:
    """The win-rate matrix with a shade per cell (a CSS class; the number is always written in the cell)."""
    matrix = board["win_matrix"]
    if matrix is None:
        return None
    rows = []
    for system, cells in zip(matrix["systems"], matrix["cells"], strict=True):
        shaded = []
        for other, cell in zip(matrix["systems"], cells, strict=True):
            rate = cell["win_rate"] if cell else None
            shade = None if rate is None else f"heat-{min(HEAT_SHADES - 1, int(rate * HEAT_SHADES))}"
            shaded.append({"cell": cell, "shade": shade, "other": other, "self": other["id"] == system["id"]})
        rows.append({"system": system, "cells": shaded})
    return {**matrix, "rows": rows}


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
    columns: Annotated[list[str] | None, Query()] = None,
):
    """`columns` as the chooser's checkboxes send it (repeated) or as the API takes it (comma-separated)."""
    board = leaderboard.leaderboard(session, dataset, viewer, sort=sort, order=order, q=q, columns=columns)
    metric_columns = _sort_columns(board)
    system_ids = list(dict.fromkeys(row["system_id"] for row in board["rows"]))[:MAX_COMPARED_SYSTEMS]
    kept = urlencode({k: v for k, v in _kept(board).items() if v}, doseq=True)
    context = {
        "viewer": viewer,
        "board": board,
        "columns": metric_columns,
        "rows": _table_rows(board, metric_columns),
        "chart": _leaderboard_chart(board),
        "heat_map": _heat_map(board),
        "compare_url": _url(f"/compare/{dataset}", systems=",".join(map(str, system_ids))),
        "json_url": _board_url(board, sort=board["sort"], order=board["order"]).replace("/", "/api/", 1),
        "q_param": "&" + kept if kept else "",
        "all_columns_url": _board_url(
            {**board, "chosen": None}, sort=board["sort"], order=board["order"]
        ),  # what every sort link keeps: the name filter, the chosen columns
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


def _submission_charts(submission: dict[str, Any]) -> list[dict[str, Any]]:
    """Small charts of the newest score of each metric, never metrics of different scales on one axis: those whose
    values lie between 0 and 1 (distinct-n, embedding-average) share a 0-1 axis, every other metric (BLEU 0-100,
    perplexity in the hundreds) gets its own linear axis from 0; each bar is labelled with its value."""
    latest = {score["metric"]: score for score in submission["scores"] if score["corpus"] is not None}
    arrows = {True: " ↑", False: " ↓"}
    unit = {m: s for m, s in latest.items() if 0 <= s["corpus"] <= 1}
    groups = ([("0 to 1", unit)] if unit else []) + [(m, {m: s}) for m, s in latest.items() if m not in unit]
    charts = []
    for index, (scale, scores) in enumerate(groups):
        spec = {
            "id": f"chart-submission-{submission['id']}-{index}",
            "title": ", ".join(scores) + (" (scale 0 to 1)" if scale == "0 to 1" else ""),
            "label": "score",
            "labels": [metric + arrows.get(score["higher_is_better"], "") for metric, score in scores.items()],
            "values": [score["corpus"] for score in scores.values()],
            "kinds": ["public"] * len(scores),
            "value_labels": True,
        }
        charts.append({**spec, **({"min": 0, "max": 1} if scale == "0 to 1" else {})})
    return charts


@router.get("/systems/{system_id}")
@public_page("system")
def system_page(request: Request, system_id: str, session: SessionDep, viewer: ViewerDep):
    if not re.fullmatch(r"[0-9]{1,18}", system_id):  # the 404 page, as for an id that does not exist (and fits)
        raise NotFound(f"no system #{system_id}")
    profile = leaderboard.system_profile(session, int(system_id), viewer)
    submissions = [
        {
            **submission,
            "charts": _submission_charts(submission),
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
    compared = comparison.compare(session, get_storage(), dataset, system_ids, viewer, q=q, page=page)
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
