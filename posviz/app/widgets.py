"""Widgets shared by the pages, every one bound to the URL contract (:mod:`posviz.app.urls`)."""

from __future__ import annotations

import streamlit as st

from posviz import settings
from posviz.app.notices import special_token_notice
from posviz.app.urls import PARAMS, carried
from posviz.loading import LoadedModel
from posviz.positions import PositionEncoding
from posviz.tokenization import typed_special_tokens

#: The sentences every page starts with.
DEFAULT_TEXT = "The cat chased the dog"
DEFAULT_TEXT_PAIR = "The dog chased the cat"
#: Longest text a link carries: a longer one stays out of the URL (links of some 2 000 characters and
#: more are cut by mail clients, chat tools and servers).
URL_TEXT_LIMIT = 1500


def url(name: str) -> dict:
    """The keyword arguments that bind a widget to query parameter ``name`` of the URL contract.

    Raises
    ------
    KeyError
        For a name that :data:`posviz.app.urls.PARAMS` does not list.
    """
    if name not in PARAMS:
        raise KeyError(f"{name!r} is not a query parameter of the URL contract (posviz/app/urls.py)")
    return {"key": name, "bind": "query-params"}


def on_by_default(name: str) -> dict:
    """The keyword arguments of a toggle that is on by default, bound to query parameter ``name``
    (:func:`url`): ``value=True``, but for the run in which a lecture's slide has set it through the
    Session State API (a default beside such a value draws Streamlit's warning).

    The default must stay True on every other run: Streamlit leaves a bound widget's default out of
    the URL, so a default that was False on the runs after the first kept "off" out of the link
    (Streamlit's ``is_new_state_value``, private: the version is pinned in requirements.txt).
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    set_by_api = ctx is not None and ctx.session_state.is_new_state_value(name)
    return url(name) | ({} if set_by_api else {"value": True})


def release_bound_params(*names: str) -> None:
    """Unbind every widget of this session from the URL (with ``names``, those of these parameters), so
    that ``st.switch_page(query_params=...)`` or ``st.query_params`` may write the parameters they held
    (the widgets bind again, seeded from the new URL, when they are drawn next).

    Streamlit 1.67 refuses to set or clear a parameter bound to a widget, and keeps a page's
    bindings into the next run, so without this a rerun cannot open another page with new
    values of its bound widgets (streamlit/streamlit#14670). It uses the session's ``QueryParams``
    object, as ``st.switch_page`` does; the version of Streamlit is pinned in requirements.txt.
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    with ctx.session_state.query_params() as params:
        for param, binding in list(params._bindings_by_param.items()):
            if not names or param in names:
                params.unbind_widget(binding.widget_id)


def _correct_link(name: str, values: list[str]) -> None:
    """Write ``values`` to query parameter ``name`` before its widget is drawn in this run, so that the widget
    takes them: Streamlit 1.67 seeds a bound widget from the URL as the run found it, so that snapshot is
    renewed too (``QueryParams.set_initial_query_params_from_current``, as its page switches do; the version
    is pinned in requirements.txt)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    release_bound_params(name)
    st.query_params[name] = values
    with get_script_run_ctx().session_state.query_params() as params:
        params.set_initial_query_params_from_current()


def link_params(params: dict) -> dict:
    """The query parameters of a link the app makes, with the presentation state of this session
    (``present``), so that a link opened in front of a room stays large."""
    return {**params, "present": "true"} if st.session_state.get("present") else dict(params)


def position_range(container, label: str, count: int, default: tuple[int, int], name: str = "range",
                   **kwargs) -> tuple[int, int]:
    """The range slider of positions (or token indices) ``0 .. count - 1`` bound to ``name``: its kept
    value clipped to this model (or input) first, and put in order where the link gave it the other way
    round (``range=400&range=10``: the slider, the link and its notice then say 10–400). ``kwargs`` go to
    ``st.slider`` (``help``)."""
    linked = st.query_params.get_all(name)
    if len(linked) == 2 and all(v.isdigit() for v in linked) and int(linked[0]) > int(linked[1]):
        _correct_link(name, linked[::-1])
    clip_state(name, 0, count - 1)
    first, last = container.slider(label, 0, count - 1, default, **url(name), **kwargs)
    return min(first, last), max(first, last)


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


def text_field(container, label: str, name: str, lm: LoadedModel | None = None, **kwargs) -> str:
    """A text input bound to query parameter ``name``, its text cut to
    :func:`posviz.settings.max_text_chars` with a notice (the field keeps all that was typed or pasted).

    The text stays from page to page, in the field and in the URL, a typed one and one the URL gave alike
    (an emptied field too: ``text_pair=`` in the URL).
    A text longer than :data:`URL_TEXT_LIMIT` is kept out of the URL, with a notice that the page's
    link does not hold it. With ``lm``, a special token of its tokenizer typed into the text ("[SEP]",
    "<s>") gets a notice saying how the tokenizer took it
    (:func:`posviz.tokenization.typed_special_tokens`).

    The notices go into a container drawn below the field on every run, so that they come and go without
    moving what the page draws below (see :func:`posviz.app.navigation.main` for why that matters).
    """
    kept = st.session_state.get(name)
    default = kwargs.get("value", "")
    too_long = len(kept or "") > URL_TEXT_LIMIT
    emptied = kept == "" and bool(default)  # a default the link, the user or a slide emptied
    if kept is not None and not too_long and kept != default and name not in st.query_params:
        # the URL gave it on another page (to its field, or to keep_linked_sentences): Streamlit 1.67 leaves it
        # out of this page's URL and draws the field with its default, though the session holds it
        release_bound_params(name)
        st.query_params[name] = kept
        st.session_state[name] = kept
        kwargs.pop("value", None)  # the session's value, not the default (a keyed field's identity is its key)
    elif kept is not None and kept == st.query_params.get(name):
        # the session holds the URL's text (typed, or set by a lecture's slide): a default beside a value set
        # through the Session State API draws Streamlit's warning
        kwargs.pop("value", None)
    text = container.text_input(label, **({"key": name} if too_long else url(name)), **kwargs)
    notes = container.container()
    if emptied and text == "":
        # its default was then the empty text (above), and Streamlit leaves a default out of the URL: the
        # link would open with the page's default sentence. Written unbound (the session keeps the field's value).
        release_bound_params(name)
        st.query_params[name] = ""
    if too_long and name in st.query_params:
        # the browser wrote it to the URL while the field was still bound (after an emptied field, above)
        release_bound_params(name)
        del st.query_params[name]
    if too_long:
        notes.caption(f"{label}: longer than a link carries ({URL_TEXT_LIMIT:,} characters), so this page's link "
                      "does not hold it; share the text itself.")
    limit = settings.max_text_chars()
    if len(text) > limit:
        notes.warning(f"{label}: {len(text):,} characters, more than this app takes ({limit:,}); the first "
                      f"{limit:,} are used.", icon=":material/content_cut:")
        text = text[:limit]
    if lm is not None:
        with notes:
            special_token_notice(label, typed_special_tokens(lm, text))
    return text


def keep_linked_sentences(linked: dict[str, list[str]]) -> None:
    """Keep in the session the sentences of the link (``linked``: the URL's parameters as the run began)
    that this page has no field for, so that the page opened next shows them (:func:`text_field`);
    Streamlit 1.67 leaves them out of the URL on a page switch (:func:`posviz.app.urls.carried`)."""
    for name, text in carried(linked, st.session_state).items():
        st.session_state[name] = text


def sentence_inputs(lm: LoadedModel) -> tuple[str, str | None]:
    """The sentence (``text``) and optional second sentence (``text_pair``).

    The second sentence is segment B where the model has a segment table; otherwise the
    tokenizer simply joins the two.
    """
    left, right = st.columns(2)
    segments = lm.family.segment is not None
    text = text_field(left, "Sentence (segment A)" if segments else "Sentence", "text", lm, value=DEFAULT_TEXT)
    pair_label = ("Second sentence (segment B, optional)" if segments
                  else "Second sentence (optional, joined by the tokenizer)")
    text_pair = text_field(right, pair_label, "text_pair", lm, value=DEFAULT_TEXT_PAIR)
    return text, (text_pair or None)


def _restore_example() -> None:
    """Put :data:`DEFAULT_TEXT` in the sentence field and in the URL (:func:`text_field` then draws the
    field without its default beside the session's value, which would draw Streamlit's warning)."""
    release_bound_params("text")
    st.query_params["text"] = st.session_state["text"] = DEFAULT_TEXT


def stop_without_text(message: str) -> None:
    """Stop the page's run with ``message`` (what to type) and a button that puts the example sentence
    (:data:`DEFAULT_TEXT`) back in the emptied sentence field (``text``)."""
    st.info(message, icon=":material/edit:")
    st.button("Use the example sentence", icon=":material/undo:", on_click=_restore_example,
              help=f"“{DEFAULT_TEXT}”, the sentence the page opened with.")
    st.stop()


def index_slider(column, label: str, count: int, name: str) -> int:
    """A 0-based index slider bound to query parameter ``name``; with a single choice (a one-layer or
    one-head model) no slider, just the fact."""
    if count == 1:
        column.markdown(f"**{label}** 0 (the only one)")
        return 0
    clip_state(name, 0, count - 1)
    return column.slider(label, 0, count - 1, 0, **url(name))


def choose_encoding(lm: LoadedModel) -> PositionEncoding:
    """The positional component to show: a radio of their names (``component``) where the model has
    several (MPNet's absolute table and relative bias, T5's encoder and decoder bias).

    The radio is drawn in a container made for every model, so that the page below keeps its place when
    the model changes (see :func:`posviz.app.navigation.main` for why that matters)."""
    box = st.container()
    names = [encoding.component for encoding in lm.encodings]
    if len(names) == 1:
        return lm.encodings[0]
    if st.session_state.get("component") not in names:  # kept from another model, or a wrong URL
        st.session_state["component"] = names[0]
    return lm.encoding(box.radio("Component", names, horizontal=True, **url("component")))
