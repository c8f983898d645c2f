"""The shared ASGI application: one FastAPI app, routers plugged in by feature.

:func:`create_app` wires the database, OpenAI-shaped error handling, optional bearer-token auth and the
routers (the OpenAI-compatible ``/v1/threads`` and ``/v1/conversations``, and the others), each added with
``app.include_router``.
"""

from __future__ import annotations

import hmac
import os
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable, Iterable
from urllib.parse import urlsplit

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from ..adapters.openai_assistants import AsyncOpenAIAssistantAdapter
from ..mcp_http import is_loopback
from .api_observability import router as api_observability_router
from .api_routes import OWNER_HEADER
from .api_routes import router as api_router
from .dashboard import router as dashboard_router
from .errors import error_body, install_error_handlers
from .openai_routes import router as openai_router
from .responses_routes import router as responses_router

__all__ = ["BearerAuthMiddleware", "GuardMiddleware", "create_app", "rebinding_refusal", "scoped_mcp_refusal"]


class BearerAuthMiddleware:
    """Pure ASGI middleware: every HTTP request must carry ``Authorization: Bearer <a known token>``.

    Other requests get 401 in OpenAI's error shape (``code: "invalid_api_key"``). Tokens are compared in
    constant time.

    Args:
        app: the wrapped ASGI app.
        tokens: accepted tokens (non-empty).
    """

    def __init__(self, app: Any, tokens: Iterable[str]):
        self.app = app
        self.tokens = [t.encode() for t in tokens if t]

    def _allowed(self, scope: dict[str, Any]) -> bool:
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, token = header.partition(b" ")
        if scheme.lower() != b"bearer" or not token.strip():
            return False
        token = token.strip()
        return any(hmac.compare_digest(token, t) for t in self.tokens)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Check the token of HTTP requests, then pass them on (lifespan/other scopes pass unchanged).

        Args:
            scope, receive, send: the ASGI triple.
        """
        if scope["type"] != "http" or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        body = error_body("Missing or invalid bearer token: send 'Authorization: Bearer <token>'.",
                          code="invalid_api_key")
        response = JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


def _local(netloc: str) -> bool:
    """Whether a ``Host`` / ``Origin`` netloc (``name``, ``name:port``, ``[::1]:port``) names this machine."""
    host = netloc.rsplit("@", 1)[-1]
    host = host[:host.index("]") + 1] if host.startswith("[") and "]" in host else host.split(":")[0]
    return bool(host) and is_loopback(host)


class GuardMiddleware:
    """Pure ASGI middleware: ``check(scope)`` returns a response to send instead of passing an HTTP request on,
    or None to let it through (lifespan and other scopes always pass).

    Args:
        app: the wrapped ASGI app. check: one of :func:`rebinding_refusal`, :func:`scoped_mcp_refusal`.
    """

    def __init__(self, app: Any, check: Callable[[dict[str, Any]], JSONResponse | None]):
        self.app = app
        self.check = check

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Send the check's refusal, or pass the request on.

        Args:
            scope, receive, send: the ASGI triple.
        """
        refusal = self.check(scope) if scope["type"] == "http" else None
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}


def rebinding_refusal(scope: dict[str, Any]) -> JSONResponse | None:
    """For a server without tokens (which trusts whoever can reach it: this machine): 421 for a request whose
    ``Host`` or ``Origin`` names another host, i.e. a web page that pointed its own domain at 127.0.0.1 (DNS
    rebinding) to reach the local API from a browser. The same check the MCP SDK applies on ``/mcp``."""
    headers = _headers(scope)
    origin = headers.get("origin")
    if _local(headers.get("host", "")) and (not origin or _local(urlsplit(origin).netloc)):
        return None
    return JSONResponse(error_body("Host or Origin is not this machine (DNS rebinding?); this server without "
                                   "tokens answers local clients only.", code="invalid_host"), status_code=421)


def scoped_mcp_refusal(scope: dict[str, Any]) -> JSONResponse | None:
    """403 for a ``/mcp`` request carrying ``X-AgentBase-User``: this app's MCP endpoint sees every owner (run
    ``agentbase-mcp --http --user-id U`` for an owner-pinned one), so a gateway's owner scope must never be
    silently dropped there."""
    if scope.get("path", "").rstrip("/") != "/mcp" or OWNER_HEADER.lower() not in _headers(scope):
        return None
    return JSONResponse(error_body(f"/mcp is not owner-scoped: {OWNER_HEADER} cannot be honoured here; run "
                                   "`agentbase-mcp --http --user-id U` for an owner-pinned MCP server.",
                                   code="owner_scope_unsupported"), status_code=403)


def create_app(db: Any, *, tokens: Iterable[str] | None = None, title: str = "AgentBase",
               llm: Any = None) -> FastAPI:
    """Build the AgentBase web application.

    Args:
        db: an :class:`~agentbase.engine.AgentBase`, a :class:`~agentbase.sync.SyncAgentBase`, or a database
            path (then the app opens it and closes it on shutdown).
        tokens: bearer tokens; when non-empty every request must send ``Authorization: Bearer <one of them>``
            or gets 401. None or empty: no authentication (bind to loopback only).
        title: the OpenAPI title.
        llm: the :class:`~agentbase.llm.client.LLMClient` that answers ``POST /v1/responses``; None: built from
            the database's ``llm`` settings on first use (no model configured: that route answers 503).

    Returns:
        The FastAPI app, with ``app.state.agentbase`` (the :class:`AgentBase`) and
        ``app.state.openai_adapter``.

    Example:
        >>> import uvicorn                                                   # doctest: +SKIP
        >>> uvicorn.run(create_app("agent.db"), host="127.0.0.1", port=8000)  # doctest: +SKIP
    """
    owned = isinstance(db, (str, os.PathLike))
    if owned:
        from agentbase import AgentBase

        db = AgentBase(db)
    aio = getattr(db, "aio", db)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        """On shutdown, close the Responses route's own LLM client and the database when the app opened it."""
        yield
        if getattr(app.state, "llm_resolved", False) and app.state.llm is not None:  # built from the settings here
            await app.state.llm.aclose()
        if owned:
            await aio.close()

    # No /docs or /redoc pages: FastAPI's defaults load Swagger UI from a CDN; the schema is at /openapi.json.
    app = FastAPI(title=title, version=_version(), lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="AgentBase over HTTP: the JSON API at /api/v1, OpenAI-compatible Threads, "
                              "Conversations and Responses at /v1, MCP at /mcp and the dashboard at /dashboard.")
    app.state.agentbase = aio
    app.state.openai_adapter = AsyncOpenAIAssistantAdapter(aio)
    app.state.llm = llm
    install_error_handlers(app)
    app.include_router(openai_router)
    app.include_router(responses_router)
    app.include_router(api_router)
    app.include_router(api_observability_router)
    app.include_router(dashboard_router)
    accepted = [t for t in (tokens or []) if t]
    try:  # MCP over streamable HTTP at /mcp when the mcp extra is installed
        from ..mcp import mcp_asgi_app

        app.add_route("/mcp", mcp_asgi_app(aio, tokens=accepted), include_in_schema=False)
    except ImportError:
        pass
    app.add_middleware(GuardMiddleware, check=scoped_mcp_refusal)
    if accepted:
        app.add_middleware(BearerAuthMiddleware, tokens=accepted)
    else:
        app.add_middleware(GuardMiddleware, check=rebinding_refusal)
    return app


def _version() -> str:
    from .. import __version__

    return __version__
