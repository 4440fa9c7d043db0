"""Compare page: the model's position-position structure beside a sinusoid or another model, or a table of
several models with both references (:mod:`posviz.model_table`)."""

import streamlit as st

from posviz import settings
from posviz.app import caches, comparison, layout
from posviz.app.downloads import show
from posviz.app.notices import require_vectors
from posviz.app.navigation import current_model
from posviz.app.widgets import choose_encoding, clip_state, position_range, url
from posviz.loading import ModelLoadError
from posviz.model_table import MAX_MODELS
from posviz.positions import SINUSOID_LAYOUTS
from posviz.positions.base import METRICS
from posviz.store import key_for
from posviz.views import compare, positions
from posviz.views.limits import MAX_POSITIONS

key, lm = current_model()

st.title("Compare")
c1, c2, c3 = st.columns([2, 1, 2])
hosted = settings.hosted()
where = "Hub id" if hosted else "Hub id or local folder"
against = c1.radio("Beside it", ["sinusoid", "model", "models"], horizontal=True, **url("against"),
                   captions=["of the same width", where, f"up to {MAX_MODELS - 1} more, in one table"])
metric = c2.radio("Similarity", METRICS, index=METRICS.index("cosine"), horizontal=True, **url("metric"),
                  help="Cosine by default: dot products of different models differ in scale by orders of magnitude.")

if against == "models":
    comparison.many_models(key, c3, metric, where)
else:
    encoding = choose_encoding(lm)
    require_vectors(encoding, lm, "to compare with a sinusoid")
    width = encoding.reference_width

    if against == "sinusoid":
        arrangement = c3.selectbox("Sinusoid layout", SINUSOID_LAYOUTS, **url("layout"),
                              help="interleaved: the paper; halves: Marian, Pegasus; t2t: M2M100, Whisper.")
        other_name = f"sinusoid, width {width} ({arrangement})"
        n = encoding.num_positions
    else:
        other = c3.text_input("Other model (Hub id)" if hosted else "Other model (Hub id or local folder)",
                              **url("other"), placeholder="e.g. gpt2" + ("" if hosted else ", ./my-model")
                              + " or all-MiniLM-L6-v2 (bundled)")
        if not other.strip():
            st.info("Type a second model to compare with, or compare with the sinusoid.", icon=":material/edit:")
            st.stop()
        other_key = key_for(other, device=key.device, positions_only=key.positions_only)
        try:
            with st.spinner(f"Loading {other} …"):
                other_lm = caches.loaded_model(other_key)
        except ModelLoadError as exc:
            st.error(str(exc), icon=":material/warning:")
            st.stop()
        require_vectors(other_lm.encodings[0], other_lm, "to compare")
        other_name = other_lm.name
        n = min(encoding.num_positions, other_lm.encodings[0].num_positions)

    first, last = position_range(st, "Positions (both)", n, (0, min(n, MAX_POSITIONS) - 1))
    mine = caches.position_matrix(key, encoding.component, metric, first, last)
    if against == "sinusoid":
        theirs = caches.sinusoid_matrix(width, arrangement, metric, first, last)
    else:
        theirs = caches.position_matrix(other_key, 0, metric, first, last)

    names = (lm.name, other_name)
    left, right = layout.pair()
    for column, view in zip((left, right), compare.side_by_side(mine, theirs, names, metric)):
        with column:
            show(view)
    st.caption("Both on one colour scale: the 1st to 99th percentile of the two matrices together.")
    if against == "sinusoid" and encoding.reference_note:
        st.caption(encoding.reference_note.format(width=width))

    st.subheader("Position q against all, both")
    clip_state("q", first, last)
    q = st.number_input(f"q ({first}–{last})", first, last, min(max(positions.default_q(encoding), first), last),
                        **url("q"))
    show(compare.profiles((mine, theirs), names, metric, q))
