"""Probes page: how well a linear model reads position (Wang & Chen, EMNLP 2020).

The two probes of the paper on the model's position vectors, beside the sinusoid of the same
width and a random Gaussian matrix of the same shape; then the absolute probe on the hidden
states of every layer for a text (any scheme).
"""

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

import posviz
from posviz import app_state, figures, probes

#: Most positions the table probes read: a longer context is probed on its first positions.
MAX_PROBED = 2048
#: Fewer tokens than this: the layer probe still runs, with a warning that it says little.
FEW_TOKENS = 32
SOURCES = ("model", "sinusoid", "random")
#: Radio labels: short, since a bound radio writes its label to the URL (``?regression=ridge``).
REGRESSION_LABELS = {"linear": "least squares", "ridge": "ridge"}
TEXT_LABELS = {"builtin": "built-in prose", "sentence": "a sentence"}


def _vectors(key: app_state.ModelKey, component: int, source: str, n: int, width: int, seed: int) -> np.ndarray:
    """Rows 0 .. n-1 of the model's position vectors, of the interleaved sinusoid, or of a
    standard Gaussian matrix drawn with ``seed``; float32 [n, width]."""
    if source == "model":
        return app_state.position_encodings(key)[component].vectors(np.arange(n)).cpu().numpy()
    if source == "sinusoid":
        return posviz.sinusoidal(n, width)
    return np.random.default_rng(seed).standard_normal((n, width)).astype(np.float32)


@st.cache_data(show_spinner=False, max_entries=32)
def absolute(key: app_state.ModelKey, component: int, source: str, n: int, width: int, seed: int,
             regression: str) -> probes.ProbeResult:
    """Cached :func:`posviz.probes.absolute_position_probe` of one matrix."""
    return probes.absolute_position_probe(_vectors(key, component, source, n, width, seed), seed=seed,
                                          regression=regression)


@st.cache_data(show_spinner=False, max_entries=32)
def relative(key: app_state.ModelKey, component: int, source: str, n: int, width: int, seed: int,
             pairs: int) -> probes.ProbeResult:
    """Cached :func:`posviz.probes.relative_order_probe` of one matrix."""
    return probes.relative_order_probe(_vectors(key, component, source, n, width, seed), pairs=pairs, seed=seed)


@st.cache_data(show_spinner=False, max_entries=8)
def layer_probe(key: app_state.ModelKey, text: str, seed: int, regression: str) -> probes.LayerProbeResult:
    """Cached :func:`posviz.probes.layer_position_probe`, without the hidden states themselves."""
    found = probes.layer_position_probe(app_state.loaded_model(key), text, seed=seed, regression=regression)
    return dataclasses.replace(found, states=None)


key = app_state.current_model()
lm = app_state.loaded_model(key)

st.title("Probes")
st.caption("Wang & Chen, “What Do Position Embeddings Learn?” (EMNLP 2020). **Absolute position**: a linear "
           "regression from a position's vector to its index, 5-fold cross-validation over the shuffled rows, "
           "mean absolute error (MAE) of the rounded held-out prediction, in positions. **Relative order**: random "
           "pairs (i, j), i ≠ j, a logistic regression from [PE_i ; PE_j] to “j comes after i”, 5-fold "
           "cross-validation, error rate (0.5 is chance). scikit-learn does every fit.")

c1, c2, c3 = st.columns([1, 1, 2])
seed = int(c1.number_input("Seed", 0, 2**31 - 1, 0, key="seed", bind="query-params",
                           help="Seeds the shuffle, the folds, the pairs and the random matrix."))
pairs = int(c2.number_input("Pairs (relative probe)", 50, 4096, 512, step=64, key="pairs", bind="query-params",
                            help="The paper's code drew 512 pairs, without a seed."))
regression = c3.radio("Regression (absolute probe)", probes.REGRESSIONS, horizontal=True, key="regression",
                      bind="query-params", format_func=REGRESSION_LABELS.get,
                      help="Least squares is the paper's. Where the width nears the number of training rows "
                           "(hidden states of width 384 from 410 tokens) it overfits and scores worse than a "
                           "guess; ridge (not in the paper: scikit-learn's RidgeCV) chooses an L2 penalty by "
                           "leave-one-out on each training split.")

st.subheader("Position vectors beside the sinusoid and a random matrix")
component, encoding = app_state.choose_encoding(key)
if encoding.kind != "vectors":
    st.info(f"{lm.name} uses {lm.scheme_label}: no vector per position, so there is no table to probe. "
            "The layer probe below reads position from what the layers compute, for any scheme.",
            icon=":material/info:")
