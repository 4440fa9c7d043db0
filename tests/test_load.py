"""Concurrent browser sessions against one app server: no exception, each session sees its own
model, and the server's memory stays within the model cache's budget plus a stated margin.

Four Chromium contexts (separate Streamlit sessions) each visit two (model, page) pairs, all at
once, through the URL, on a server whose cache holds at most ``BUDGET`` bytes of weights. Between
them the eight visits open every model of ``models`` (the bundled model by name and as a folder,
which cannot both stay within the budget, and a tiny model of each scheme), while other sessions
load and draw theirs. Four sessions are enough for what this proves (sessions running at the same
time, each with its own model, and a cache that must drop a model to load another); more would add
only per-session state to the memory figure, and wait longer on the one model-loading lock.
(AppTest cannot stand in for sessions here: it swaps one process-wide Runtime in and out per run,
so instances in threads break each other.)

Marker ``load`` (and ``browser``, for the Chromium it needs); ``python3 -m pytest`` runs it.
"""

from __future__ import annotations

import asyncio
import random
import threading
import urllib.parse

import psutil
import pytest

import posviz
from tests.support.browser import CHROMIUM_ARGS, ROOT, chromium, log_tail, running_app
from tests.support.tiny_models import bundled_path

pytestmark = [pytest.mark.browser, pytest.mark.load]

LOG = ROOT / "artifacts" / "streamlit-load-test.log"
SESSIONS = 4
STEPS = 2
PAGES = ["", "similarity", "input", "attention", "projection?method=PCA"]
FAMILIES = ["bert", "gpt2", "llama", "bloom", "t5"]
#: The cache's budget: one bundled model (91 MB) and the tiny ones fit, not two bundled ones.
BUDGET = 120 * 10**6
#: Memory on top of the budget: per-session script state, forward-pass activations, figures, and
#: modules imported on first use of a page (measured peak growth, budget included: about 200 MB).
MARGIN = 300 * 10**6
STEP_TIMEOUT_MS = 120_000


async def _visit(page, url: str) -> str:
    """Open ``url``, wait until the sidebar says which model is shown and the script has finished;
    the sidebar's text."""
    await page.goto(url)
    sidebar = page.locator('[data-testid="stSidebar"]')
    await sidebar.get_by_text("Showing").wait_for(state="visible")
    await page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(state="attached")
    return await sidebar.inner_text()


async def _session(browser, base: str, number: int, models: list[str], problems: list[str]) -> None:
    rng = random.Random(number)
    context = await browser.new_context(viewport={"width": 1200, "height": 800})
    page = await context.new_page()
    page.set_default_timeout(STEP_TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        for step in range(STEPS):
            model, path = models[(number * STEPS + step) % len(models)], rng.choice(PAGES)  # each model in turn
            separator = "&" if "?" in path else "?"
            url = f"{base}/{path}{separator}model={urllib.parse.quote(model, safe='')}"
            shown = await _visit(page, url)
            where = f"session {number}, step {step}, {url}"
            if f"Showing {model} ·" not in shown:
                problems.append(f"{where}: the sidebar shows {shown!r}")
            for what in ('[data-testid="stException"]', '[data-testid="stAlertContentError"]'):
                if await page.locator(what).count():
                    problems.append(f"{where}: {await page.locator(what).first.inner_text()}")
        if errors:
            problems.append(f"session {number}: JavaScript errors {errors}")
    except Exception as exc:  # a session that cannot go on is reported with the others
        problems.append(f"session {number}: {type(exc).__name__}: {exc}")
    finally:
        await context.close()


async def _run_sessions(base: str, models: list[str], sessions: int) -> list[str]:
    from playwright.async_api import async_playwright

    problems: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium(), headless=True, args=CHROMIUM_ARGS)
        await asyncio.gather(*(_session(browser, base, n, models, problems) for n in range(sessions)))
        await browser.close()
    return problems


def test_concurrent_sessions_switching_models_and_pages(tiny_path):
    # The bundled model twice (by name and as a folder: two cache entries of 91 MB) cannot both
    # stay within the budget: the cache must drop one to load the other.
    models = [posviz.BUNDLED_NAME, str(bundled_path())] + [str(tiny_path(f)) for f in FAMILIES]
    assert len(models) <= SESSIONS * STEPS  # every model is visited
    with running_app(LOG, HF_HUB_OFFLINE="1", POSVIZ_CACHE_BYTES=str(BUDGET)) as (base, process):
        server = psutil.Process(process.pid)
        warm = asyncio.run(_run_sessions(base, [posviz.BUNDLED_NAME], 1))  # libraries imported, model loaded
        assert not warm, warm
        baseline = server.memory_info().rss
        peak = [baseline]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.1):
                peak[0] = max(peak[0], server.memory_info().rss)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            problems = asyncio.run(_run_sessions(base, models, SESSIONS))
        finally:
            done.set()
            sampler.join()
        assert not problems, "\n".join(problems) + "\n" + log_tail(LOG)
        growth = peak[0] - baseline
        print(f"server memory: {baseline / 1e6:.0f} MB warm, peak growth {growth / 1e6:.0f} MB "
              f"(budget {BUDGET / 1e6:.0f} MB + margin {MARGIN / 1e6:.0f} MB)")
        assert growth <= BUDGET + MARGIN
