"""A session of the app without a browser: a client of Streamlit's own websocket protocol (1.67).

It does on ``/_stcore/stream`` what Streamlit's frontend does (as recorded from Chromium):

* it opens the websocket with the ``streamlit`` subprotocol (no XSRF token is needed without an
  ``Origin`` header) and starts the session with a ``rerun_script`` BackMsg carrying the URL's
  query string and the page's URL path (``page_name``), no widget state;
* for an interaction it sends ``rerun_script`` again, with the query string the URL then shows
  (a widget bound to the URL writes its value there), the page's script hash (from the
  ``navigation`` ForwardMsg) and the state of the widgets it shows (``WidgetStates``, keyed by
  the widget ids of the ``delta`` elements, e.g. ``$$ID-<hash>-layer``); on a page switch, the
  other page's script hash and only the sidebar's widgets;
* it lists the hashes of the large messages it has kept in ``cached_message_hashes``, and the
  server sends those again as ``ref_hash`` references.

The server answers each run with ForwardMsgs: ``new_session``, ``navigation``, ``delta``s (the
elements, by their path), ``page_info_changed`` (the URL's new query string) and, last,
``script_finished``. Times are ``time.perf_counter()`` seconds. The websocket is the ``websockets``
package's, which Streamlit itself requires.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Self

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.WidgetStates_pb2 import WidgetState

#: Where the sidebar's elements are (the first number of a delta path; 0 is the main area).
SIDEBAR = 1
RUN_TIMEOUT_S = 120.0
_DONE = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR)


class RunFailed(RuntimeError):
    """The server closed the connection, or a run did not finish within ``RUN_TIMEOUT_S``."""


@dataclass
class Run:
    """What the server sent for one script run.

    Attributes
    ----------
    seconds : float
        From the BackMsg sent to the ``script_finished`` received (every delta arrives before it).
    elements : dict of tuple of int to Element
        The elements drawn, by delta path.
    """

    seconds: float
    elements: dict[tuple[int, ...], Element] = field(default_factory=dict)

    def _of(self, kind: str) -> list[tuple[tuple[int, ...], object]]:
        return [(path, getattr(e, kind)) for path, e in sorted(self.elements.items()) if e.WhichOneof("type") == kind]

    @functools.cached_property
    def charts(self) -> list[dict]:
        """The Plotly figures, parsed (once), in the order of the page."""
        return [json.loads(chart.spec) for _, chart in self._of("plotly_chart")]

    @property
    def titles(self) -> list[str]:
        """The charts' titles."""
        return [chart["layout"].get("title", {}).get("text", "") for chart in self.charts]

    @property
    def tokens(self) -> list[str]:
        """The labels of the first chart's x axis (on the input and attention pages: the tokens)."""
        charts = self.charts
        return list(charts[0]["layout"].get("xaxis", {}).get("ticktext", [])) if charts else []

    @property
    def sidebar(self) -> str:
        """The sidebar's text (its markdown and captions), Markdown's bold marks removed."""
        return "\n".join(m.body.replace("**", "") for path, m in self._of("markdown") if path[0] == SIDEBAR)

    @property
    def problems(self) -> list[str]:
        """Exceptions and error boxes drawn."""
        found = [f"exception {e.type}: {e.message}" for _, e in self._of("exception")]
        return found + [f"error box: {a.body}" for _, a in self._of("alert") if a.format == a.ERROR]


def widget_state(element: Element) -> WidgetState | None:
    """The state the frontend reports for a widget as drawn: its value where the server set one,
    else its default; None for an element that is no widget with a value (a button, a chart)."""
    kind = element.WhichOneof("type")
    widget = _widget(element)
    state = WidgetState(id=getattr(widget, "id", ""))
    if kind == "slider":
        state.double_array_value.data.extend(widget.value if widget.set_value else widget.default)
    elif kind == "text_input":
        state.string_value = widget.value if widget.set_value else widget.default
    elif kind == "checkbox":
        state.bool_value = widget.value if widget.set_value else widget.default
    elif kind == "number_input":
        value = widget.value if widget.set_value else widget.default
        if widget.data_type == NumberInput.INT:
            state.int_value = int(value)
        else:
            state.double_value = value
    elif kind in ("selectbox", "radio"):
        state.string_value = widget.raw_value if widget.set_value else (widget.options or [""])[widget.default]
    elif kind == "file_uploader":
        state.file_uploader_state_value.SetInParent()
    else:
        return None
    return state


def _widget(element: Element):
    """The element's own message (its ``Slider``, ``TextInput`` …)."""
    return getattr(element, element.WhichOneof("type"))


def _default_state(element: Element) -> WidgetState | None:
    """:func:`widget_state` of the widget at its default."""
    plain = Element()
    plain.CopyFrom(element)
    if hasattr(_widget(plain), "set_value"):
        _widget(plain).set_value = False
    return widget_state(plain)


def _set(state: WidgetState, value) -> str:
    """Put ``value`` into ``state`` (of the widget's wire type); the value as the URL writes it."""
    kind = state.WhichOneof("value")
    if kind == "double_array_value":
        del state.double_array_value.data[:]
        state.double_array_value.data.append(value)
    elif kind in ("int_value", "double_value", "string_value", "bool_value"):
        setattr(state, kind, value)
    else:
        raise ValueError(f"cannot set a widget of wire type {kind}")
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