else:
    n = min(encoding.num_positions, MAX_PROBED)
    width = app_state.reference_width(encoding)
    sin_width = width + width % 2
    names = {"model": lm.name, "sinusoid": f"sinusoid, width {sin_width} (interleaved)",
             "random": f"random Gaussian, seed {seed}"}
    with st.spinner(f"Probing {n} positions of three matrices …"):
        found = {source: (absolute(key, component, source, n, width if source != "sinusoid" else sin_width, seed,
                                   regression),
                          relative(key, component, source, n, width if source != "sinusoid" else sin_width, seed,
                                   pairs))
                 for source in SOURCES}
    st.dataframe(pd.DataFrame(
        [{"matrix": names[s], "positions": n, "width": sin_width if s == "sinusoid" else width,
          "absolute MAE (positions)": a.score, "relative error rate": r.score, "pairs": pairs}
         for s, (a, r) in found.items()]),
        hide_index=True, column_config={
            "absolute MAE (positions)": st.column_config.NumberColumn(format="%.2f"),
            "relative error rate": st.column_config.NumberColumn(format="%.3f")})
    baseline = probes.middle_guess_mae(n)
    first_n = (f" The first {n} of {encoding.num_positions} {encoding.axis_label}s are probed."
               if n < encoding.num_positions else "")
    st.caption(f"Rows of `{encoding.source}`" + (f" ({encoding.axis_label}s from {encoding.first_label})"
                                                  if encoding.first_label else "")
               + f"; always guessing the middle position scores MAE {baseline:.1f}.{first_n} "
               f"Seed {seed}, {pairs} pairs, 5 folds; the random matrix is standard normal.")
    app_state.show(figures.probe_predictions_figure(
        {f"{names[s]} (MAE {a.score:.2f})": a.predictions for s, (a, _) in found.items()},
        f"Absolute probe: held-out prediction against the true {encoding.axis_label}"),
        arrays={names[s]: a.predictions for s, (a, _) in found.items()})

st.subheader("Position in each layer's hidden states")
app_state.require_weights(lm, "through every layer")
source = st.radio("Text", list(TEXT_LABELS), horizontal=True, key="probe_text", bind="query-params",
                  format_func=TEXT_LABELS.get,
                  help="The built-in prose is the opening chapter of Jane Austen's Pride and Prejudice (1813, "
                       "public domain), longer than 512 tokens; the sentence is shared with the other pages.")
if source == "sentence":
    text = app_state.text_field(st, "Sentence", "text", value=app_state.DEFAULT_TEXT)
else:
    text = probes.BUILTIN_TEXT
try:
    with st.spinner("Running the model and one probe per layer …"):
        layers = layer_probe(key, text, seed, regression)
except ValueError as exc:
    st.info(str(exc), icon=":material/edit:")
    st.stop()
count = len(layers.tokens)
if count < FEW_TOKENS:
    st.warning(f"{count} tokens: a probe fitted on {count * 4 // 5} tokens and tested on the rest says little. "
               "The built-in prose fills the model's positions.", icon=":material/info:")
baseline = probes.middle_guess_mae(count)
stack = "encoder " if lm.config.is_encoder_decoder else ""
app_state.show(figures.layer_probe_figure(
    layers.mae, f"Absolute probe on each {stack}layer's hidden states, {count} tokens", baseline=baseline),
    arrays={"mae_per_layer": np.asarray(layers.mae)})
dropped = (f" ({layers.truncated} more tokens of the text did not fit the model's {lm.max_tokens} positions)"
           if layers.truncated else "")
st.caption(f"Token t of the text is at position t (special tokens included): {count} tokens{dropped}. Layer 0 is "
           f"the embedding output, layer l the output of {stack}layer l (`output_hidden_states=True`). One probe "
           f"per layer ({'least squares as in the paper' if regression == 'linear' else 'ridge'}), 5 folds, seed "
           f"{seed}; the dashed line is the MAE of "
           f"always guessing the middle position ({baseline:.1f}). Schemes that add no vector at the input "
           "(rotary, ALiBi, relative bias) hold no position at layer 0.")
if regression == "linear" and (layers.mae > baseline).any():
    st.caption(f"Points above the dashed line: least squares did worse than a guess. Fitted on {count * 4 // 5} "
               f"tokens with about as many or more dimensions ({lm.config.get_text_config().hidden_size}), it "
               "overfits; ridge (Regression, above) keeps what is linearly readable.")
