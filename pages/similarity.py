"""Position similarity page: the position-position structure of the model's positional scheme.

Learned and sinusoidal tables: P·Pᵀ or cosine; rotary: the kernel K(m, n), also per frequency band;
ALiBi and relative bias: the bias of a head, or of every head side by side. A vision tower's table (its
rows a grid of patches): also each patch's similarity map in its place in the grid.
"""

import streamlit as st

from posviz.app import caches, layout
from posviz.app.downloads import show
from posviz.app.notices import explain
from posviz.app.navigation import current_model
from posviz.app.widgets import choose_encoding, clip_state, on_by_default, position_range, url
from posviz.positions.base import METRICS
from posviz.recipes import recipe
from posviz.views import patch_grid, positions

key, lm = current_model()

st.title("Position similarity")
encoding = choose_encoding(lm)
if not (encoding.has_vectors or encoding.has_bias):
    st.info(f"{lm.name}: {encoding.describe()}", icon=":material/info:")
    st.stop()

n = encoding.num_positions
axis = encoding.axis_label
# the settings of the matrix over its column (q against all, beside it, has its own): at 1920 px a range
# slider over the right column read as q's
controls, _ = layout.pair([5, 4])
c1, c2, c3 = controls.columns([1, 1.2, 1.8])
head = None
if encoding.has_bias:
    metric = "dot"
    choice = c1.selectbox("Head", ["all", *range(encoding.heads)], **url("bias_head"))
    head = None if choice == "all" else int(choice)
else:
    metric = c1.radio("Similarity", METRICS, captions=[encoding.metric_names[m] for m in METRICS], horizontal=True,
                      **url("metric"))
normalize = c2.toggle("÷ maximum", **url("normalize"), wrap=True,
                      help="Divide by the largest value (each head by its own, for a bias).")
clip = c2.toggle("Clip colours", **on_by_default("clip"), wrap=True,
                 help="A few outliers (position 0 of BERT-style models) otherwise take the whole colour scale. "
                      "Hover shows the true values either way.")
first, last = position_range(c3, f"{axis.capitalize()}s (row numbers)", n, positions.default_range(encoding))

with st.spinner("Computing the position-position matrix …"):
    matrix = caches.position_matrix(key, encoding.component, metric, first, last)

made = recipe("position-similarity", component=encoding.component, metric=metric, first=first, last=last,
              normalize=normalize, clip=clip, head=head)
if matrix.per_head and head is None:
    show(positions.position_similarity(matrix, normalize=normalize, clip=clip), recipe=made)
else:
    left, right = layout.pair([5, 4])
    with left:
        show(positions.position_similarity(matrix, normalize=normalize, clip=clip, head=head), recipe=made)
    with right:
        st.subheader(f"{axis.capitalize()} q against all")
        clip_state("q", 0, n - 1)
        q = st.number_input(f"q (0–{n - 1})", 0, n - 1, positions.default_q(encoding), **url("q"),
                            help=f"Row number of the {axis}; with a stride, the nearest shown row is used.")
        show(positions.q_profile(caches.position_matrix(key, encoding.component, metric, 0, n - 1), q, head=head),
             recipe=recipe("q-profile", component=encoding.component, metric=metric, q=q, head=head))

if encoding.grid is not None:
    st.subheader("The patches in their places")
    show(patch_grid.patch_grid(encoding), recipe=recipe("patch-grid", component=encoding.component))
    special = patch_grid.special_rows(encoding)
    if special is not None:
        show(special, recipe=recipe("patch-grid-special", component=encoding.component))

explain(encoding)

if encoding.bands:
    st.subheader("The kernel by offset, one frequency band at a time")
    show(positions.kernel_bands(encoding, last - first),
         recipe=recipe("kernel-bands", component=encoding.component, span=last - first))
elif encoding.has_vectors:
    st.subheader("The vectors themselves")
    show(positions.vectors(encoding, first, last),
         recipe=recipe("position-vectors", component=encoding.component, first=first, last=last))
