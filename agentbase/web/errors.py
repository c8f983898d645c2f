"""Error responses in OpenAI's JSON shape, and the exception handlers that produce them.

Every error body is ``{"error": {"message", "type", "param", "code"}}`` (what the OpenAI SDK parses into
``openai.APIStatusError.body``). Unexpected exceptions become a 500 with a generic message: no stack trace or
exception text ever reaches the client.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentbase.errors import AgentBaseError, ConfigError, DimensionMismatchError, NotFoundError

__all__ = ["error_body", "error_response", "install_error_handlers"]

log = logging.getLogger("agentbase.web")

_STATUS_TYPES = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_error",
                 501: "invalid_request_error"}


def error_body(message: str, *, type: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> dict[str, Any]:
    """Build an OpenAI error body.

    Args:
        message: human-readable text. type: OpenAI error type. param: the parameter at fault.
        code: a short machine-readable code.

    Returns:
        ``{"error": {"message", "type", "param", "code"}}``.
    """
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def error_response(status: int, message: str, *, type: str | None = None, param: str | None = None,
                   code: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    """Return a JSON error response in OpenAI's shape.

    Args:
        status: HTTP status. message: human-readable text. type: OpenAI error type (default
            ``invalid_request_error`` below 500, ``server_error`` from 500).
        param, code: as in :func:`error_body`.
        headers: extra response headers.

    Returns:
        The :class:`~fastapi.responses.JSONResponse`.
    """
    kind = type or _STATUS_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return JSONResponse(error_body(message, type=kind, param=param, code=code), status_code=status,
                        headers=headers)


def _param_of(loc: tuple[Any, ...]) -> str | None:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or None


async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    first = errors[0] if errors else {}
    kind, loc = first.get("type"), tuple(first.get("loc", ()))
    param = _param_of(loc)
    json_body = request.headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"
    if kind == "json_invalid":  # loc is ("body", character offset)
        where = f" at character {loc[-1]}" if len(loc) > 1 else ""
        reason = (first.get("ctx") or {}).get("error")
        param, message = None, f"We could not parse the JSON body of your request{where}" + \
            (f": {reason}." if reason else ".")
    elif kind == "missing" and param is None:
        message = "The request has no body: send a JSON object (Content-Type: application/json)."
    elif kind == "extra_forbidden":
        message = f"Unknown parameter: '{param}'."
    elif kind == "missing":
        message = f"Missing required parameter: '{param}'."
    elif param is None and not json_body:
        message = "Send the request body as a JSON object with Content-Type: application/json."
    elif param is None:
        message = f"Invalid request body: {first.get('msg', 'invalid input')}."
    else:
        message = f"Invalid value for '{param}': {first.get('msg', 'invalid input')}."
    return error_response(400, message, param=param)


async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    if exc.status_code in (404, 405):
        return error_response(exc.status_code, f"Invalid URL ({request.method} {request.url.path})",
                              headers=getattr(exc, "headers", None))
    detail = exc.detail if isinstance(exc.detail, str) else "request failed"
    return error_response(exc.status_code, detail, headers=getattr(exc, "headers", None))


async def _not_found(request: Request, exc: NotFoundError) -> JSONResponse:
    return error_response(404, str(exc), param=getattr(exc, "param", None))


async def _bad_input(request: Request, exc: ConfigError) -> JSONResponse:
    if isinstance(exc, DimensionMismatchError):  # a server configuration problem, not the client's input
        return await _agentbase(request, exc)
    return error_response(400, str(exc), param=getattr(exc, "param", None))


async def _agentbase(request: Request, exc: AgentBaseError) -> JSONResponse:
    log.error("AgentBase error on %s %s: %s", request.method, request.url.path, type(exc).__name__,
              exc_info=exc)
    return error_response(500, "The server had an error while processing your request.")


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "The server had an error while processing your request.")


def install_error_handlers(app: FastAPI) -> None:
    """Register the OpenAI-shaped handlers on ``app``.

    400 for bad input (AgentBase ``ValidationError``/``ConfigError`` and request validation, which FastAPI
    would report as 422), 404 for unknown ids and routes, 405 for wrong methods, 500 (generic text) for
    anything else.

    Args:
        app: the FastAPI application.
    """
    app.add_exception_handler(RequestValidationError, _validation)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http)  # type: ignore[arg-type]
    app.add_exception_handler(NotFoundError, _not_found)  # type: ignore[arg-type]
    app.add_exception_handler(ConfigError, _bad_input)  # type: ignore[arg-type]
    app.add_exception_handler(AgentBaseError, _agentbase)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected)
