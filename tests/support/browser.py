"""Starting the app as a real server, and finding the Chromium to drive it (the browser tests and the bench)."""

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
def running_app(log: Path, **env: str):
    """Run ``streamlit run app.py`` on a free port with ``env`` added to the environment; yield
    ``(base_url, process)`` once ``/_stcore/health`` answers; stop it afterwards."""
    port = free_port()
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, PYTHONUNBUFFERED="1", **env), stdout=out,
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
