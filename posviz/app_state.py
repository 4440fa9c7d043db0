"""The one Streamlit glue module: cached loaders, the shared sidebar, shareable state.

Pages call these functions and build figures with :mod:`posviz.figures`; they never reach into
a model's modules themselves. Heavy results are cached by hashable keys (model name, revision,
device, text), never by tensors, so moving a slider does not repeat a forward pass.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections import OrderedDict
from typing import Callable, NamedTuple

import numpy as np
import pandas  # noqa: F401  imported here, once, so the warm-up thread never imports it beside a page
import streamlit as st
import torch
from streamlit.runtime.pages_manager import PagesManager

import posviz
from posviz import figures, settings
from posviz.analysis import sample_positions
from posviz.loading import BUNDLED_NAME

LOG = logging.getLogger("posviz")


#: Models offered in the picker; any other Hub id or local folder can be typed in.
PRESETS = [
    BUNDLED_NAME,
    "bert-base-uncased",
    "roberta-base",
    "gpt2",
    "distilbert-base-uncased",
    "albert-base-v2",
    "google/electra-small-discriminator",
    "facebook/opt-125m",
    "facebook/bart-base",
]
DEFAULT_TEXT = "The cat chased the dog"
DEFAULT_TEXT_PAIR = "The dog chased the cat"
#: Widget keys shared by several pages, kept when the user moves between pages.
SHARED_KEYS = ("text", "text_pair")


#: Larger text for a projector (Streamlit's theme font size is fixed per server, not per session).
PRESENTATION_CSS = """<style>
.stMainBlockContainer { font-size: 1.3rem; }
.stMainBlockContainer h1 { font-size: 3.2rem; }
.stMainBlockContainer [data-testid="stCaptionContainer"] { font-size: 1.1rem; color: #222; }
.stMainBlockContainer [data-testid="stWidgetLabel"] p { font-size: 1.15rem; }
</style>"""


def presenting() -> bool:
    """Whether the sidebar's presentation mode is on."""
    return bool(st.session_state.get("present"))


class ModelKey(NamedTuple):
    """Hashable identity of a loaded model: what the caches are keyed by."""

    name: str | None
    revision: str | None
    device: str
    positions_only: bool = False


def key_for(name: str | None, revision: str | None = None, device: str = "auto",
            positions_only: bool = False) -> ModelKey:
    """The cache key of what a user typed: the bundled model's name (or nothing) means the bundled model."""
    name = (name or "").strip()
    return ModelKey(None if name in ("", BUNDLED_NAME) else name, (revision or "").strip() or None, device,
                    bool(positions_only))


#: Most models kept in memory at once; the least recently used goes first.
MAX_MODELS = 4


class _Entry:
    """One model of the store: loaded once (under its own lock), with its size in bytes and its
    position encodings."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.model: posviz.LoadedModel | None = None
        self.bytes = 0
        self.encodings: list[posviz.PositionEncoding] | None = None


class ModelStore:
    """The process-wide loaded models, shared by every session, least recently used first.

    At most :data:`MAX_MODELS` models and :func:`posviz.settings.cache_budget` bytes of weights
    stay loaded: after each load the least recently used others are dropped (the newest always
    stays) and their memory is given back. A session that asks for a loaded model never waits
    behind another one's load; loads run one at a time, because transformers' loading is not
    thread-safe (it switches process-wide torch state while it builds a model on the meta device).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loading = threading.Lock()
        self._entries: OrderedDict[ModelKey, _Entry] = OrderedDict()
        self.budget = settings.cache_budget()

    def _entry(self, key: ModelKey) -> _Entry:
        with self._lock:
            entry = self._entries.setdefault(key, _Entry())
            self._entries.move_to_end(key)
            return entry

    def _ready(self, key: ModelKey, progress: Callable[[str], None] | None = None) -> _Entry:
        entry = self._entry(key)
        with entry.lock:
            if entry.model is None:
                try:
                    with self._loading:
                        entry.model = posviz.load_model(key.name, revision=key.revision, device=key.device,
                                                        progress=progress, positions_only=key.positions_only)
                except posviz.ModelLoadError:
                    with self._lock:
                        if self._entries.get(key) is entry:
                            del self._entries[key]
                    raise
                entry.bytes = entry.model.weight_bytes
                self._evict(keep=key)
        return entry

    def get(self, key: ModelKey, progress: Callable[[str], None] | None = None) -> posviz.LoadedModel:
        """The model for ``key``, loaded now if needed.

        Raises
        ------
        posviz.ModelLoadError
        """
        return self._ready(key, progress).model

    def encodings(self, key: ModelKey) -> list[posviz.PositionEncoding]:
        """:func:`posviz.position_encodings` of the model, computed once (they hold tensors: shared)."""
        entry = self._ready(key)
        with entry.lock:
            if entry.encodings is None:
                entry.encodings = posviz.position_encodings(entry.model)
            return entry.encodings

    def loaded(self) -> dict[ModelKey, int]:
        """The loaded models and the bytes each holds, least recently used first."""
        with self._lock:
            return {key: entry.bytes for key, entry in self._entries.items() if entry.model is not None}

    def _evict(self, keep: ModelKey) -> None:
        """Drop least recently used models until the count and the bytes fit, then free their memory."""
        with self._lock:
            def over() -> bool:
                loaded = [e.bytes for e in self._entries.values() if e.model is not None]
                return len(loaded) > MAX_MODELS or sum(loaded) > self.budget

            for key in [k for k in self._entries if k != keep]:
                if not over():
                    break
                if self._entries[key].model is not None:
                    LOG.info("dropping %s from the model cache", key)
                    del self._entries[key]
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


@st.cache_resource(show_spinner=False)
def model_store() -> ModelStore:
    """The process's :class:`ModelStore`."""
    return ModelStore()


def loaded_model(key: ModelKey, progress: Callable[[str], None] | None = None) -> posviz.LoadedModel:
    """The model for ``key``, loaded once per process and shared by every session.

    ``progress`` is called with each loading step when the model is not loaded yet. (Streamlit's
    ``st.cache_resource`` would forbid that callback from writing to the sidebar.)

    Raises
    ------
    posviz.ModelLoadError
    """
    return model_store().get(key, progress)


#: Most positions a position-position figure or a projection computes; wider ranges take a stride.
MAX_SHOWN = 2048
#: The same for per-head biases, which hold one matrix per head.
MAX_SHOWN_BIAS = 512
#: Rotary frequencies are shown in this many bands, fastest first.
ROTARY_BANDS = 4


def position_encodings(key: ModelKey) -> list[posviz.PositionEncoding]:
    """The model's :func:`posviz.position_encodings`, kept with the model in the store."""
    return model_store().encodings(key)


def rotary_band(encoding: posviz.RotaryEncoding, band: int) -> slice:
    """Frequencies of band ``band`` of :data:`ROTARY_BANDS` (0 = fastest)."""
    edges = np.linspace(0, encoding.rotary_dim // 2, ROTARY_BANDS + 1).round().astype(int)
    return slice(edges[band], edges[band + 1])


@st.cache_data(show_spinner=False, max_entries=32)
def position_matrix(key: ModelKey, component: int, metric: str, first: int, last: int) -> tuple[np.ndarray, int]:
    """The scheme's position-position matrix over positions ``first .. last``, and the stride.

    Vector schemes: the similarity of the position vectors (rotary: of the rotation features),
    float32 [n, n]. Bias schemes: the bias of every head, float32 [heads, n, n] (``metric``
    unused). ``n ≤ MAX_SHOWN`` (``MAX_SHOWN_BIAS`` for biases).
    """
    encoding = position_encodings(key)[component]
    positions, step = sample_positions(first, last, MAX_SHOWN_BIAS if encoding.kind == "bias" else MAX_SHOWN)
    if encoding.kind == "bias":
        return encoding.bias(positions), step
    return posviz.similarity(encoding.vectors(positions), metric), step


@st.cache_data(show_spinner=False, max_entries=8)
def sinusoid_matrix(width: int, layout: str, metric: str, first: int, last: int) -> tuple[np.ndarray, int]:
    """Similarity of the fixed sinusoid of ``width`` over positions ``first .. last`` (stride as
    :func:`position_matrix`), the reference beside any model."""
    positions, step = sample_positions(first, last, MAX_SHOWN)
    table = torch.from_numpy(posviz.sinusoidal(last + 1, width, layout)[positions])
    return posviz.similarity(table, metric), step


def reference_width(encoding: posviz.PositionEncoding) -> int:
    """The width of the sinusoid that matches an encoding: the table width, or for rotary the
    rotated dimensions (a sinusoid of that width with base 10000 has exactly the default RoPE kernel)."""
    return int(encoding.vectors(np.array([0])).shape[-1])


def rotary_kernel_by_offset(key: ModelKey, component: int, offsets: np.ndarray, band: int | None = None) -> np.ndarray:
    """``K(0, k)`` for each offset k (the kernel depends on the offset only), float32 [len(offsets)],
    over all frequencies or one band."""
    encoding = position_encodings(key)[component]
    band_slice = None if band is None else rotary_band(encoding, band)
    features = encoding.vectors(np.concatenate([[0], offsets]), band=band_slice)
    return (features[1:] @ features[0]).cpu().numpy()


@st.cache_data(show_spinner=False, max_entries=16)
def position_projection(key: ModelKey, component: int, method: str, n_components: int) -> tuple[np.ndarray, np.ndarray]:
    """UMAP or PCA of the position vectors (at most MAX_SHOWN, by stride): (coords, positions)."""
    encoding = position_encodings(key)[component]
    positions, _ = sample_positions(0, encoding.num_positions - 1, MAX_SHOWN)
    warm_up().wait()
    return posviz.project(encoding.vectors(positions), method, n_components), positions


def choose_encoding(key: ModelKey) -> tuple[int, posviz.PositionEncoding]:
    """The positional component to show: a radio (``component`` in the URL) where the model has
    several (MPNet's table and relative bias, T5's encoder and decoder bias)."""
    encodings = position_encodings(key)
    index = 0
    if len(encodings) > 1:
        index = st.radio("Component", range(len(encodings)), horizontal=True, key="component",
                         bind="query-params", format_func=lambda i: encodings[i].component)
    return index, encodings[index]


def explain(encoding: posviz.PositionEncoding) -> None:
    """The scheme's formula and its description, with sources."""
    if encoding.formula:
        st.latex(encoding.formula)
    st.caption(encoding.describe())


def require_vectors(encoding: posviz.PositionEncoding, lm: posviz.LoadedModel, what: str) -> None:
    """Stop the page with a way forward where the scheme has no vector per position."""
    if encoding.kind != "vectors":
        st.info(f"{lm.name} uses {lm.scheme_label}: {what}. Its position-position structure is on the "
                "Position similarity page; pick a model with learned, sinusoidal or rotary positions to "
                "see this view.", icon=":material/info:")
        explain(encoding)
        st.stop()


@st.cache_data(show_spinner=False, max_entries=16)
def input_representation(key: ModelKey, text: str, text_pair: str | None) -> posviz.InputEmbeddings:
    """Cached :func:`posviz.input_embeddings`."""
    return posviz.input_embeddings(loaded_model(key), text, text_pair)


@st.cache_data(show_spinner=False, max_entries=8)
def attention_patterns(key: ModelKey, text: str, text_pair: str | None,
                       target: str | None = None) -> posviz.AttentionPatterns:
    """Cached :func:`posviz.attention`; ``target`` is the decoder's sentence of an
    encoder-decoder model (None or empty: the source sentence), ignored by other models."""
    return posviz.attention(loaded_model(key), text, text_pair, target=target or None)


@st.cache_resource(show_spinner=False)
def warm_up() -> threading.Event:
    """Import umap-learn (with scikit-learn, SciPy, numba) and compile its numba code in a
    background thread, once per process, so the first projection is fast.

    Returns an event set once the imports are done: a page must wait for it before it projects,
    so that no module is imported by two threads at once (a half-imported module breaks both).
    """
    imported = threading.Event()

    def run() -> None:
        try:
            import umap  # noqa: F401
        finally:
            imported.set()
        posviz.project(np.random.default_rng(0).normal(size=(64, 8)), "umap")

    threading.Thread(target=run, name="posviz-umap-warm-up", daemon=True).start()
    return imported


def _devices() -> list[str]:
    found = ["auto", "cpu"]
    if torch.cuda.is_available():
        found.append("cuda")
    if torch.backends.mps.is_available():
        found.append("mps")
    return found


def sidebar() -> ModelKey:
    """Draw the shared sidebar (model picker) and return the key of the model to use.

    The picker's values live in the URL (``model``, ``revision``, ``device``). When the chosen
    model cannot be loaded, the sidebar shows why and the last model that loaded stays in use;
    what the user typed stays in the field.
    """
    for shared in SHARED_KEYS:
        if shared in st.session_state:
            st.session_state[shared] = st.session_state[shared]
    hosted = settings.hosted()
    with st.sidebar:
        st.selectbox(
            "Model", PRESETS, key="model", accept_new_options=True, bind="query-params",
            help="Pick a preset, or type any Hugging Face Hub id (org/name)"
                 + ("" if hosted else " or local folder") + " and press Enter. Models other than the bundled "
                 "one need a network the first time.")
        st.text_input("Revision", key="revision", bind="query-params", placeholder="default branch",
                      help="Branch, tag or commit of a Hub model.")
        st.selectbox("Device", _devices(), key="device", bind="query-params",
                     help="auto: cuda, then mps, then cpu.")
        st.toggle("Positions only (no weights)", key="positions_only", bind="query-params",
                  help="Read only config.json and the positional tensors (byte ranges of the safetensors "
                       "checkpoint): seconds for a model of any size. The pages that run sentences through "
                       "the model need the full weights.")
        if st.toggle("Presentation mode", key="present", bind="query-params",
                     help="Large fonts and thick lines for a projector."):
            st.html(PRESENTATION_CSS)
        wanted = key_for(st.session_state.model, st.session_state.revision, st.session_state.device,
                         st.session_state.positions_only)
        key = wanted
        steps = st.empty()
        failed = st.session_state.setdefault("failed_models", {})
        try:
            if wanted in failed:  # asked before in this session: no second wait for the same failure
                raise failed[wanted].with_traceback(None)
            loaded_model(wanted, progress=lambda message: steps.info(message, icon=":material/downloading:"))
            steps.empty()
            st.session_state["last_good_model"] = wanted
        except posviz.ModelLoadError as exc:
            failed[wanted] = exc
            with steps.container():
                st.error(f"{exc} Pick another model above (or reload the page to try this one again); "
                         "meanwhile the last model that loaded is shown.", icon=":material/warning:")
                if isinstance(exc, posviz.ModelTooLargeError):
                    st.button("Show its positions only", icon=":material/speed:", on_click=_set_positions_only,
                              args=(True,))
            key = st.session_state.get("last_good_model", ModelKey(None, None, "auto"))
            try:
                loaded_model(key)
            except posviz.ModelLoadError:  # the last good model cannot come back (offline, dropped): the bundled one
                key = ModelKey(None, None, "auto")
        if wanted.name is None and wanted.revision:
            st.caption("The bundled model has no revisions: the revision is ignored.")
        lm = loaded_model(key)
        weights = " · positions only" if lm.positions_only else ""
        st.caption(f"Showing **{lm.name}** · {lm.family} · {lm.scheme_label} · {lm.device}{weights}")
        if hosted:
            budget = settings.human_bytes(settings.model_budget(lm.device))
            st.caption(f"Hosted demo: Hub models with safetensors weights that fit {settings.model_budget_source()} "
                       f"(now {budget}; larger ones: positions only); sentences up to "
                       f"{settings.max_text_chars():,} characters.")
    return key


def _set_positions_only(value: bool) -> None:
    st.session_state.positions_only = value


def require_weights(lm: posviz.LoadedModel, what: str) -> None:
    """Stop the page (or the rest of it) with a way forward where only the positions were loaded.

    ``what`` names what the view runs, e.g. "through every attention layer".
    """
    if lm.positions_only:
        st.info(f"This view runs sentences {what}, which needs the model's full weights; only its positional "
                "tensors are loaded. Load the whole model (if it fits this machine), or see the positions on the "
                "Position similarity and Projection pages.", icon=":material/info:")
        st.button("Load the full model", icon=":material/download:", on_click=_set_positions_only, args=(False,))
        st.stop()


def current_model() -> ModelKey:
    """The key of the model chosen in the sidebar; every page starts with this call.

    On a freshly started server whose first request names a page (``/similarity``), Streamlit
    runs the file of ``pages/`` directly, in its legacy multipage mode, without ``app.py``;
    this marks the app as driven by ``st.navigation`` and reruns it through ``app.py``.
    """
    if "model_key" not in st.session_state:
        PagesManager.uses_pages_directory = False
        st.rerun()
    return st.session_state["model_key"]


def page_failed(exc: Exception) -> None:
    """Report an unexpected failure of a page in words, log the traceback, keep the app usable."""
    LOG.exception("page failed")
    st.error(f"This view failed for the current model and input ({type(exc).__name__}: {exc}). "
             "Your inputs are kept: try another sentence or model, or another page. "
             "The full error is in the server log.", icon=":material/error:")


def show(fig, arrays: dict[str, np.ndarray] | None = None) -> None:
    """Draw a plotly figure at full width with its own colours, and under it a row of small
    download buttons.

    The chart's toolbar (camera) saves a PNG at twice the shown size, rendered by the browser.
    The buttons: "SVG" (rendered on the server by kaleido in a headless Chromium, a few seconds),
    "HTML (offline)" (the interactive chart with plotly.js inside, about 5 MB) and, with
    ``arrays``, "CSV" (the first array, where it is 1-D or 2-D) and "NPZ" (every array by name).
    Nothing is built until a button is clicked: each button holds a function, not the file.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
    arrays : dict of str to np.ndarray, optional
        The numbers the figure shows (the matrix first), and their labels (positions, tokens).
    """
    from posviz import export

    if presenting():
        figures.for_presentation(fig)
    stem = export.slug(fig)
    st.plotly_chart(fig, theme=None, config=export.plotly_config(stem))
    _download_row(fig, stem, arrays or {})


def _download_row(fig, stem: str, arrays: dict[str, np.ndarray]) -> None:
    """The download buttons of :func:`show`, in one row; keys from the file name, numbered where
    two charts of a page share it."""
    from streamlit.errors import StreamlitDuplicateElementKey

    from posviz import export

    browser = export.find_browser()
    buttons = [("SVG", f"{stem}.svg", "image/svg+xml", lambda: export.figure_image(fig, "svg"),
                None if browser else export.BROWSER_FIX),
               ("HTML (offline)", f"{stem}.html", "text/html", lambda: export.figure_html(fig, stem), None)]
    if arrays:
        csv_name = export.csv_array(arrays)
        if csv_name:
            buttons.append(("CSV", f"{stem}-{csv_name}.csv", "text/csv",
                            lambda: export.csv_text(arrays[csv_name]), None))
        buttons.append(("NPZ", f"{stem}.npz", "application/octet-stream", lambda: export.npz_bytes(arrays), None))
    helps = {"SVG": "Vector image for slides and papers (rendered on the server: a few seconds).",
             "HTML (offline)": "The interactive chart as one file with plotly.js inside: opens without a network.",
             "CSV": "The figure's matrix, one row per line.", "NPZ": "Every array of the figure, for numpy.load."}
    row = st.container(horizontal=True, gap="small")
    for number in range(1, 100):
        prefix = f"download-{stem}" + (f"-{number}" if number > 1 else "")
        try:
            for i, (label, name, mime, data, missing) in enumerate(buttons):
                row.download_button(label, data, file_name=name, mime=mime, key=f"{prefix}-{label.split()[0].lower()}",
                                    on_click="ignore", type="tertiary", icon=":material/download:",
                                    disabled=missing is not None, help=missing or helps[label])
            return
        except StreamlitDuplicateElementKey:
            if i:  # the first button of the row took its key: another key cannot clash
                raise


def sentence_inputs(lm: posviz.LoadedModel) -> tuple[str, str | None]:
    """The sentence (``text``) and optional second sentence (``text_pair``), bound to the URL.

    The second sentence is segment B where the model has a segment table; otherwise the
    tokenizer simply joins the two.
    """
    left, right = st.columns(2)
    segments = lm.layout.segment is not None
    text = text_field(left, "Sentence (segment A)" if segments else "Sentence", "text", value=DEFAULT_TEXT)
    text_pair = text_field(
        right, "Second sentence (segment B, optional)" if segments else "Second sentence (optional, joined by the tokenizer)",
        "text_pair", value=DEFAULT_TEXT_PAIR)
    return text, (text_pair or None)


def text_field(container, label: str, key: str, **kwargs) -> str:
    """A text input bound to the URL, its text cut to :func:`posviz.settings.max_text_chars` with a
    notice (the field keeps all that was typed or pasted)."""
    text = container.text_input(label, key=key, bind="query-params", **kwargs)
    limit = settings.max_text_chars()
    if len(text) > limit:
        st.warning(f"{label}: {len(text):,} characters, more than this app takes ({limit:,}); the first "
                   f"{limit:,} are used.", icon=":material/content_cut:")
        return text[:limit]
    return text


def clip_state(key: str, low: int, high: int) -> None:
    """Clip the kept value of widget ``key`` (a number or a (first, last) range) into ``low .. high``.

    Call it before drawing a widget whose bounds depend on the model: a value kept from a larger
    model (layer 11, positions 0-511) would otherwise exceed the new bounds.
    """
    value = st.session_state.get(key)
    if isinstance(value, (int, float)):
        clipped = type(value)(min(max(value, low), high))
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        clipped = tuple(type(v)(min(max(v, low), high)) for v in value)
    else:
        return
    if clipped != value:
        st.session_state[key] = clipped


def index_slider(column, label: str, count: int, key: str) -> int:
    """A 0-based index slider bound to the URL; with a single choice (a one-layer or one-head
    model) no slider, just the fact."""
    if count == 1:
        column.markdown(f"**{label}** 0 (the only one)")
        return 0
    clip_state(key, 0, count - 1)
    return column.slider(label, 0, count - 1, 0, key=key, bind="query-params")


def truncation_notice(truncated: int, lm: posviz.LoadedModel, paired: bool = False) -> None:
    """Say how many tokens were dropped, when any were (``paired``: the input had a second sentence)."""
    if truncated:
        where = ("from the end of the longer sentence first (the tokenizer's longest-first truncation)" if paired
                 else "from the end")
        st.warning(f"The input is longer than the model's {lm.max_tokens} positions: {truncated:,} tokens were "
                   f"dropped, {where}.", icon=":material/content_cut:")
