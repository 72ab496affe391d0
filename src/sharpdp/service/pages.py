"""The web pages: the analyst's page at ``/`` and the public privacy calculator at ``/calculator``.

Plain HTML, one small vanilla JavaScript file and one CSS file, shipped inside the package
(``sharpdp/service/static/``) and served by the app itself: the pages work offline and fetch
nothing from anywhere else (their ``Content-Security-Policy`` allows only this origin). The
analyst's page calls the token-protected JSON API (``/budget``, ``/datasets``, ``/explain``,
``/queries``, ``/releases/{id}``) with the token the analyst types (kept in the tab's
``sessionStorage`` only); the calculator calls the public ``/calculator/…`` routes
(:mod:`sharpdp.service.calculator`). Numbers the pages print as bounds are rounded up (by the
server, :func:`sharpdp._format.upper`, or by the same directed rounding in ``sharpdp.js``).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["STATIC", "mount"]

#: The pages' files (package data).
STATIC = Path(__file__).resolve().parent / "static"

#: Only this origin: no CDN, no inline script, no framing.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _page(name: str) -> FileResponse:
    return FileResponse(STATIC / name, media_type="text/html; charset=utf-8", headers=_HEADERS)


def mount(app: FastAPI) -> None:
    """Serve the pages (``/``, ``/calculator``) and their assets (``/static/…``) from ``app``."""

    # (HEAD too, as the static files answer it: a monitor's HEAD / got 405)
    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def analyst_page() -> FileResponse:
        return _page("index.html")

    @app.api_route("/calculator", methods=["GET", "HEAD"], include_in_schema=False)
    def calculator_page() -> FileResponse:
        return _page("calculator.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
