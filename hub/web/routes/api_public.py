"""Public read API, the JSON twin of every page: datasets, leaderboards, systems, comparisons, downloads.

Every route works with and without a token; what a viewer may not see answers 404 like a missing id.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Annotated, Any
from weakref import WeakKeyDictionary

import anyio
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse

from hub.db import get_engine
from hub.errors import BadRequest
from hub.services.publishing import comparison, exports, leaderboard
from hub.services.publishing.read_side import MAX_ENTRY_BYTES
from hub.services.statistics import irt_views
from hub.storage import get_storage
from hub.web import pagination
from hub.web.deps import DatabaseId, SessionDep, ViewerDep
from hub.web.inputs import parse_id
from hub.web.openapi_docs import error_responses
from hub.web.pagination import PageDep
from hub.web.read_cache import cached_download, public_page
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, prefix="/api", tags=["public"], responses=error_responses(404))
MAX_COMPARED_SYSTEMS = 20
# Downloads built at once per process; the others wait for a turn without a thread or a database connection, so a
# crowd of downloads leaves the pool to the pages.
CONCURRENT_EXPORT_BUILDS = 2
_export_builds: WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = WeakKeyDictionary()


def _export_limiter() -> anyio.CapacityLimiter:
    """The running event loop's limiter (a limiter belongs to one loop; tests start many)."""
    loop = asyncio.get_running_loop()
    if loop not in _export_builds:
        _export_builds[loop] = anyio.CapacityLimiter(CONCURRENT_EXPORT_BUILDS)
    return _export_builds[loop]


def _system_ids(raw: str | None) -> list[int]:
    """`1,2,3` -> [1, 2, 3], duplicates dropped, order kept."""
    ids: list[int] = []
    for part in (raw or "").split(","):
        if not part.strip():
            continue
        system_id = parse_id(part, field="systems")
        if system_id not in ids:
            ids.append(system_id)
    if len(ids) > MAX_COMPARED_SYSTEMS:
        raise BadRequest(f"compare at most {MAX_COMPARED_SYSTEMS} systems at a time", field="systems")
    return ids


@router.get("/overview")
@public_page("api-overview")
def overview(request: Request, session: SessionDep, viewer: ViewerDep) -> dict[str, Any]:
    """Datasets with their number of ranked entries, the number of systems and the latest evaluated entries."""
    return leaderboard.overview(session, viewer)


@router.get("/datasets")
def datasets() -> list[dict[str, Any]]:
    return leaderboard.list_datasets()


@router.get("/datasets/{name}")
def dataset(name: str, request: Request, response: Response, page: PageDep) -> dict[str, Any]:
    """The manifest and one page of prompts; `pagination` has the counts and the `next`/`prev` links."""
    detail = leaderboard.dataset_detail(name, page)
    pagination.set_headers(response, request, detail["pagination"])
    return {**detail, "pagination": pagination.links(request, detail["pagination"])}


@router.get("/datasets/{name}/prompts/{prompt_id}")
@public_page("api-prompt")
def prompt(name: str, prompt_id: str, request: Request, session: SessionDep) -> dict[str, Any]:
    """A prompt's conversation, references, its discrimination in the dataset's newest IRT fit and, under
    `responses`, every public system's response to it (its newest public scored submission on this release)."""
    return comparison.prompt_page(session, get_storage(), name, prompt_id)


@router.get("/irt/{dataset}")
@public_page("api-irt")
def dataset_irt(dataset: str, request: Request, session: SessionDep) -> dict[str, Any]:
    """The newest IRT fit of the dataset's public judgements (`fit` is null before the first): abilities with
    intervals, every pairwise difference with corrected p-values, prompt discriminations, the method signature."""
    return irt_views.dataset_irt(session, dataset)


@router.get("/leaderboards/{dataset}")
@public_page("api-leaderboard")
def dataset_leaderboard(
    dataset: str,
    request: Request,
    session: SessionDep,
    viewer: ViewerDep,
    sort: str | None = None,
    order: str | None = None,
    q: str | None = None,
    columns: Annotated[list[str] | None, Query()] = None,
) -> dict[str, Any]:
    """`sort`: a column (default: IRT ability, then human win rate; none, unranked, without either); `order`: asc
    or desc (default: best first for the column); `q`: only systems whose name contains it (ignoring case);
    `columns`: only these result columns (keys as in `choosable`, comma-separated or repeated; default all).
    `win_matrix`: the human win rate of each listed system against each other it was judged against, with n."""
    return leaderboard.leaderboard(session, dataset, viewer, sort=sort, order=order, q=q, columns=columns)


@router.get("/systems/{system_id}")
@public_page("api-system")
def system(system_id: DatabaseId, request: Request, session: SessionDep, viewer: ViewerDep) -> dict[str, Any]:
    return leaderboard.system_profile(session, system_id, viewer)


@router.get("/compare/{dataset}")
@public_page("api-compare")
def compare(
    dataset: str,
    request: Request,
    response: Response,
    session: SessionDep,
    viewer: ViewerDep,
    page: PageDep,
    systems: str | None = None,
    q: str | None = None,
) -> dict[str, Any]:
    """`systems=1,2,3`: the systems side by side; `q`: keep prompts whose context or responses contain it; one page
    of them (`matched` counts them all; `pagination` has the counts and the `next`/`prev` links)."""
    system_ids = _system_ids(systems)
    compared = comparison.compare(session, get_storage(), dataset, system_ids, viewer, q=q, page=page)
    pagination.set_headers(response, request, compared["pagination"])
    return {**compared, "pagination": pagination.links(request, compared["pagination"])}


@router.get("/downloads/{filename}")
async def download(filename: str, request: Request) -> Response:
    """`systems|submissions|scores|responses|ratings|irt_*` `.jsonl|.csv`: all public data, the same for every
    caller. The file is built whole first and then sent, so a slow client never holds a database connection; built
    once per data version (hub.web.read_cache), unless larger than the cache keeps."""
    exports.parse_filename(filename)  # an unknown name is a 404 before anything waits

    async def build() -> Response:
        spool = partial(exports.spool_export, get_engine(), get_storage(), filename)
        export = await anyio.to_thread.run_sync(spool, limiter=_export_limiter())
        if export.size <= MAX_ENTRY_BYTES:
            body = await anyio.to_thread.run_sync(b"".join, export.pieces())
            return Response(body, media_type=export.media_type, headers=export.headers)
        headers = {**export.headers, "Content-Length": str(export.size)}
        return StreamingResponse(export.pieces(), media_type=export.media_type, headers=headers)

    return await cached_download(request, "download", build)
