"""Compare page: the model's position-position structure beside a sinusoid or another model."""

import numpy as np
import streamlit as st

import posviz
from posviz import app_state, figures, settings
from posviz.positions.sinusoid import LAYOUTS

key = app_state.current_model()
lm = app_state.loaded_model(key)

st.title("Compare")
component, encoding = app_state.choose_encoding(key)
app_state.require_vectors(encoding, lm, "its positions are a bias per head, not vectors to compare with a sinusoid")

c1, c2, c3 = st.columns([2, 1, 2])
against = c1.radio("Beside it", ["sinusoid", "model"], horizontal=True, key="against", bind="query-params",
                   captions=["of the same width", "Hub id" if settings.hosted() else "Hub id or local folder"])
metric = c2.radio("Similarity", ["cosine", "dot"], horizontal=True, key="metric", bind="query-params",
                  help="Cosine by default: dot products of different models differ in scale by orders of magnitude.")
width = app_state.reference_width(encoding)

if against == "sinusoid":
    layout = c3.selectbox("Sinusoid layout", LAYOUTS, key="layout", bind="query-params",
                          help="interleaved: the paper; halves: Marian, Pegasus; t2t: M2M100, Whisper.")
    other_name = f"sinusoid, width {width} ({layout})"
    n = encoding.num_positions
else:
    hosted = settings.hosted()
    other = c3.text_input("Other model (Hub id)" if hosted else "Other model (Hub id or local folder)", key="other",
                          bind="query-params", placeholder="e.g. gpt2" + ("" if hosted else ", ./my-model")
                          + " or all-MiniLM-L6-v2 (bundled)")
    if not other.strip():
        st.info("Type a second model to compare with, or compare with the sinusoid.", icon=":material/edit:")
        st.stop()
    other_key = app_state.key_for(other, device=key.device, positions_only=key.positions_only)
    try:
        with st.spinner(f"Loading {other} …"):
            other_lm = app_state.loaded_model(other_key)
    except posviz.ModelLoadError as exc:
        st.error(str(exc), icon=":material/warning:")
        st.stop()
    other_encoding = app_state.position_encodings(other_key)[0]
    app_state.require_vectors(other_encoding, other_lm, "there are no position vectors to compare")
    other_name = other_lm.name
    n = min(encoding.num_positions, other_encoding.num_positions)

app_state.clip_state("range", 0, n - 1)
first, last = st.slider("Positions (both)", 0, n - 1, (0, min(n, app_state.MAX_SHOWN) - 1), key="range",
                        bind="query-params")
mine, step = app_state.position_matrix(key, component, metric, first, last)
if against == "sinusoid":
    theirs, _ = app_state.sinusoid_matrix(width, layout, metric, first, last)
else:
    theirs, _ = app_state.position_matrix(other_key, 0, metric, first, last)

zmin, zmax = figures.clip_limits(np.concatenate([mine.ravel(), theirs.ravel()]))
stride = figures.stride_text(step)
label = "dot product" if metric == "dot" else "cosine"
left, right = st.columns(2)
for column, matrix, name in ((left, mine, lm.name), (right, theirs, other_name)):
    with column:
        app_state.show(figures.position_heatmap(matrix, first, f"{name}<br>{label}, positions {first}–{last}{stride}",
                                                label, step=step, limits=(zmin, zmax)),
                       arrays={"similarity": matrix, "positions": first + step * np.arange(matrix.shape[-1])})
st.caption("Both on one colour scale: the 1st to 99th percentile of the two matrices together.")
if against == "sinusoid" and encoding.scheme == "rotary":
    st.caption(f"The rotary kernel K(m, n) = Σ_i cos((m − n)·θ_i) is the Gram matrix of the sinusoid of width "
               f"{width} with the same frequencies: with base 10 000 and no scaling the two are equal.")

st.subheader("Position q against all, both")
app_state.clip_state("q", first, last)
q = st.number_input("q", first, last, min(max(128, first), last), key="q", bind="query-params")
row = min(int(round((q - first) / step)), mine.shape[0] - 1)
at = first + step * np.arange(mine.shape[0])
app_state.show(figures.line_figure(
    {lm.name: posviz.row_profile(mine, row), other_name: posviz.row_profile(theirs, row)},
    f"{label}(q = {int(at[row])}, j) ÷ max over j", "position j", f"{label} ÷ max", x=at),
    arrays={"profiles": np.stack([posviz.row_profile(mine, row), posviz.row_profile(theirs, row)]),
            "models": [lm.name, other_name], "positions": at})
