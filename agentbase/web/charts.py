"""plotly figures and HTML-ready aggregates of the dashboard, computed from public AgentBase objects.

Each builder takes entries, sessions or traces as returned by the public API and returns a plotly ``Figure`` (None
when there is nothing to draw) or plain data for a template. User text that plotly renders (labels, hover text) is
HTML-escaped, because plotly interprets a subset of HTML in them.
"""

from __future__ import annotations

import hashlib
import html
import math
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from agentbase.models import utcnow

__all__ = ["activity_feed", "freshness_figure", "graph_figure", "heatmap_figure", "sunburst_figure", "tag_cloud",
           "timeline_figure", "trace_figures", "url_segment"]


def url_segment(value: Any) -> str:
    """An id as one URL path segment, every reserved character escaped ("chat#1" -> "chat%231", "a/b" -> "a%2Fb")."""
    return quote(str(value), safe="")


_WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def _label(text: Any, limit: int = 40) -> str:
    """plotly renders a subset of HTML in labels: escape user text and keep it short."""
    s = str(text)
    return html.escape(s if len(s) <= limit else s[: limit - 1] + "…")


def _when(e: Any) -> datetime:
    return e.event_time or e.created_at


def timeline_figure(entries: list[Any]) -> Any:
    """Stacked bars of writes (entries created, by context type) over time, bucketed by minute, hour or day.

    Args:
        entries: :class:`~agentbase.models.Entry` objects.

    Returns:
        A plotly ``Figure``, or None without entries.
    """
    import plotly.graph_objects as go

    if not entries:
        return None
    times = [e.created_at for e in entries]
    span = max(times) - min(times)
    unit, fmt = (("second", "%Y-%m-%d %H:%M:%S") if span < timedelta(minutes=3) else
                 ("minute", "%Y-%m-%d %H:%M") if span < timedelta(hours=2) else
                 ("hour", "%Y-%m-%d %H:00") if span < timedelta(days=3) else ("day", "%Y-%m-%d"))
    counts: dict[str, Counter] = defaultdict(Counter)
    for e in entries:
        counts[e.context_type.value][e.created_at.strftime(fmt)] += 1
    updates = Counter(e.updated_at.strftime(fmt) for e in entries if e.updated_at - e.created_at > timedelta(seconds=1))
    fig = go.Figure()
    for ctype in sorted(counts):
        xs = sorted(counts[ctype])
        fig.add_trace(go.Bar(x=xs, y=[counts[ctype][x] for x in xs], name=f"{ctype} added"))
    if updates:
        xs = sorted(updates)
        fig.add_trace(go.Bar(x=xs, y=[updates[x] for x in xs], name="updated"))
    buckets = {x for c in counts.values() for x in c}
    fig.update_layout(barmode="stack", height=300, xaxis_title=f"created (per {unit}, UTC)", yaxis_title="entries",
                      legend=dict(orientation="h", y=1.15))
    if len(buckets) < 4:  # a date axis would stretch one bar over the whole plot
        fig.update_xaxes(type="category")
    return fig


def heatmap_figure(entries: list[Any]) -> Any:
    """Activity by weekday x hour (UTC) of each entry's ``event_time`` (else ``created_at``).

    Args:
        entries: :class:`~agentbase.models.Entry` objects.

    Returns:
        A plotly ``Figure``, or None without entries.
    """
    import plotly.graph_objects as go

    if not entries:
        return None
    z = [[0] * 24 for _ in range(7)]
    for e in entries:
        t = _when(e)
        z[t.weekday()][t.hour] += 1
    fig = go.Figure(go.Heatmap(z=z, x=[f"{h:02d}" for h in range(24)], y=_WEEKDAYS, colorscale="Blues",
                               hovertemplate="%{y} %{x}:00 — %{z} entries<extra></extra>"))
    fig.update_layout(height=300, xaxis_title="hour (UTC)", yaxis=dict(autorange="reversed"))
    return fig


