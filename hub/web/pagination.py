"""`page` and `per_page` query parameters (bounded, so a bad value is a 422 naming it) and the links between pages:
`next`/`prev` URLs in JSON bodies, RFC 8288 `Link` and `X-Total-Count` headers, and the pages' navigation."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Query, Request, Response

from hub.services.platform.pagination import DEFAULT_PER_PAGE, MAX_PAGE, MAX_PER_PAGE, PageRequest, Pagination


def page_request(
    page: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page number, from 1.")] = 1,
    per_page: Annotated[
        int, Query(ge=1, le=MAX_PER_PAGE, description=f"Rows per page (default {DEFAULT_PER_PAGE}).")
    ] = DEFAULT_PER_PAGE,
) -> PageRequest:
    return PageRequest(page=page, per_page=per_page)


PageDep = Annotated[PageRequest, Depends(page_request)]


def page_url(request: Request, page: int | None, *, path: str | None = None) -> str | None:
    """This request's URL (or `path` with the same query) at another page, as a site-relative link."""
    if page is None:
        return None
    url = request.url.include_query_params(page=page)
    return f"{path or url.path}?{url.query}"


def links(request: Request, pagination: Pagination, *, path: str | None = None) -> dict[str, Any]:
    """The pagination of a JSON body or a page: counts plus `next` and `prev` links (None at the ends)."""
    return {
        **pagination.as_dict(),
        "next": page_url(request, pagination.next_page, path=path),
        "prev": page_url(request, pagination.previous_page, path=path),
    }


def set_headers(response: Response, request: Request, pagination: Pagination) -> None:
    """`X-Total-Count` and `Link: <...>; rel="next"` (and prev), for JSON clients that follow headers."""
    response.headers["X-Total-Count"] = str(pagination.total)
    found = links(request, pagination)
    parts = [f'<{found[rel]}>; rel="{rel}"' for rel in ("next", "prev") if found[rel]]
    if parts:
        response.headers["Link"] = ", ".join(parts)


def non_default(page: PageRequest) -> dict[str, int]:
    """`page` and `per_page` where they differ from the defaults, for links that keep the reader's place."""
    chosen = {"page": page.page, "per_page": page.per_page}
    return {k: v for k, v in chosen.items() if v != getattr(PageRequest(), k)}
