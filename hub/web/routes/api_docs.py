"""`/docs`: the API's interactive documentation, Swagger UI served from the hub's own static files
(`hub/static/vendor/swagger-ui/`, started by `hub/static/api_docs.js`), so it works offline and under the same strict
Content-Security-Policy as every other page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from hub.web.deps import ViewerDep
from hub.web.templating import render
from hub.web.threads import RequestSessionRoute

router = APIRouter(
    route_class=RequestSessionRoute, tags=["pages"], include_in_schema=False, default_response_class=HTMLResponse
)


@router.get("/docs")
def api_docs(request: Request, viewer: ViewerDep):
    return render(request, "api_docs.html", {"viewer": viewer})
