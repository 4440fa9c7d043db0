"""Position similarity page: the position-position structure of the model's positional scheme.

Learned and sinusoidal tables: P·Pᵀ or cosine; rotary: the kernel K(m, n), also per frequency band;
ALiBi and relative bias: the bias of a head, or of every head side by side.
"""

import numpy as np
import streamlit as st

import posviz
from posviz.analysis import sample_positions
from posviz import app_state, figures

key = app_state.current_model()
lm = app_state.loaded_model(key)

st.title("Position similarity")
component, encoding = app_state.choose_encoding(key)
if encoding.kind == "none":
    st.info(f"{lm.name}: {encoding.describe()}", icon=":material/info:")
    st.stop()

n = encoding.num_positions
axis = encoding.axis_label
c1, c2, c3 = st.columns([1, 1, 2])
if encoding.kind == "vectors":
    names = ({"dot": "kernel K(m, n)", "cosine": "cosine"} if encoding.scheme == "rotary"
             else {"dot": "dot product P·Pᵀ", "cosine": "cosine"})
    metric = c1.radio("Similarity", ["dot", "cosine"], horizontal=True, key="metric", bind="query-params",
                      format_func=names.get)
    label = "K(m, n)" if encoding.scheme == "rotary" and metric == "dot" else ("P·Pᵀ" if metric == "dot" else "cosine")
else:
    metric, label = "dot", "bias"
    head = c1.selectbox("Head", ["all", *range(encoding.heads)], key="bias_head", bind="query-params")
normalize = c2.toggle("÷ maximum", key="normalize", bind="query-params",
                      help="Divide by the largest value (each head by its own, for a bias).")
clip = c2.toggle("Clip colours", value=True, key="clip", bind="query-params",
                 help="A few outliers (position 0 of BERT-style models) otherwise take the whole colour scale. "
                      "Hover shows the true values either way.")
app_state.clip_state("range", 0, n - 1)
first, last = c3.slider(f"{axis.capitalize()}s (row numbers)", 0, n - 1, (0, min(n, app_state.MAX_SHOWN) - 1),
                        key="range", bind="query-params")

with st.spinner("Computing the position-position matrix …"):
    matrix, step = app_state.position_matrix(key, component, metric, first, last)
stride = figures.stride_text(step)
title = f"{label}, {axis}s {first + encoding.first_label}–{last + encoding.first_label}{stride}"


def scaled(values: np.ndarray) -> np.ndarray:
    """Divided by the largest absolute value when asked; a stack of heads, each by its own, so that
    a head with a small ALiBi slope is as visible as one with a large slope."""
    if not normalize:
        return values
    axes = tuple(range(1, values.ndim)) if values.ndim == 3 else None
    return values / np.nanmax(np.abs(values), axis=axes, keepdims=values.ndim == 3)


left, right = st.columns([5, 4], gap="large")
if encoding.kind == "bias" and head == "all":
    app_state.show(figures.small_multiples(
        scaled(matrix), [f"head {h}" for h in range(matrix.shape[0])], title + " (rows = queries, columns = keys)",
        names=("query", "key")), arrays={"bias": scaled(matrix), "positions": first + encoding.first_label
                                         + step * np.arange(matrix.shape[-1])})
    matrix_2d = None
else:
    matrix_2d = matrix[head] if encoding.kind == "bias" else matrix
    with left:
        app_state.show(figures.position_heatmap(
            scaled(matrix_2d), first + encoding.first_label, title + (" (÷ max)" if normalize else ""),
            label + (" ÷ max" if normalize else ""), clip=clip, step=step, names=(
                ("query", "key") if encoding.kind == "bias" else (axis, axis))),
            arrays={"bias" if encoding.kind == "bias" else "similarity": scaled(matrix_2d),
                    "positions": first + encoding.first_label + step * np.arange(matrix_2d.shape[-1])})

if matrix_2d is not None:
    with right:
        st.subheader(f"{axis.capitalize()} q against all")
        app_state.clip_state("q", 0, n - 1)
        q = st.number_input("q", 0, n - 1, min(128, n - 1), key="q", bind="query-params",
                            help=f"Row number of the {axis}; with a stride, the nearest shown row is used.")
        everything, full_step = app_state.position_matrix(key, component, metric, 0, n - 1)
        if encoding.kind == "bias":
            everything = everything[head]
        at = full_step * np.arange(everything.shape[-1])
        row = int(np.abs(at - q).argmin())
        q_label = int(at[row]) + encoding.first_label
        relative = encoding.kind == "vectors"
        profile = posviz.row_profile(everything, row, normalize="max") if relative else everything[row]
        app_state.show(figures.row_profile_figure(
            profile, q_label, f"{label}, row q = {q_label}" + (" ÷ its max" if relative else ""),
            label + (" ÷ max" if relative else ""), x=at + encoding.first_label),
            arrays={"profile": profile, "positions": at + encoding.first_label})
        if relative:
            st.caption(f"r(j) = G[q, j] / max_j G[q, j] with G = {label} over all {n} {axis}s"
                       + (f" (every {full_step}th)." if full_step > 1 else "."))

app_state.explain(encoding)

if encoding.scheme == "rotary":
    st.subheader("The kernel by offset, one frequency band at a time")
    offsets, offset_step = sample_positions(0, last - first, app_state.MAX_SHOWN)
    bands = {f"band {b + 1}" + (" (fastest)" if b == 0 else " (slowest)" if b == app_state.ROTARY_BANDS - 1 else ""):
             app_state.rotary_kernel_by_offset(key, component, offsets, band=b)
             for b in range(app_state.ROTARY_BANDS)}
    app_state.show(figures.line_figure(
        {"all frequencies": app_state.rotary_kernel_by_offset(key, component, offsets), **bands},
        "K(m, m + k) against the offset k" + (f" (every {offset_step}th)" if offset_step > 1 else ""),
        "offset k", "K", x=offsets))
    st.caption("The kernel depends on the offset only. Fast pairs tell near positions apart and average out "
               "beyond a few positions; slow pairs carry the long-range structure.")
elif encoding.kind == "vectors":
    st.subheader("The vectors themselves")
    rows, _ = sample_positions(first, last, app_state.MAX_SHOWN)
    app_state.show(figures.vector_heatmap(
        encoding.vectors(rows).cpu().numpy(), f"{axis.capitalize()} vectors {first}–{last}{stride} × dimensions",
        axis, first=first + encoding.first_label, step=step),
        arrays={"vectors": encoding.vectors(rows).cpu().numpy(), "positions": rows + encoding.first_label})
    st.caption(f"From `{encoding.source}`" + (f", rows {encoding.offset}… of the stored table (offset "
                                              f"{encoding.offset})." if getattr(encoding, "offset", 0) else "."))
