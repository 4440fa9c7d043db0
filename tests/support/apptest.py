"""AppTest shims and helpers shared by the app tests (tests/test_app*.py, and the page tests of other modules).

One shim makes ``streamlit.testing.v1.AppTest`` behave like the browser (test-only); a test
module gets it by importing the autouse fixture ``apptest_like_browser``: AppTest's ``Selectbox``
can only send one of its preset options (``options.index(value)``), so a value typed into an
``accept_new_options`` selectbox cannot be sent. The shim sends the typed text as
``string_value``, as the frontend does.

(After ``switch_page`` AppTest runs ``pages/<page>.py`` directly, in Streamlit's legacy multipage
mode, because ``pages/`` sits beside ``app.py``; the page then reruns itself through ``app.py``, as in
a real server: :func:`posviz.app.navigation.current_model`.)
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Selectbox

ROOT = Path(__file__).resolve().parents[2]  # the repository root
APP = ROOT / "app.py"
TIMEOUT = 180  # a cold UMAP (numba compilation) on 2 CPU cores

TITLES = {
    "model": "Model",
    "similarity": "Position similarity",
    "projection": "Projection of the position vectors",
    "input": "Input representation",
    "attention": "Attention",
    "compare": "Compare",
    "probes": "Probes",
    "word_order": "Word order",
    "properties": "Position properties",
    "gallery": "Gallery",
}


# ---------------------------------------------------------------- AppTest shims


def _selectbox_state(self: Selectbox) -> WidgetState:
    ws = WidgetState()
    ws.id = self.id
    value = self.value
    if value is None or not self.options:
        return ws
    text = str(self.format_func(value))
    ws.string_value = self.options[self.options.index(text)] if text in self.options else text
    return ws


@pytest.fixture(autouse=True)
def apptest_like_browser(monkeypatch):
    """Autouse in every module that imports it: the shim above, undone after each test."""
    monkeypatch.setattr(Selectbox, "_widget_state", property(_selectbox_state))


# ---------------------------------------------------------------- helpers


def open_page(page: str, query_params: dict | None = None, **state) -> AppTest:
    """Run app.py, switch to ``pages/<page>.py`` and run it; ``state`` presets widget values."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    if query_params:
        at.query_params.update(query_params)
    at.run()
    for key, value in state.items():
        at.session_state[key] = value
    if page != "model" or state:
        at.switch_page(f"pages/{page}.py").run()
    return at


def download_buttons(at: AppTest) -> list:
    """The buttons of every chart's "Download" menu (:func:`posviz.app.downloads.show`), in page order.

    A menu's buttons are made only while it is open: the closed menus are opened, as a click does
    (their state set, then a rerun of ``at``).
    """
    closed = [menu.key for menu in at.get("popover")
              if (menu.key or "").startswith("download-") and not at.session_state[menu.key]]
    for key in closed:
        at.session_state[key] = True
    if closed:
        at.run()
    return at.get("download_button")


def assert_clean(at: AppTest, page: str) -> None:
    """No exception, no error box in the main area, and the page's title."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.main.error, [e.value for e in at.main.error]
    assert [t.value for t in at.title] == [TITLES[page]]


def figures(at: AppTest) -> list[dict]:
    """The Plotly figures the page sent, as dicts (``chart.proto.spec`` is the figure JSON)."""
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def title_text(fig: dict) -> str:
    """A figure's title as a person reads it: its wrapped lines joined by spaces, then a line break
    and its subtitle (the model shown and the figure's notes) where it has one."""
    title = fig["layout"].get("title", {})
    subtitle = title.get("subtitle", {}).get("text")
    return title.get("text", "").replace("<br>", " ") + (f"<br>{subtitle}" if subtitle else "")


def arr(value) -> np.ndarray:
    """A plotly data array: a list (null -> NaN), or a base64 typed array {"dtype", "bdata", "shape"}."""
    if isinstance(value, dict) and "bdata" in value:
        out = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            out = out.reshape([int(s) for s in str(value["shape"]).split(",")])
        return out
    out = np.asarray(value)
    if out.dtype == object:  # JSON null (NaN) among numbers
        try:
            return np.array(value, dtype=float)
        except (TypeError, ValueError):
            pass
    return out
