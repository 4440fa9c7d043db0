"""Projection page: UMAP or PCA of the position vectors, coloured by position range."""

import streamlit as st

from posviz import app_state, figures

key = app_state.current_model()
lm = app_state.loaded_model(key)

st.title("Projection of the position vectors")
component, encoding = app_state.choose_encoding(key)
app_state.require_vectors(encoding, lm, "it has no vector per position to project, only a bias per head")

n = encoding.num_positions
c1, c2, c3, c4 = st.columns([1, 1, 2, 1])
method = c1.radio("Method", ["umap", "pca"], horizontal=True, key="method", bind="query-params",
                  format_func=str.upper)
dims = c2.radio("Dimensions", [2, 3], horizontal=True, key="dims", bind="query-params",
                format_func=lambda d: f"{d}-D")
edges_text = c3.text_input("Range boundaries (positions where a new colour starts)",
                           value="128" if n > 128 else "", key="ranges", bind="query-params",
                           help="Comma-separated 0-based positions. 128: positions 0–127 against 128 and after "
                                "(BERT's two pre-training phases).")
path = c4.toggle("Path p → p+1", key="path", bind="query-params")

boundaries = []
for part in edges_text.replace(";", ",").split(","):
    part = part.strip()
    if part.isdigit() and 0 < int(part) < n:
        boundaries.append(int(part))
    elif part:
        st.warning(f"'{part}' is not a position between 1 and {n - 1}; it is ignored.", icon=":material/warning:")

with st.spinner(f"Running {method.upper()} on {n} positions …"):
    coords, positions = app_state.position_projection(key, component, method, dims)
what = {"rotary": "rotation features [cos pθ, sin pθ]", "relative_embeddings": "relative embeddings"}.get(
    encoding.scheme, "position embeddings")
stride = figures.stride_text(int(positions[1] - positions[0]) if len(positions) > 1 else 1)
app_state.show(figures.projection_figure(
    coords, boundaries, path, f"{method.upper()} of {len(positions)} {what}{stride} ({lm.name})",
    axis_name="UMAP" if method == "umap" else "PC", positions=positions),
    arrays={"coords": coords, "positions": positions})
st.caption("Each point is one position's vector; hover to see the position. "
           + ("UMAP (umap-learn, 15 neighbours, seed 0) keeps neighbourhoods, not distances."
              if method == "umap" else "PCA (scikit-learn): the directions of largest variance."))
