"""The FastAPI app of ``text2sql serve``: the page (:mod:`.pages`), the JSON API (:mod:`.api`), the guard, the assets.

Every asset comes from the installed package (``static/``, and Plotly's own ``plotly.min.js``), so
the page works offline. Errors come back as JSON ``{"detail": ...}`` that names the fix: a user's
mistake 422, a full queue 503 with ``Retry-After``, an answer past its time limit 504.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from text2sql_dspy.programs.errors import Text2SQLError
from text2sql_dspy.programs.web import api, pages
from text2sql_dspy.programs.web.guard import LOOPBACK_HOSTS, Guard, TrustedHosts
from text2sql_dspy.programs.web.jobs import QueueFull
from text2sql_dspy.programs.web.service import Service

logger = logging.getLogger(__name__)
PACKAGE = "text2sql_dspy.programs.web"


def plotly_js() -> Path:
    """``plotly.min.js`` as the installed ``plotly`` package ships it."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def create_app(service: Service, *, allowed_hosts: frozenset[str] | None = None) -> FastAPI:
    """The app over ``service``. ``allowed_hosts``: Host names to answer (None: any; the token guards it)."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        service.close()

    app = FastAPI(
        title="text2sql",
        summary="Ask a database questions in plain language; get validated, read-only SQL and its rows.",
        docs_url=None, redoc_url=None,  # Swagger UI and ReDoc load from a CDN; /api is the offline OpenAPI page
        lifespan=lifespan,
    )
    app.state.service = service
    app.include_router(api.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(packages=[(PACKAGE, "static")]), name="static")

    @app.get("/assets/plotly.min.js", include_in_schema=False)
    def plotly_asset() -> FileResponse:
        return FileResponse(plotly_js(), media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})

    @app.exception_handler(Text2SQLError)
    async def user_error(_request: Request, exc: Text2SQLError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    @app.exception_handler(QueueFull)
    async def queue_full(_request: Request, exc: QueueFull) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": str(exc.retry_after_s)})

    @app.exception_handler(Exception)
    async def server_error(_request: Request, exc: Exception) -> JSONResponse:
        logger.exception("request failed")
        return JSONResponse({"detail": f"the server failed on this request ({type(exc).__name__}); see its log."},
                            status_code=500)

    app.add_middleware(Guard, token=service.config.token, max_body_bytes=service.config.max_body_bytes)
    if allowed_hosts is not None:  # added last, so it runs first
        app.add_middleware(TrustedHosts, allowed_hosts=allowed_hosts)
    return app


def loopback_hosts(host: str) -> frozenset[str] | None:
    """The Host names a server bound to ``host`` answers: the loopback names on loopback, else any."""
    return LOOPBACK_HOSTS if host in LOOPBACK_HOSTS else None
