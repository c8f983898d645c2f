"""The AgentBase dashboard: server-rendered HTML (Jinja2) with plotly figures, at ``/dashboard``.

Views: overview (timeline of writes, activity heatmap, category sunburst, freshness distribution, tag cloud,
activity feed), entry browser with search and filters, entry detail with history and diffs, sessions with their
messages and extracted memories, retrieval trace list and viewer (each ``find()`` step with latency and candidate
counts, and the per-result ``why`` of the ``final`` step), and the entity graph. plotly.js is served from the
installed ``plotly`` wheel at ``/dashboard/static/plotly.min.js``: no CDN, nothing fetched from the internet.

``agentbase-web ./my_agent.db 8080`` serves it alone (with the JSON API); ``agentbase serve`` serves it too. The
dashboard reads every owner's data, so owner-scoped requests (``X-AgentBase-User``) get 403; with bearer tokens
configured every request needs ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections import defaultdict
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from agentbase.errors import AgentBaseError, NotFoundError

from .charts import (
    activity_feed,
    freshness_figure,
    graph_figure,
    heatmap_figure,
    sunburst_figure,
    tag_cloud,
    timeline_figure,
    trace_figures,
    url_segment,
)

__all__ = ["main", "router"]

router = APIRouter(prefix="/dashboard", include_in_schema=False)

MAX_ENTRIES = 20_000  # entries read for the overview charts (newest first)
_NAV = [("", "Overview"), ("/entries", "Entries"), ("/sessions", "Sessions"), ("/traces", "Traces"),
        ("/graph", "Entity graph")]
_env: Any = None
_plotly_js: tuple[bytes, str] | None = None


def _templates() -> Any:
    global _env
    if _env is None:
        import jinja2

        _env = jinja2.Environment(loader=jinja2.PackageLoader("agentbase.web", "templates"),
                                  autoescape=jinja2.select_autoescape(["html"]), trim_blocks=True,
                                  lstrip_blocks=True)
        _env.filters["when"] = lambda d: d.strftime("%Y-%m-%d %H:%M") if isinstance(d, datetime) else \
            ("" if d is None else d)
        _env.filters["pretty"] = lambda v: json.dumps(v, ensure_ascii=False, indent=2, default=str)
        _env.filters["seg"] = url_segment  # an id in a link: one path segment ("chat#1", "q?x=1", "a/b")
    return _env


def _base(request: Request) -> str:
    return request.scope.get("root_path", "") + "/dashboard"


def _render(request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    base = _base(request)
    page = _templates().get_template(template).render(base=base, nav=[(base + p, label) for p, label in _NAV],
                                                      path=request.url.path, **ctx)
    return HTMLResponse(page, status_code=status, headers={"Cache-Control": "no-store"})


def _db(request: Request) -> Any:
    if request.headers.get("x-agentbase-user") is not None:
        from fastapi.exceptions import HTTPException

        raise HTTPException(403, "The dashboard spans every owner; it is not available to owner-scoped requests.")
    return request.app.state.agentbase


def _fig(fig: Any, div_id: str) -> str:
    fig.update_layout(margin=dict(l=40, r=20, t=30, b=40), template="plotly_white", font=dict(size=12))
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


async def _entries(db: Any) -> list[Any]:
    out: list[Any] = []
    while len(out) < MAX_ENTRIES:
        page = await db.list(limit=5000, offset=len(out), include_archived=True, exclude_superseded=False)
        out += page
        if len(page) < 5000:
            break
    return out


# ------------------------------------------------------------------------------------------------- routes
@router.get("/static/plotly.min.js")
async def plotly_js(request: Request) -> Response:
    """plotly.js from the installed plotly wheel (cached by ETag).

    Returns:
        The JavaScript, or 304 when the browser's copy (``If-None-Match``) is current.
    """
    global _plotly_js
    if _plotly_js is None:
        from plotly.offline import get_plotlyjs

        body = get_plotlyjs().encode("utf-8")
        _plotly_js = (body, '"' + hashlib.sha256(body).hexdigest()[:16] + '"')
    body, etag = _plotly_js
    headers = {"ETag": etag, "Cache-Control": "private, max-age=86400"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/javascript", headers=headers)


@router.get("", response_class=HTMLResponse)
@router.get("/", response_class=HTMLResponse)
async def overview(request: Request) -> HTMLResponse:
    """Overview: counts, timeline of writes, activity heatmap, sunburst, freshness, tag cloud, activity feed.

    Returns:
        The HTML page.
    """
    db = _db(request)
    stats = await db.stats()
    entries = await _entries(db)
    sessions = await db.list_sessions(limit=100)
    traces = await db.list_traces(100)
    half_life = db.settings.retrieval.freshness_half_life_days
    charts = {}
    for key, fig in (("timeline", timeline_figure(entries)), ("heatmap", heatmap_figure(entries)),
                     ("sunburst", sunburst_figure(entries)), ("freshness", freshness_figure(entries, half_life))):
        charts[key] = _fig(fig, f"chart-{key}") if fig is not None else None
    return _render(request, "overview.html", title="Overview", stats=stats, charts=charts,
                   cloud=tag_cloud(entries), feed=activity_feed(entries, sessions, traces),
                   capped=len(entries) >= MAX_ENTRIES)


@router.get("/entries", response_class=HTMLResponse)
async def entries_view(request: Request, q: str = "", context_type: str = "", category: str = "", tag: str = "",
                       user_id: str = "", session_id: str = "", offset: int = 0) -> HTMLResponse:
    """Entry browser: hybrid search (``q``) or a newest-first list, with filters.

    Args:
        q: search text (empty: list). context_type, category, tag, user_id, session_id: filters.
        offset: paging.

    Returns:
        The HTML page (a library error is shown on the page).
    """
    db = _db(request)
    filters = {k: v for k, v in dict(context_type=context_type, category=category, user_id=user_id,
                                     session_id=session_id).items() if v}
    if tag:
        filters["tags"] = [tag]
    hits, rows, error, trace_id, total = [], [], None, None, None
    offset = max(0, offset)
    try:
        if q.strip():
            hits = await db.find(q, top_k=50, **filters)
            trace_id = next((h.trace_id for h in hits if h.trace_id), None)
        else:
            rows = await db.list(limit=50, offset=offset, **filters)
            total = await db.count(**filters)
    except AgentBaseError as exc:
        error = str(exc)
    args = dict(q=q, context_type=context_type, category=category, tag=tag, user_id=user_id, session_id=session_id)
    return _render(request, "entries.html", title="Entries", hits=hits, rows=rows, error=error, args=args,
                   offset=offset, trace_id=trace_id, page_size=50, total=total)


@router.get("/entries/{entry_id:path}", response_class=HTMLResponse)
async def entry_view(request: Request, entry_id: str) -> HTMLResponse:
    """One entry: its three layers, owners, tags, metadata, history and links to diffs.

    Args:
        entry_id: the entry.

    Returns:
        The HTML page; 404 page for an unknown id.
    """
    db = _db(request)
    try:
        entry = await db.get(entry_id)
        history = await db.history(entry_id)
    except AgentBaseError as exc:
        return _render(request, "message.html", status=400, title="Bad request", message=str(exc))
    if entry is None:
        return _render(request, "message.html", status=404, title="Not found", message=f"entry {entry_id} not found")
    return _render(request, "entry.html", title=entry.l0_abstract or entry.id, entry=entry, history=history)


@router.get("/diff", response_class=HTMLResponse)
async def diff_view(request: Request, a: str, b: str) -> HTMLResponse:
    """Two entries side by side: differing fields, tags, metadata and a unified text diff.

    Args:
        a, b: entry ids.

    Returns:
        The HTML page; 404 page when either entry is unknown.
    """
    try:
        diff = await _db(request).diff_entries(a, b)
    except NotFoundError as exc:
        return _render(request, "message.html", status=404, title="Not found", message=str(exc))
    except AgentBaseError as exc:
        return _render(request, "message.html", status=400, title="Bad request", message=str(exc))
    return _render(request, "diff.html", title="Diff", diff=diff)


@router.get("/sessions", response_class=HTMLResponse)
async def sessions_view(request: Request, user_id: str = "", offset: int = 0) -> HTMLResponse:
    """Sessions, newest first.

    Args:
        user_id: only this owner. offset: paging.

    Returns:
        The HTML page.
    """
    sessions = await _db(request).list_sessions(user_id=user_id or None, limit=100, offset=max(0, offset))
    return _render(request, "sessions.html", title="Sessions", sessions=sessions, user_id=user_id,
                   offset=max(0, offset))


@router.get("/sessions/{session_id:path}", response_class=HTMLResponse)
async def session_view(request: Request, session_id: str) -> HTMLResponse:
    """A session: messages in order, each with the memories extracted from it, plus the session summary.

    Args:
        session_id: the session.

    Returns:
        The HTML page; 404 page for an unknown session.
    """
    try:
        data = await _db(request).trace_session(session_id)
    except NotFoundError as exc:
        return _render(request, "message.html", status=404, title="Not found", message=str(exc))
    except AgentBaseError as exc:
        return _render(request, "message.html", status=400, title="Bad request", message=str(exc))
    by_seq: dict[int | None, list[dict[str, Any]]] = defaultdict(list)
    for m in data["memories"]:
        by_seq[m["message_seq"]].append(m)
    return _render(request, "session.html", title=f"Session {session_id}", data=data, by_seq=by_seq)


@router.get("/traces", response_class=HTMLResponse)
async def traces_view(request: Request, offset: int = 0) -> HTMLResponse:
    """Persisted retrieval traces, newest first.

    Args:
        offset: paging.

    Returns:
        The HTML page.
    """
    traces = await _db(request).list_traces(100, max(0, offset))
    return _render(request, "traces.html", title="Traces", traces=traces, offset=max(0, offset))


@router.get("/traces/{trace_id}", response_class=HTMLResponse)
async def trace_view(request: Request, trace_id: str) -> HTMLResponse:
    """One ``find()`` run: step latencies and candidate counts, step details, and why each result ranked.

    Args:
        trace_id: the trace.

    Returns:
        The HTML page; 404 page for an unknown trace.
    """
    db = _db(request)
    try:
        trace = await db.get_trace(trace_id)
    except NotFoundError as exc:
        return _render(request, "message.html", status=404, title="Not found", message=str(exc))
    except AgentBaseError as exc:
        return _render(request, "message.html", status=400, title="Bad request", message=str(exc))
    final = next((s for s in reversed(trace.steps) if s.name == "final"), None)
    why = list(final.details.get("why", [])) if final is not None else []
    entries = {}
    for w in why:
        entries[w["id"]] = await db.get(w["id"])
    parts = list(dict.fromkeys(k for w in why for k in w.get("parts", {})))
    lat, cand = trace_figures(trace)
    steps = [{"step": s, "details": {k: v for k, v in s.details.items() if k != "why"}} for s in trace.steps]
    return _render(request, "trace.html", title=f"Trace: {trace.query}", trace=trace, steps=steps, why=why,
                   entries=entries, parts=parts, latency_chart=_fig(lat, "chart-latency"),
                   candidates_chart=_fig(cand, "chart-candidates"))


@router.get("/graph", response_class=HTMLResponse)
async def graph_view(request: Request, entity: str = "", limit: int = 40) -> HTMLResponse:
    """The entity graph (relations and tag co-occurrence), or one entity's neighbourhood with its entries.

    Args:
        entity: a name or tag (empty: the whole graph). limit: most nodes (2..150).

    Returns:
        The HTML page; 404 page for an unknown entity.
    """
    try:
        graph = await _db(request).entity_graph(entity or None, limit=max(2, min(limit, 150)))
    except NotFoundError as exc:
        return _render(request, "message.html", status=404, title="Not found", message=str(exc))
    except AgentBaseError as exc:
        return _render(request, "message.html", status=400, title="Bad request", message=str(exc))
    fig = graph_figure(graph)
    nodes = sorted(graph["nodes"], key=lambda n: -n["mentions"])
    relations = [e for e in graph["edges"] if e["predicate"] != "co_occurs"]
    return _render(request, "graph.html", title="Entity graph", graph=graph, nodes=nodes, relations=relations,
                   chart=_fig(fig, "chart-graph") if fig is not None else None, entity=entity, limit=limit)


# ------------------------------------------------------------------------------------------------- command
def _is_loopback(host: str) -> bool:
    import ipaddress

    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> int:
    """Run ``agentbase-web DB [PORT]``: the dashboard (and the JSON API) on 127.0.0.1.

    Args:
        argv: command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status (2 when the host is not loopback and no bearer token is configured).
    """
    p = argparse.ArgumentParser(prog="agentbase-web", description="Serve the AgentBase dashboard.")
    p.add_argument("db", nargs="?", default=None, help="database file or postgresql:// URL (default: $AGENTBASE_DB, "
                   "storage.url (AGENTBASE_STORAGE__URL), else agentbase.db)")
    p.add_argument("port", nargs="?", type=int, default=8080, help="TCP port (default 8080)")
    p.add_argument("--host", default="127.0.0.1", help="bind host (default 127.0.0.1; others need tokens)")
    p.add_argument("--embedder", default=None, help="embedder provider for searches: local, onnx, openai, hash, none")
    args = p.parse_args(argv)
    if not 1 <= args.port <= 65535:
        p.error(f"port must be from 1 to 65535, got {args.port}")  # exits 2
    from agentbase import AgentBase

    from .app import create_app

    try:
        from agentbase.engine import DEFAULT_PATH

        # nothing named: what AgentBase() opens without a path (storage.url, else agentbase.db)
        db = AgentBase(args.db or os.environ.get("AGENTBASE_DB") or DEFAULT_PATH, embedder=args.embedder)
        tokens = [t for t in db.settings.auth.tokens if t]
        if not _is_loopback(args.host) and not tokens:
            print(f"agentbase-web: error: refusing to listen on {args.host!r} without authentication: set "
                  "AGENTBASE_AUTH__TOKENS or bind to 127.0.0.1", file=sys.stderr)
            return 2
        db.sync.initialize()
    except AgentBaseError as exc:
        print(f"agentbase-web: error: {exc}", file=sys.stderr)
        return 2
    import uvicorn

    app = create_app(db, tokens=tokens)
    app.add_api_route("/", lambda: RedirectResponse("/dashboard/"), include_in_schema=False)
    print(f"agentbase-web: {db.location} at http://{args.host}:{args.port}/dashboard/", file=sys.stderr)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    finally:
        db.sync.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