def sunburst_figure(entries: list[Any], tags_per_category: int = 8) -> Any:
    """Sunburst context_type > category > tag (the most frequent tags of each category; untagged as a leaf).

    Args:
        entries: :class:`~agentbase.models.Entry` objects. tags_per_category: leaves per category.

    Returns:
        A plotly ``Figure``, or None without entries.
    """
    import plotly.graph_objects as go

    if not entries:
        return None
    tree: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for e in entries:
        tree[(e.context_type.value, e.category)].update(e.tags or ["(no tags)"])
    ids: list[str] = []
    labels: list[str] = []
    parents: list[str] = []
    values: list[int] = []

    def node(node_id: str, label: str, parent: str, value: int) -> None:
        ids.append(node_id)
        labels.append(label)
        parents.append(parent)
        values.append(value)

    for ctype in sorted({k[0] for k in tree}):
        node(ctype, ctype, "", 0)
    for (ctype, cat), tags in sorted(tree.items()):
        cid = f"{ctype}/{html.escape(cat)}"  # ids show in the hover text, which plotly renders as markup
        node(cid, _label(cat), ctype, 0)
        for tag, n in tags.most_common(tags_per_category):
            node(f"{cid}/{html.escape(tag)}", _label(tag[4:] if tag.startswith("ner_") else tag, 24), cid, n)
    fig = go.Figure(go.Sunburst(ids=ids, labels=labels, parents=parents, values=values, maxdepth=3,
                                hovertemplate="%{id}: %{value}<extra></extra>"))
    fig.update_layout(height=420)
    return fig


def freshness_figure(entries: list[Any], half_life_days: float, now: datetime | None = None) -> Any:
    """Histogram of entry age in days (since ``event_time``, else ``updated_at``) with the freshness half-life.

    The retrieval freshness weight is ``0.5 ** (age / half_life)`` (``retrieval.freshness_half_life_days``).

    Args:
        entries: :class:`~agentbase.models.Entry` objects.
        half_life_days: ``retrieval.freshness_half_life_days``. now: reference time (UTC; default now).

    Returns:
        A plotly ``Figure``, or None without entries.
    """
    import plotly.graph_objects as go

    if not entries:
        return None
    now = now or utcnow()
    ages = [max(0.0, (now - (e.event_time or e.updated_at)).total_seconds() / 86400) for e in entries]
    fig = go.Figure(go.Histogram(x=ages, nbinsx=40, marker_color="#4c78a8", name="entries",
                                 hovertemplate="%{x} days: %{y}<extra></extra>"))
    if min(ages) <= half_life_days <= max(ages):
        fig.add_vline(x=half_life_days, line_dash="dash", line_color="#e45756",
                      annotation_text=f"half-life {half_life_days:g} d")
    fig.update_layout(height=300, xaxis_title=f"age in days (freshness weight 0.5^(age / {half_life_days:g}))",
                      yaxis_title="entries", bargap=0.05)
    return fig


def tag_cloud(entries: list[Any], limit: int = 60) -> list[dict[str, Any]]:
    """The most frequent tags with a font size (em) proportional to log frequency.

    Args:
        entries: :class:`~agentbase.models.Entry` objects. limit: most tags shown.

    Returns:
        ``[{"tag", "label", "count", "size", "entity"}]`` sorted by tag name.
    """
    counts = Counter(t for e in entries for t in e.tags)
    top = counts.most_common(limit)
    if not top:
        return []
    hi, lo = math.log(top[0][1] + 1), math.log(top[-1][1] + 1)
    cloud = [{"tag": t, "label": t[4:].replace("_", " ") if t.startswith("ner_") else t, "count": n,
              "entity": t.startswith("ner_"),
              "size": round(0.8 + 1.6 * ((math.log(n + 1) - lo) / (hi - lo) if hi > lo else 0.5), 2)}
             for t, n in top]
    return sorted(cloud, key=lambda c: c["label"].casefold())


def activity_feed(entries: list[Any], sessions: list[Any], traces: list[dict[str, Any]],
                  limit: int = 30) -> list[dict[str, Any]]:
    """Newest writes, sessions and searches merged into one feed.

    Args:
        entries: newest first. sessions: newest first. traces: from ``list_traces``.
        limit: most items.

    Returns:
        ``[{"when", "kind", "text", "link"}]`` newest first (links are relative to the dashboard).
    """
    items = [{"when": e.created_at, "kind": f"{e.context_type.value} · {e.category}", "text": e.l0_abstract,
              "link": f"/entries/{url_segment(e.id)}"} for e in entries[:limit]]
    items += [{"when": e.updated_at, "kind": "updated", "text": e.l0_abstract, "link": f"/entries/{url_segment(e.id)}"}
              for e in entries[: limit * 4] if e.updated_at - e.created_at > timedelta(seconds=1)][:limit]
    items += [{"when": s.updated_at, "kind": f"session · {s.status}", "text": s.id,
               "link": f"/sessions/{url_segment(s.id)}"} for s in sessions[:limit]]
    items += [{"when": t["created_at"], "kind": f"find · {t['total_ms']:.0f} ms", "text": t["query"],
               "link": f"/traces/{t['id']}"} for t in traces[:limit]]
    return sorted(items, key=lambda i: i["when"], reverse=True)[:limit]