class StreamlitSession:
    """One app session over the websocket (see the module docstring); use as ``async with``.

    Parameters
    ----------
    base : str
        The app's URL, ``http://host:port``.
    """

    def __init__(self, base: str) -> None:
        self.base = base
        self.session_id = ""
        self._ws = None
        self._query: list[tuple[str, str]] = []
        self._page_hash = ""
        self._pages: dict[str, str] = {}  # URL path -> page script hash
        self._widgets: dict[str, tuple[tuple[int, ...], Element, WidgetState]] = {}  # key -> (path, element, state)
        self._cache: dict[str, ForwardMsg] = {}

    async def __aenter__(self) -> Self:
        from websockets.asyncio.client import connect

        url = "ws" + self.base.removeprefix("http") + "/_stcore/stream"
        # No keep-alive pings of its own (the frontend sends none), so a busy server is no disconnect.
        self._ws = await connect(url, subprotocols=["streamlit"], max_size=None, ping_interval=None,
                                 open_timeout=RUN_TIMEOUT_S)
        return self

    async def __aexit__(self, *exc) -> None:
        await self._ws.close()

    async def open(self, page: str, query: dict[str, str]) -> Run:
        """The first run: the page at URL path ``page`` ("" for the first page) with ``query``."""
        self._query = list(query.items())
        msg = BackMsg()
        msg.rerun_script.page_name = page
        return await self._rerun(msg)

    async def set_widget(self, key: str, value) -> Run:
        """Give the widget of key ``key`` (a slider's, a text field's …) the ``value`` a user
        would give it, and rerun."""
        _, element, state = self._widgets[key]
        shown = _set(state, value)
        widget = _widget(element)
        if widget.query_param_key:
            self._query = [(k, v) for k, v in self._query if k != widget.query_param_key]
            if _default_state(element) != state:  # at its default the parameter leaves the URL
                self._query.insert(0, (widget.query_param_key, shown))
        return await self._rerun(self._widget_msg(self._page_hash))

    async def switch_page(self, page: str) -> Run:
        """Go to the page of URL path ``page`` by the navigation, as a click in the sidebar does."""
        return await self._rerun(self._widget_msg(self._pages[page], sidebar_only=True))

    def _widget_msg(self, page_hash: str, sidebar_only: bool = False) -> BackMsg:
        msg = BackMsg()
        msg.rerun_script.page_script_hash = page_hash
        states = msg.rerun_script.widget_states.widgets
        states.extend(state for path, _, state in self._widgets.values() if path[0] == SIDEBAR or not sidebar_only)
        return msg

    async def _rerun(self, msg: BackMsg) -> Run:
        client = msg.rerun_script
        client.query_string = urllib.parse.urlencode(self._query)
        client.cached_message_hashes.extend(self._cache)
        client.context_info.url = f"{self.base}/"
        start = time.perf_counter()
        await self._ws.send(msg.SerializeToString())
        run = Run(0.0)
        while True:
            fwd = await self._receive(start)
            kind = fwd.WhichOneof("type")
            if kind == "new_session":
                self._page_hash = fwd.new_session.page_script_hash
                self.session_id = fwd.new_session.initialize.session_id or self.session_id
            elif kind == "navigation":
                self._pages = {p.url_pathname: p.page_script_hash for p in fwd.navigation.app_pages}
                self._page_hash = fwd.navigation.page_script_hash or self._page_hash
            elif kind == "page_info_changed":
                self._query = urllib.parse.parse_qsl(fwd.page_info_changed.query_string, keep_blank_values=True)
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                run.elements[tuple(fwd.metadata.delta_path)] = fwd.delta.new_element
            elif kind == "script_finished" and fwd.script_finished in _DONE:
                run.seconds = time.perf_counter() - start
                self._keep_widgets(run)
                return run

    async def _receive(self, start: float) -> ForwardMsg:
        """The next ForwardMsg, a reference replaced by the message it names."""
        from websockets.exceptions import ConnectionClosed

        try:
            left = max(0.1, start + RUN_TIMEOUT_S - time.perf_counter())
            data = await asyncio.wait_for(self._ws.recv(), timeout=left)
        except ConnectionClosed as exc:
            raise RunFailed(f"disconnected: {exc}") from exc
        except TimeoutError as exc:
            raise RunFailed(f"no script_finished within {RUN_TIMEOUT_S:.0f} s") from exc
        fwd = ForwardMsg()
        fwd.ParseFromString(data)
        if fwd.WhichOneof("type") == "ref_hash":
            ref = fwd
            fwd = ForwardMsg()
            fwd.CopyFrom(self._cache[ref.ref_hash])
            fwd.metadata.CopyFrom(ref.metadata)  # where it goes this time
        elif fwd.metadata.cacheable:
            self._cache[fwd.hash] = fwd
        return fwd

    def _keep_widgets(self, run: Run) -> None:
        """The widgets of the page just drawn, at the values the frontend would show."""
        kept = {}
        for path, element in run.elements.items():
            state = widget_state(element)
            if state is None:
                continue
            key = state.id.split("-", 2)[-1]
            old = self._widgets.get(key)
            if old is not None and old[2].id == state.id and not getattr(_widget(element), "set_value", False):
                state = old[2]  # the value the user gave it
            kept[key] = (path, element, state)
        self._widgets = kept
