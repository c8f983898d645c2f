"""MCP over streamable HTTP: a standalone app for ``agentbase-mcp --http`` and an endpoint for ``agentbase serve``.

127.0.0.1 by default; a non-loopback host is refused unless bearer tokens are configured
(``AGENTBASE_AUTH__TOKENS``), and with tokens every request without ``Authorization: Bearer <token>`` gets 401.
Loopback servers keep the SDK's DNS-rebinding protection (Host and Origin must be local).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
from collections.abc import Iterable
from typing import Any

from .engine import AgentBase
from .errors import ConfigError

__all__ = ["http_app", "is_loopback", "mcp_asgi_app", "refuse_open_bind"]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``).

    Args:
        host: a host name or IP address.

    Returns:
        Whether binding there is reachable only from this machine.
    """
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_UNAUTHORIZED = json.dumps({"error": {"message": "Missing or invalid bearer token: send 'Authorization: Bearer "
                                              "<token>'.", "type": "invalid_request_error", "param": None,
                                   "code": "invalid_api_key"}}).encode()


class _BearerGate:
    """Pure ASGI gate: HTTP requests need ``Authorization: Bearer <token>`` for one of ``tokens`` (else 401)."""

    def __init__(self, app: Any, tokens: Iterable[str]):
        self.app, self.tokens = app, [t.encode() for t in tokens if t]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.tokens:
            scheme, _, token = dict(scope.get("headers") or []).get(b"authorization", b"").partition(b" ")
            if scheme.lower() != b"bearer" or not any(hmac.compare_digest(token.strip(), t) for t in self.tokens):
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(_UNAUTHORIZED)).encode())]})
                await send({"type": "http.response.body", "body": _UNAUTHORIZED})
                return
        await self.app(scope, receive, send)


def _security(host: str, tokens: list[str]) -> Any:
    from mcp.server.transport_security import TransportSecuritySettings

    if tokens and not is_loopback(host):  # remote clients use real host names; the token is the protection
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = ["127.0.0.1", "localhost", "[::1]"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=hosts + [f"{h}:*" for h in hosts],
                                     allowed_origins=[f"http://{h}:*" for h in hosts])


def http_app(db: AgentBase, *, tokens: Iterable[str] | None = None, host: str = "127.0.0.1",
             path: str = "/mcp", user_id: str | None = None) -> Any:
    """The streamable-HTTP MCP endpoint as a standalone ASGI app (its lifespan runs the session manager).

    Args:
        db: the database. tokens: bearer tokens (None/empty: no authentication, loopback only).
        host: the bind host (loopback hosts keep DNS-rebinding protection on). path: the endpoint path.
        user_id: pin every call to this owner.

    Returns:
        An ASGI application for uvicorn.

    Raises:
        ConfigError: ``host`` is not loopback and no token is configured.
    """
    accepted = [t for t in (tokens or []) if t]
    from .mcp import create_server

    refuse_open_bind(host, accepted)
    server = create_server(db, user_id=user_id)
    app = server.streamable_http_app(streamable_http_path=path, host=host, transport_security=_security(host, accepted))
    return _BearerGate(app, accepted) if accepted else app


class _LazyMCPEndpoint:
    """An ASGI endpoint that starts the MCP session manager on first use (mounted apps get no lifespan)."""

    def __init__(self, server: Any, tokens: list[str]):
        server.streamable_http_app(streamable_http_path="/", transport_security=_security("0.0.0.0" if tokens
                                                                                           else "127.0.0.1", tokens))
        self.manager = server.session_manager
        self._ready: asyncio.Event | None = None
        self._task: asyncio.Task | None = None

    async def _serve(self) -> None:
        async with self.manager.run():
            assert self._ready is not None
            self._ready.set()
            await asyncio.Event().wait()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if self._ready is None:
            self._ready = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._serve())
        await self._ready.wait()
        await self.manager.handle_request(scope, receive, send)


def mcp_asgi_app(db: AgentBase, *, tokens: Iterable[str] | None = None, user_id: str | None = None) -> Any:
    """An ASGI endpoint for MCP over streamable HTTP to add to another app (``agentbase serve`` uses ``/mcp``).

    It starts its session manager on the first request, so it needs no lifespan hook. Authentication is the
    host app's job (``agentbase serve`` checks bearer tokens for every path).

    Args:
        db: the database. tokens: the host app's tokens (with tokens, DNS-rebinding protection is off because
            every request is authenticated). user_id: pin every call to this owner.

    Returns:
        An ASGI callable; use ``app.add_route("/mcp", endpoint)`` or ``app.mount``.
    """
    from .mcp import create_server

    return _LazyMCPEndpoint(create_server(db, user_id=user_id), [t for t in (tokens or []) if t])


def refuse_open_bind(host: str, tokens: list[str]) -> None:
    """Refuse to listen on a non-loopback ``host`` without tokens.

    Args:
        host: the bind host. tokens: the configured bearer tokens.

    Raises:
        ConfigError: ``host`` is not loopback and ``tokens`` is empty.
    """
    if not is_loopback(host) and not tokens:
        raise ConfigError(f"refusing to listen on {host!r} without authentication: set AGENTBASE_AUTH__TOKENS "
                          "(a JSON list of bearer tokens) or bind to 127.0.0.1")
