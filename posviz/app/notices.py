"""Messages that say what a page cannot show and what to do instead; nothing crashes."""

from __future__ import annotations

import logging

import streamlit as st

from posviz.app import model_facts
from posviz.app.reruns import whole_page_next
from posviz.app.urls import unusable
from posviz.loading import CONFIG_ONLY, LoadedModel
from posviz.positions import PositionEncoding
from posviz.tokenization import TypedSpecialToken

LOG = logging.getLogger("posviz")


def explain(encoding: PositionEncoding) -> None:
    """The scheme's formula and its description, with sources (:func:`posviz.app.model_facts.scheme_text`)."""
    model_facts.scheme_text(encoding.formula, encoding.describe())


def require_vectors(encoding: PositionEncoding, lm: LoadedModel, what: str) -> None:
    """Stop the page with a way forward where the scheme has no vector per position.

    ``what`` says what the view would do with vectors, e.g. "to project".
    """
    if not encoding.has_vectors:
        if encoding.has_bias:
            why = (f"its positions are a bias per head on the attention scores: no vector per position {what}. Its "
                   "position-position structure is on the Position similarity page")
        else:
            why = f"it has no vector per position {what}; what it has is said below"
        st.info(f"{lm.name} uses {lm.scheme_label}: {why}. Pick a model with learned, sinusoidal or rotary positions "
                "to see this view.", icon=":material/info:")
        explain(encoding)
        st.stop()


def positions_pages(lm: LoadedModel) -> str:
    """The pages that show something of ``lm``'s positions, in words ("the Model page" where it has neither
    vectors nor a bias: a convolution, a recurrence)."""
    if any(e.has_vectors for e in lm.encodings):
        return "the Model, Position similarity, Projection and Compare pages"
    if any(e.has_bias for e in lm.encodings):
        return "the Model and Position similarity pages"
    return "the Model page"


_INPUTS = {"image": "an image", "audio": "audio"}


def require_text(lm: LoadedModel, what: str) -> None:
    """Stop the page (or the rest of it) with a way forward where the model reads no text (a vision or
    speech model: :attr:`posviz.LoadedModel.reads_text`).

    ``what`` names what the view runs, e.g. "through every attention layer".
    """
    if not lm.reads_text:
        needs = _INPUTS.get(lm.input_kind, f"`{lm.input_kind}`")
        st.info(f"{lm.name} reads {needs}, not text: this view runs sentences {what}, so it needs a model that "
                f"reads text; posviz does not feed a model {needs}. Its positions are on {positions_pages(lm)}; "
                "for this view, pick a text model (or the bundled one) in the sidebar.", icon=":material/image:" if lm.input_kind == "image" else ":material/info:")
        st.stop()


def _set_positions_only(value: bool) -> None:
    st.session_state.positions_only = value


def positions_only_button(label: str, value: bool, icon: str) -> None:
    """A button that switches the sidebar's "Positions only" (``positions_only``) to ``value``."""
    st.button(label, icon=icon, on_click=_set_positions_only, args=(value,))


def require_weights(lm: LoadedModel, what: str) -> None:
    """Stop the page (or the rest of it) with a way forward where only the positions were loaded.

    ``what`` names what the view runs, e.g. "through every attention layer".
    """
    if lm.positions_only:
        if lm.name in CONFIG_ONLY:
            st.info(f"This view runs sentences {what}, which needs the model's weights; posviz ships only the "
                    f"configuration of {lm.short_name}, enough for its positions (Model, Position similarity, "
                    "Projection, Compare). Pick its Hub id to load the whole model, or the bundled model.",
                    icon=":material/info:")
            st.stop()
        st.info(f"This view runs sentences {what}, which needs the model's full weights; only its positional "
                "tensors are loaded. Load the whole model (if it fits this machine), or see the positions on the "
                "Position similarity and Projection pages.", icon=":material/info:")
        positions_only_button("Load the full model", False, ":material/download:")
        st.stop()


def require_attention(lm: LoadedModel, what: str) -> None:
    """Stop the page (or the rest of it) with a way forward where posviz cannot read the family's attention
    as query × key weights (:attr:`posviz.families.Family.unread_attention`); ``what`` names the view."""
    if lm.family.unread_attention:
        st.info(f"{what} cannot be shown for {lm.short_name}: {lm.family.unread_attention} Its positions are on "
                f"{positions_pages(lm)}.", icon=":material/info:")
        st.stop()