def trace_figures(trace: Any) -> tuple[Any, Any]:
    """Latency per step (horizontal bars) and candidates in/out per step (grouped bars) of one trace.

    Args:
        trace: a :class:`~agentbase.models.Trace`.

    Returns:
        Two plotly ``Figure`` objects.
    """
    import plotly.graph_objects as go

    names = [f"{i + 1}. {s.name}" for i, s in enumerate(trace.steps)]
    lat = go.Figure(go.Bar(x=[s.latency_ms for s in trace.steps], y=names, orientation="h",
                           marker_color="#4c78a8", hovertemplate="%{y}: %{x:.2f} ms<extra></extra>"))
    lat.update_layout(height=60 + 26 * len(names), xaxis_title="latency (ms)", yaxis=dict(autorange="reversed"))
    cand = go.Figure([go.Bar(x=names, y=[s.candidates_in for s in trace.steps], name="candidates in"),
                      go.Bar(x=names, y=[s.candidates_out for s in trace.steps], name="candidates out")])
    cand.update_layout(height=320, barmode="group", yaxis_title="candidates", legend=dict(orientation="h", y=1.15))
    return lat, cand


def graph_figure(graph: dict[str, Any], iterations: int = 120) -> Any:
    """Entity graph drawn with a deterministic force-directed layout (Fruchterman & Reingold, 1991, plus gravity).

    Args:
        graph: the output of :meth:`AgentBase.entity_graph`.
        iterations: layout iterations.

    Returns:
        A plotly ``Figure``, or None without nodes.
    """
    import numpy as np
    import plotly.graph_objects as go

    nodes = graph["nodes"]
    if not nodes:
        return None
    index = {n["id"]: i for i, n in enumerate(nodes)}
    edges = [(index[e["source"]], index[e["target"]], float(e["weight"] or 1)) for e in graph["edges"]
             if e["source"] in index and e["target"] in index and e["source"] != e["target"]]
    src = np.array([a for a, _, _ in edges], dtype=int)
    dst = np.array([b for _, b, _ in edges], dtype=int)
    pull = np.array([min(1.0 + math.log1p(w) / 3, 2.0) for _, _, w in edges])[:, None]
    n = len(nodes)
    seed = int(hashlib.sha256("|".join(sorted(index)).encode()).hexdigest()[:8], 16)
    pos = np.random.default_rng(seed).uniform(-1, 1, (n, 2))
    k = math.sqrt(4.0 / n)
    for it in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=2), 1e-3)
        disp = ((k * k / dist ** 2)[:, :, None] * delta).sum(axis=1)
        if edges:  # attraction along edges, stronger for heavier ones
            d = pos[src] - pos[dst]
            f = (np.linalg.norm(d, axis=1)[:, None] / k) * d * pull
            np.add.at(disp, src, -f)
            np.add.at(disp, dst, f)
        # gravity keeps disconnected components together, so the drawing scale is set by repulsion
        disp -= 0.5 * pos * np.linalg.norm(pos, axis=1)[:, None] / k
        temp = 0.1 * (1 - it / iterations) + 0.005
        length = np.maximum(np.linalg.norm(disp, axis=1), 1e-9)[:, None]
        pos += disp / length * np.minimum(length, temp)
    ex: list[float | None] = []
    ey: list[float | None] = []
    for a, b, _ in edges:
        ex += [pos[a, 0], pos[b, 0], None]
        ey += [pos[a, 1], pos[b, 1], None]
    mentions = [max(1, nd["mentions"]) for nd in nodes]
    big = max(mentions)
    center = graph.get("entity")
    fig = go.Figure([
        go.Scatter(x=ex, y=ey, mode="lines", line=dict(width=0.7, color="#b0b7c3"), hoverinfo="skip"),
        go.Scatter(x=pos[:, 0], y=pos[:, 1], mode="markers+text", text=[_label(nd["name"], 24) for nd in nodes],
                   textposition="top center", hovertext=[f"{_label(nd['name'])}: {nd['mentions']} mentions"
                                                         for nd in nodes], hoverinfo="text",
                   marker=dict(size=[10 + 24 * math.sqrt(m / big) for m in mentions],
                               color=["#e45756" if nd["id"] == center else "#4c78a8" for nd in nodes],
                               line=dict(width=1, color="white")))])
    fig.update_layout(height=560, showlegend=False, xaxis=dict(visible=False), yaxis=dict(visible=False))
    return fig
