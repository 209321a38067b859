"""Checks in front of every request: the Host header, the Origin of a POST, the token, the body size.

* On loopback, a Host header other than the loopback names is refused with 421 (DNS rebinding):
  :class:`TrustedHosts`, Starlette's ``TrustedHostMiddleware`` deciding.
* A POST whose Origin is another site (a page elsewhere posting to this server) is refused with 403.
* With a token (``TEXT2SQL_TOKEN``; required when the server binds beyond loopback), every request,
  pages and assets included, must carry it or is refused with 401: ``Authorization: Bearer <token>``,
  or the cookie a browser gets by opening ``/?token=<token>`` once (read by ``fastapi.security``).
* A body larger than ``max_body_bytes`` is refused with 413 before the app reads it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from urllib.parse import urlsplit

from fastapi.security import APIKeyCookie, APIKeyQuery, HTTPBearer
from starlette.datastructures import Headers
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_COOKIE = "text2sql_token"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
BEARER = HTTPBearer(auto_error=False)
COOKIE = APIKeyCookie(name=TOKEN_COOKIE, auto_error=False)
LOGIN = APIKeyQuery(name="token", auto_error=False)
ADMITTED = "text2sql.host_admitted"


class TrustedHosts:
    """ASGI middleware that answers only the Host names ``allowed_hosts`` (Starlette's ``TrustedHostMiddleware``
    decides); any other is refused with 421 naming the address to use."""

    def __init__(self, app: ASGIApp, *, allowed_hosts: Iterable[str]):
        self.app = app
        self.check = TrustedHostMiddleware(_admit, allowed_hosts=sorted(allowed_hosts), www_redirect=False)
        self.refusal = _error(421, f"this server answers only as {', '.join(sorted(allowed_hosts))}; use that address.")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            probe = dict(scope)
            await self.check(probe, receive, _discard)  # the check's own refusal (400) is dropped for ours
            if not probe.get(ADMITTED):
                await self.refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _admit(scope: Scope, _receive: Receive, _send: Send) -> None:
    scope[ADMITTED] = True


async def _discard(_message: Message) -> None:
    return None


class Guard:
    """ASGI middleware: the Origin of a POST, then the token (``token`` None: none needed), then the body size."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int):
        self.app = app
        self.token = token or None
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        refusal = await self._refusal(connection)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        body, too_large = await _read_body(receive, self.max_body_bytes, connection.headers)
        if too_large:
            too_large = _error(413, f"the request body is larger than {self.max_body_bytes:,} bytes; send less.")
            await too_large(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _refusal(self, connection: HTTPConnection) -> Response | None:
        method, headers = connection.scope["method"], connection.headers
        origin = headers.get("origin")
        if method in UNSAFE_METHODS and origin and urlsplit(origin).netloc != headers.get("host", ""):
            return _error(403, "a page from another site may not post to this server.")
        if self.token is None:
            return None
        login = await LOGIN(connection)
        if method == "GET" and _same(login, self.token):
            return _login_redirect(connection, login)
        if _same(await _presented_token(connection), self.token):
            return None
        return _error(401, "this server needs its token: send 'Authorization: Bearer <TEXT2SQL_TOKEN>', "
                           "or open /?token=<TEXT2SQL_TOKEN> once in the browser.")


async def _presented_token(connection: HTTPConnection) -> str | None:
    """The bearer token if the request has an ``Authorization: Bearer`` header, else the login cookie."""
    bearer = await BEARER(connection)
    return bearer.credentials if bearer is not None else await COOKIE(connection)


def _same(presented: str | None, token: str) -> bool:
    return bool(presented) and secrets.compare_digest(presented.encode(), token.encode())


def _login_redirect(connection: HTTPConnection, token: str) -> Response:
    """To the same address without ``token``, setting the cookie that carries it from then on."""
    url = connection.url.remove_query_params("token")
    response = RedirectResponse(url.path + (f"?{url.query}" if url.query else ""), status_code=303)
    response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict", path="/")
    return response


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status)


async def _read_body(receive: Receive, limit: int, headers: Headers) -> tuple[bytes, bool]:
    """The whole body, read up to ``limit``; ``too_large`` as soon as it (or its Content-Length) exceeds it."""
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return b"", True
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks), False


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body already read, then waits as the original does (disconnects)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