def truncation_notice(truncated: int, lm: LoadedModel, paired: bool = False, limit: int | None = None) -> None:
    """Say how many tokens were dropped, when any were (``paired``: the input had a second sentence;
    ``limit``: the tokens read were limited below the model's positions), and how to see them."""
    if truncated:
        where = ("from the end of the longer sentence first (the tokenizer's longest-first truncation)" if paired
                 else "from the end")
        if limit and limit < lm.max_tokens:
            bound = f"the {limit:,} tokens read (Tokens read and generated)"
            more = "raise “Read at most” there to read more of it"
        else:
            bound = f"the model's {lm.max_tokens:,} positions"
            more = "shorten the text to see its end, or pick a model with more positions"
        st.warning(f"The input is longer than {bound}: {truncated:,} tokens were dropped, {where}. The figures "
                   f"show the tokens kept; {more}.", icon=":material/content_cut:")


#: Set with ``limit`` by the button of :func:`attention_budget_notice`, for the run after its click.
_LIMIT_SET = "limit_set_by_budget"


def _set_limit(tokens: int) -> None:
    st.session_state.limit = tokens
    st.session_state[_LIMIT_SET] = True
    whole_page_next()  # the field is above the page's fragment


def budget_set_limit() -> bool:
    """Whether the button of :func:`attention_budget_notice` has just set ``limit`` (once per click): its
    field is then drawn without a default, which beside a value set through the Session State API draws
    Streamlit's warning. Any other run draws it with its default, so that a run that leaves the field
    out (no sentence) does not reset it to its minimum."""
    return bool(st.session_state.pop(_LIMIT_SET, False))


def attention_budget_notice(cost) -> None:
    """Stop the page where a reading of attention would exceed its memory budget: the figures, and a
    button that reads as many tokens as fit (``limit``); the text typed is kept.

    ``cost`` is a :class:`posviz.analysis.attention_budget.ReadingEstimate`.
    """
    st.warning(f"This input's attention is over the memory budget: {cost.describe()} Read fewer tokens, "
               "or pick a smaller model.", icon=":material/memory:")
    st.button(f"Read the first {cost.fitting_tokens:,} tokens", icon=":material/content_cut:", on_click=_set_limit,
              args=(cost.fitting_tokens,))
    st.stop()


def page_failed(exc: Exception) -> None:
    """Report an unexpected failure of a page in words, log the traceback, keep the app usable. An
    ImportError is no matter of the model or the input: a page's file runs afresh each time, the
    library's modules stay as the server imported them, so new code under a running server fails so."""
    LOG.exception("page failed")
    if isinstance(exc, ImportError):
        st.error(f"This page could not import what it needs ({type(exc).__name__}: {exc}). If posviz was updated "
                 "while the app was running, restart the app (stop it and start it again); otherwise reinstall "
                 "its requirements. The full error is in the server log.", icon=":material/error:")
        return
    st.error(f"This view failed for the current model and input ({type(exc).__name__}: {exc}). "
             "Your inputs are kept: try another sentence or model, or another page. "
             "The full error is in the server log.", icon=":material/error:")


def special_token_notice(label: str, typed: list[TypedSpecialToken]) -> None:
    """Say how the tokenizer took the special tokens typed into a text box (none: nothing shown)."""
    for found in typed:
        how = (f"reads it as its special token `{found.text}`, as if it stood there in the model's own input"
               if found.special else f"reads it as plain text: {' · '.join(f'`{p}`' for p in found.pieces)}")
        st.info(f"{label} holds “{found.text}”, which is one of the tokenizer's special tokens: the tokenizer "
                f"{how}.", icon=":material/token:")


def unusable_values(linked: dict[str, list[str]], page: str) -> None:
    """A notice for each value of the link that this page could not use (:func:`posviz.app.urls.unusable`),
    naming it and what was used instead; those it has no choice for at all (the zoom's two ranges, for an
    input too short to zoom into) share one notice."""
    found = unusable(linked, st.session_state, page)
    for name, given, used in found:
        if used:
            st.info(f"The link asks for {name} = {given}, which this page cannot use here: showing {name} = {used} "
                    "instead.", icon=":material/link_off:")
    ignored = [f"{name} = {given}" for name, given, used in found if not used]
    if ignored:
        asked = ignored[0] if len(ignored) == 1 else ", ".join(ignored[:-1]) + " and " + ignored[-1]
        choices, they = ("such choice", "it is") if len(ignored) == 1 else ("such choices", "they are")
        st.info(f"The link asks for {asked}, which this page cannot use here: it offers no {choices} for this model "
                f"and input, so {they} ignored.",
                icon=":material/link_off:")
