"""Checks in front of every request: the token, the body size, the Host header and the Origin of a POST.

* With a token (``TEXT2SQL_TOKEN``; required when the server binds beyond loopback), every request,
  pages and assets included, must carry it: ``Authorization: Bearer <token>``, or the cookie a
  browser gets by opening ``/?token=<token>`` once.
* A body larger than ``max_body_bytes`` is refused with 413 before the app reads it.
* On loopback, a Host header other than the loopback names is refused (DNS rebinding), and so is
  a POST whose Origin is another site (a page elsewhere posting to this server).
"""

from __future__ import annotations

import hmac
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse, RedirectResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_COOKIE = "text2sql_token"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class Guard:
    """ASGI middleware; ``allowed_hosts`` None lets any Host through (the token then guards the server)."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int, allowed_hosts: frozenset[str] | None):
        self.app = app
        self.token = token or None
        self.max_body_bytes = max_body_bytes
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        body, too_large = await _read_body(receive, self.max_body_bytes, headers)
        if too_large:
            await _error(413, f"the request body is larger than {self.max_body_bytes:,} bytes; send less.")(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    def _refusal(self, scope: Scope, headers: Headers) -> Any:
        host = _hostname(headers.get("host", ""))
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            return _error(421, f"this server answers only as {', '.join(sorted(self.allowed_hosts))}; use that address.")
        origin = headers.get("origin")
        if scope["method"] in UNSAFE_METHODS and origin and urlsplit(origin).netloc != headers.get("host", ""):
            return _error(403, "a page from another site may not post to this server.")
        if self.token is None:
            return None
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if scope["method"] == "GET" and "token" in query and _same(query["token"], self.token):
            return _login_redirect(scope, query)
        if _same(_presented_token(headers), self.token):
            return None
        return _error(401, "this server needs its token: send 'Authorization: Bearer <TEXT2SQL_TOKEN>', "
                           "or open /?token=<TEXT2SQL_TOKEN> once in the browser.")


def _presented_token(headers: Headers) -> str:
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == TOKEN_COOKIE:
            return value
    return ""


def _same(presented: str, token: str) -> bool:
    return bool(presented) and hmac.compare_digest(presented.encode(), token.encode())


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _login_redirect(scope: Scope, query: dict[str, str]) -> Any:
    token = query.pop("token")
    location = scope["path"] + (f"?{urlencode(query)}" if query else "")
    response = RedirectResponse(location, status_code=303)
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
