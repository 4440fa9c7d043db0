"""The shared sidebar: the model picker, presentation mode, and what is shown."""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st
import torch

from posviz import settings
from posviz.app import caches
from posviz.app.notices import positions_only_button
from posviz.app.widgets import url
from posviz.loading import BUNDLED_NAME, CONFIG_ONLY, LoadedModel, ModelLoadError
from posviz.store import BUNDLED, ModelKey, key_for

#: Models offered in the picker; any other Hub id or local folder can be typed in.
MODEL_CHOICES = [
    BUNDLED_NAME,
    "bert-base-uncased",
    "roberta-base",
    "gpt2",
    "distilbert-base-uncased",
    "albert-base-v2",
    "google/electra-small-discriminator",
    "facebook/opt-125m",
    "facebook/bart-base",
    *CONFIG_ONLY,
]


def _devices() -> list[str]:
    found = ["auto", "cpu"]
    if torch.cuda.is_available():
        found.append("cuda")
    if torch.backends.mps.is_available():
        found.append("mps")
    return found


def _pickers(hosted: bool) -> ModelKey:
    """The model picker's widgets; the key of what they say."""
    st.selectbox(
        "Model", MODEL_CHOICES, accept_new_options=True, **url("model"),
        help="Pick a preset, or type any Hugging Face Hub id (org/name)"
             + ("" if hosted else " or local folder") + " and press Enter. Models other than the bundled "
             "one need a network the first time.")
    revision, device = st.columns(2)  # side by side: Presentation mode stays in view on a 768-pixel-high projector
    revision.text_input("Revision", **url("revision"), placeholder="default branch",
                        help="Branch, tag or commit of a Hub model.")
    device.selectbox("Device", _devices(), **url("device"), help="auto: cuda, then mps, then cpu.")
    st.toggle("Positions only (no weights)", **url("positions_only"),
              help="Read only config.json and the positional tensors (byte ranges of the safetensors checkpoint): "
                   "seconds for a model of any size. The pages that run sentences through the model need the full "
                   "weights.")
    st.toggle("Presentation mode", **url("present"), help="Large fonts and thick lines for a projector.")
    state = st.session_state
    return key_for(state.model, state.revision, state.device, state.positions_only)


class Shown(NamedTuple):
    """What the sidebar shows: the key and model the pages use, and why it is not the one asked for.

    Attributes
    ----------
    key : ModelKey
    lm : LoadedModel
    asked : str
        The model asked for, by name (what was typed or linked).
    failure : str
        Why the model asked for is not shown (its load error), or empty.
    """

    key: ModelKey
    lm: LoadedModel
    asked: str
    failure: str


def _load(wanted: ModelKey) -> tuple[ModelKey, str]:
    """Load the model asked for, with progress in the sidebar; where it fails, say why and fall back
    to the last model that loaded (else the bundled one). Returns the key of the model shown and the
    failure (empty where the model asked for loaded)."""
    steps = st.empty()
    failed = st.session_state.setdefault("failed_models", {})
    try:
        if wanted in failed:  # asked before in this session: no second wait for the same failure
            raise failed[wanted].with_traceback(None)
        caches.loaded_model(wanted, progress=lambda message: steps.info(message, icon=":material/downloading:"))
        steps.empty()
        st.session_state["last_good_model"] = wanted
        return wanted, ""
    except ModelLoadError as exc:
        failed[wanted] = exc
        failure = str(exc)
        with steps.container():
            st.error(f"{exc} Pick another model above (or reload the page to try this one again); "
                     "meanwhile the last model that loaded is shown.", icon=":material/warning:")
            if exc.positions_readable:
                positions_only_button("Show its positions only", True, ":material/speed:")
    key = st.session_state.get("last_good_model", BUNDLED)
    try:
        caches.loaded_model(key)
    except ModelLoadError:  # the last good model cannot come back (offline, dropped): the bundled one
        key = BUNDLED
    return key, failure


def draw() -> Shown:
    """Draw the shared sidebar and return the model it shows.

    Drawn by the entry script before every page (:func:`posviz.app.navigation.main`), so its
    widgets are shared by all pages. The picker's values live in the URL (``model``, ``revision``,
    ``device``, ``positions_only``). When the chosen model cannot be loaded, the sidebar shows why
    and the last model that loaded stays in use; what the user typed stays in the field.

    Returns
    -------
    Shown
    """
    hosted = settings.hosted()
    with st.sidebar:
        wanted = _pickers(hosted)
        key, failure = _load(wanted)
        if wanted.name is None and wanted.revision:
            st.caption("The bundled model has no revisions: the revision is ignored.")
        lm = caches.loaded_model(key)
        weights = " · positions only" if lm.positions_only else ""
        st.caption(f"Showing **{lm.name}** · {lm.model_type} · {lm.scheme_label} · {lm.device}{weights}")
        if hosted:
            budget = settings.human_bytes(settings.model_budget(lm.device))
            st.caption(f"Hosted demo: Hub models with safetensors weights that fit {settings.model_budget_source()} "
                       f"(now {budget}; larger ones: positions only); sentences up to "
                       f"{settings.max_text_chars():,} characters.")
    return Shown(key, lm, wanted.name or BUNDLED_NAME, failure)
