"""Position similarity page: P·Pᵀ or cosine between positions, and "position q against all"."""

import streamlit as st

import posviz
from posviz import app_state, figures

key = app_state.current_model()

st.title("Position similarity")
table = app_state.require_position_table(key, "it has no learned position vectors to compare")

n = table.num_positions
c1, c2, c3 = st.columns([1, 1, 2])
metric = c1.radio("Similarity", ["dot", "cosine"], horizontal=True, key="metric", bind="query-params",
                  format_func={"dot": "dot product P·Pᵀ", "cosine": "cosine"}.get)
normalize = c2.toggle("Divide by the maximum", key="normalize", bind="query-params")
clip = c2.toggle("Clip colours (1–99 %)", value=True, key="clip", bind="query-params",
                 help="A few outliers (position 0 of BERT-style models) otherwise take the whole colour scale. "
                      "Hover shows the true values either way.")
first, last = c3.slider("Positions", 0, n - 1, (0, min(n, 2048) - 1), key="range", bind="query-params")

with st.spinner("Computing similarities …"):
    matrix = app_state.position_similarity(key, metric, first, last)
shown = matrix / matrix.max() if normalize else matrix
label = "P·Pᵀ" if metric == "dot" else "cosine"
left, right = st.columns([5, 4], gap="large")
with left:
    app_state.show(figures.position_heatmap(
        shown, first, f"{label} between positions {first}–{last}" + (" (÷ max)" if normalize else ""),
        label + (" ÷ max" if normalize else ""), clip=clip))
with right:
    st.subheader("Position q against all")
    q = st.number_input("Position q", 0, n - 1, min(128, n - 1), key="q", bind="query-params")
    full = app_state.position_similarity(key, metric, 0, n - 1)
    profile = posviz.row_profile(full, q, normalize="max")
    app_state.show(figures.row_profile_figure(
        profile, q, f"{label}(q = {q}, j) ÷ max over j", f"{label} ÷ max"))
    st.caption(f"r(j) = G[q, j] / max_j G[q, j] with G = {label} over all {n} positions.")

st.subheader("The position table itself")
app_state.show(figures.vector_heatmap(
    table.matrix[first:last + 1], f"Position embeddings {first}–{last} (rows) × dimensions",
    "position", first=first))
st.caption(f"From `{table.source}`" + (f", rows {table.offset}… of the stored table (offset {table.offset})."
                                       if table.offset else "."))
