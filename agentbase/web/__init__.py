"""AgentBase over HTTP: the shared FastAPI app (``pip install 'agentbase[web]'``).

``create_app(db, tokens=...)`` returns the ASGI app; ``agentbase serve`` runs it with uvicorn. FastAPI is
imported on first use, so ``import agentbase.web`` works without the extra and names the pip command when it
is missing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name != "create_app":
        raise AttributeError(f"module 'agentbase.web' has no attribute {name!r}")
    try:
        from .app import create_app
    except ImportError as exc:
        if getattr(exc, "name", "") in ("fastapi", "starlette", "pydantic"):
            from agentbase.errors import MissingDependencyError

            raise MissingDependencyError("fastapi", "web") from exc
        raise
    return create_app
