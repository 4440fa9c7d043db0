"""Projection page: UMAP or PCA of the position vectors, coloured by position range (a grid of patches: by
grid row or column)."""

import streamlit as st

from posviz.app import caches
from posviz.app.downloads import show
from posviz.app.notices import require_vectors
from posviz.app.navigation import current_model
from posviz.app.widgets import choose_encoding, position_range, url
from posviz.recipes import recipe
from posviz.views import patch_grid, positions

key, lm = current_model()

st.title("Projection of the position vectors")
encoding = choose_encoding(lm)
require_vectors(encoding, lm, "to project")

n = encoding.num_positions
c1, c2, c3, c4 = st.columns([1, 1, 2, 1])
method = c1.radio("Method", ["UMAP", "PCA"], horizontal=True, **url("method")).lower()
dims = c2.radio("Dimensions", [2, 3], horizontal=True, **url("dims"))
typed = c3.text_input("Range boundaries (positions where a new colour starts)",
                      value=positions.default_boundaries(encoding), **url("boundaries"),
                      help="Comma-separated 0-based positions. 128: positions 0–127 against 128 and after "
                           "(BERT's two pre-training phases).")
path = c4.toggle("Path p\u00a0→\u00a0p+1", **url("path"), wrap=True)  # where it wraps, "p → p+1" stays one line

first, last = position_range(st, "Positions", n, (0, n - 1), help="The positions projected (every k-th beyond 2 048).")
colour = "range"
if encoding.grid is not None:
    colour = st.radio("Colour by", patch_grid.COLOURINGS, horizontal=True, **url("colour"),
                      help="The rows of this table are a grid of image patches: colour each patch by its position "
                           "range, its grid row or its grid column (the CLS token apart).")

boundaries, ignored = positions.parse_boundaries(typed, n)
for part in ignored:
    what = "a whole number" if not part.lstrip("-").isdigit() else f"a position between 1 and {n - 1}"
    st.warning(f"Range boundaries: '{part}' is not {what}, so it is ignored. Type positions between 1 and {n - 1}, "
               "separated by commas, e.g. 128.", icon=":material/warning:")

try:
    with st.spinner(f"Running {method.upper()} on positions {first}–{last} …"):
        coords, rows = caches.projection(key, encoding.component, method, dims, first, last)
except ValueError as exc:  # fewer positions than dimensions
    st.info(str(exc), icon=":material/info:")
    st.stop()
show(positions.projection(coords, rows, encoding.vector_name, method=method, boundaries=boundaries, path=path,
                          grid=encoding.grid, colour=colour),
     recipe=recipe("projection", component=encoding.component, method=method, dims=dims, first=first, last=last,
                   boundaries=boundaries, path=path, colour=colour))
