"""Starting the app as a real server, finding the Chromium to drive it, and opening its pages
(the browser tests and the bench)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository root
START_TIMEOUT_S = 60
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium() -> str:
    """The Chromium to drive: ``POSVIZ_CHROMIUM`` if set, else Debian's, else one on PATH.

    Without one the calling test is skipped, except under CI (``CI=true``), where it fails:
    ``.ci/run`` installs it.
    """
    wanted = os.environ.get("POSVIZ_CHROMIUM")
    path = (wanted if wanted and os.access(wanted, os.X_OK) else None) if wanted else (
        "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else shutil.which("chromium"))
    if path is None:
        reason = ("no Chromium (apt-get install chromium, or set POSVIZ_CHROMIUM to its path); "
                  "Playwright's own browser download is not used")
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(log: Path, lines: int = 60) -> str:
    """The end of the app's log, without colour codes or blank lines (for failure messages)."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "(no log)"
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


@contextlib.contextmanager
def running_app(log: Path, command: tuple[str, ...] = (sys.executable, "-m", "streamlit", "run", "app.py"),
                cwd: Path = ROOT, **env: str):
    """Run ``command`` (default: ``streamlit run app.py`` in the repository) in ``cwd`` on a free port,
    with ``env`` added to the environment; yield ``(base_url, process)`` once ``/_stcore/health``
    answers; stop it afterwards."""
    port = free_port()
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [*command, "--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1",
           "--browser.gatherUsageStats", "false"]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=dict(os.environ, PYTHONUNBUFFERED="1", **env), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}:\n{log_tail(log)}")
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                    if r.read().decode().strip() == "ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit not healthy after {START_TIMEOUT_S} s:\n{log_tail(log)}")
            time.sleep(0.5)
        yield base, proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """End a server process: terminate, then kill if it has not exited within 15 s."""
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------- pages in Chromium

SHOTS = ROOT / "artifacts" / "screenshots"
PAGE_TIMEOUT_MS = 90_000  # a cold UMAP on the Projection page takes a while on 2 CPU cores
CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg'
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
EXCEPTION = '[data-testid="stException"]'
ERROR_BOX = '[data-testid="stAlertContentError"]'


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium (:func:`chromium`) for the module's tests."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium(), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@contextlib.contextmanager
def new_page(browser, width: int = 1400, height: int = 900):
    """A page in a fresh browser context of ``width`` × ``height`` pixels; ``page.js_errors``
    collects the uncaught exceptions of its JavaScript."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.js_errors = []
    page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()


def open_page(page, url: str, name: str, log: Path, chart: bool = True) -> None:
    """Go to ``url``; wait until a chart is drawn (a heading, for a page without charts: ``chart``
    False) or an error shows, and the script has finished; fail with a screenshot and the end of
    the app's ``log`` where it does not, or shows an error."""
    page.goto(url)
    drawn = page.locator(CHART if chart else '[data-testid="stMain"] h1')
    drawn_or_failed = drawn.or_(page.locator(EXCEPTION)).or_(page.locator(ERROR_BOX))
    try:
        drawn_or_failed.first.wait_for(state="visible")
        page.locator(IDLE).wait_for(state="attached")
    except Exception as exc:
        shot = full_screenshot(page, f"failed-{name}")
        raise AssertionError(f"{url}: no chart drawn / script still running ({exc}); "
                             f"see {shot}\nstreamlit log:\n{log_tail(log)}") from exc
    page.wait_for_timeout(500)  # let Plotly finish drawing before any check or screenshot
    assert_no_errors(page, url, name, log)


def assert_no_errors(page, url: str, name: str, log: Path) -> None:
    """No Streamlit exception, error box or JavaScript error on the page."""
    problems = []
    for what, selector in (("Streamlit exception", EXCEPTION), ("error box", ERROR_BOX)):
        found = page.locator(selector)
        if found.count():
            problems.append(f"{what} on the page:\n{found.first.inner_text()}")
    if page.js_errors:
        problems.append(f"JavaScript errors: {page.js_errors}")
    if problems:
        shot = full_screenshot(page, f"failed-{name}")
        raise AssertionError(f"{url}: " + "\n".join(problems) + f"\nsee {shot}\nstreamlit log:\n{log_tail(log)}")


def full_screenshot(page, name: str) -> Path:
    """Screenshot of the whole page, saved as ``artifacts/screenshots/<name>.png``. Streamlit
    scrolls inside its main container rather than the document, so the viewport is grown to the
    content's height first, then restored."""
    size = page.viewport_size
    height = page.evaluate(
        """() => Math.max(...['[data-testid="stMain"]', '[data-testid="stAppViewContainer"]']
                .map(s => document.querySelector(s)).filter(Boolean).map(e => e.scrollHeight))""")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], min(int(height), 12_000))})
    page.wait_for_timeout(1_000)  # Plotly redraws on resize
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)
    return path
