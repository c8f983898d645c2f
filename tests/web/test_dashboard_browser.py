"""The dashboard in a real browser (Playwright + Debian's Chromium) over a database built from LoCoMo sessions.

Needs ``pip install playwright`` (the Python package only; never ``playwright install``) and a system Chromium
(``apt-get install -y chromium``). Skips with the reason when either is missing or the LoCoMo file is absent.
Screenshots go to the test's tmp folder.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import LOCOMO, make_db, require

pytest.importorskip("fastapi", reason="the web extra (pip install 'agentbase[web]') is not installed")
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed "
                               "(pip install playwright; then apt-get install -y chromium)")

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
TOKEN = "dashboard-test-token"
SESSIONS = 3


def _chromium() -> str:
    for candidate in (os.environ.get("AGENTBASE_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and os.path.exists(candidate):
            return candidate
    pytest.skip("no Chromium installed (apt-get install -y chromium, or set AGENTBASE_CHROMIUM)")


def _build(path: Path) -> list[str]:
    """Ingest the first LoCoMo sessions, ask a few of its questions; returns the questions."""
    from agentbase.datasets import ingest_conversation, load_json, locomo_conversations

    conv = next(locomo_conversations(load_json(require(LOCOMO))))
    conv.sessions = conv.sessions[:SESSIONS]
    questions = [q["question"] for q in conv.qa[:4]]

    async def go() -> None:
        db = make_db(path)
        try:
            await ingest_conversation(db, conv, user_id="locomo")
            await db.flush()
            entry = (await db.list(limit=1, category="turn"))[0]
            await db.update(entry.id, entry.l2_full + " (edited)", tags=["edited"])
            for q in questions:
                await db.find(q, top_k=5, user_id="locomo")
        finally:
            await db.close()

    asyncio.run(go())
    return questions


class _Server:
    def __init__(self, app: object):
        import uvicorn

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started and time.time() < deadline:
            time.sleep(0.05)
        assert self.server.started
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def _chart_points(page, div_id: str) -> int:
    """Number of data points plotly drew in a chart div (0 for an empty chart)."""
    return page.evaluate("""(id) => {
        const el = document.getElementById(id);
        if (!el || !el._fullData) return 0;
        const arr = (v) => (v === undefined || v === null) ? [] : Array.from(v);
        let n = 0;
        for (const t of el._fullData) {
            if (t.type === 'heatmap') n += arr(t.z).map(arr).flat().reduce((a, b) => a + b, 0);
            else if (t.type === 'sunburst') n += arr(t.values).reduce((a, b) => a + b, 0);
            else n += arr(t.orientation === 'h' ? t.x : (t.x || t.values)).filter(v => v !== null).length;
        }
        return n;
    }""", div_id)


@pytest.mark.slow
def test_dashboard_renders_every_view_in_chromium(tmp_path):
    executable = _chromium()
    from agentbase.web import create_app

    db_path = tmp_path / "locomo.db"
    questions = _build(db_path)
    db = make_db(db_path)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    try:
        with _Server(create_app(db, tokens=[TOKEN])) as base, sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            try:
                _walk(browser, base, shots, questions)
            finally:
                browser.close()
    finally:
        db.sync.close()
    assert len(list(shots.glob("*.png"))) >= 7


def _walk(browser, base: str, shots: Path, questions: list[str]) -> None:
    anonymous = browser.new_page()
    assert anonymous.goto(f"{base}/dashboard/").status == 401  # no token, nothing read
    assert "Caroline" not in anonymous.content()
    anonymous.close()

    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
    page = context.new_page()
    errors: list[str] = []
    foreign: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: None if r.url.startswith((base, "data:")) else foreign.append(r.url))

    def visit(path: str, shot: str) -> None:
        response = page.goto(base + path, wait_until="load")
        assert response is not None and response.status == 200, (path, response and response.status)
        page.screenshot(path=str(shots / f"{shot}.png"), full_page=True)

    # overview: four charts with data, the tag cloud and the activity feed
    visit("/dashboard/", "overview")
    for chart in ("chart-timeline", "chart-heatmap", "chart-sunburst", "chart-freshness"):
        page.wait_for_selector(f"#{chart} .main-svg")
        assert _chart_points(page, chart) > 0, f"{chart} is empty"
    assert page.locator("#chart-heatmap .hm, #chart-heatmap image").count() >= 1
    assert page.locator("#chart-sunburst .slice").count() >= 5
    assert page.locator("#tags .cloud a").count() >= 5
    assert page.locator("#feed li").count() >= 10
    assert "Caroline" in page.locator("#tags").inner_text()

    # entry browser: filters, then a search that shows scores and links to its trace
    visit("/dashboard/entries?context_type=memory&category=turn", "entries")
    assert page.locator("#results tr").count() > 10
    visit("/dashboard/entries?q=" + questions[0].replace(" ", "+"), "search")
    assert page.locator("#results tr").count() >= 2
    page.locator("#results a").first.click()
    page.wait_for_load_state("load")
    assert page.locator("text=History").count() >= 1
    page.screenshot(path=str(shots / "entry.png"), full_page=True)

    # sessions: list, then one session with its messages and the memories extracted from them
    visit("/dashboard/sessions", "sessions")
    assert page.locator("#sessions tr").count() == SESSIONS + 1
    page.locator("#sessions a").first.click()
    page.wait_for_load_state("load")
    assert page.locator(".msg").count() >= 5
    assert page.locator(".memory").count() >= 5
    page.screenshot(path=str(shots / "session.png"), full_page=True)

    # traces: open one; every step has latency and candidate counts; the final step's why-table is filled
    visit("/dashboard/traces", "traces")
    assert page.locator("#traces tr").count() >= len(questions) + 1
    page.locator("#traces a").first.click()
    page.wait_for_load_state("load")
    page.wait_for_selector("#chart-latency .main-svg")
    steps = page.locator("#steps tr").count() - 1
    assert steps >= 8 and _chart_points(page, "chart-latency") == steps
    assert _chart_points(page, "chart-candidates") == 2 * steps
    assert "final" in page.locator("#steps").inner_text()
    assert page.locator("#why tr").count() >= 2
    assert "rrf" in page.locator("#why").inner_text()
    page.screenshot(path=str(shots / "trace.png"), full_page=True)

    # entity graph: nodes and links, then one entity's neighbourhood
    visit("/dashboard/graph", "graph")
    page.wait_for_selector("#chart-graph .main-svg")
    assert _chart_points(page, "chart-graph") >= 5
    visit("/dashboard/graph?entity=Caroline", "graph-caroline")
    assert page.locator("text=Entries mentioning").count() == 1

    assert not errors, errors
    assert not foreign, f"requests left the loopback server: {foreign[:5]}"
    context.close()
