"""Probes page: how well a linear model reads position (Wang & Chen, EMNLP 2020).

The two probes of the paper on the model's position vectors, beside the sinusoid of the same
width and a random Gaussian matrix of the same shape; then the absolute probe on the hidden
states of every layer for a text (any scheme).
"""

import pandas as pd
import streamlit as st

from posviz.analysis.layer_probe import BUILTIN_TEXT
from posviz.analysis.probes import REGRESSIONS
from posviz.app import caches
from posviz.app.downloads import show
from posviz.app.notices import require_text, require_weights
from posviz.app.navigation import current_model
from posviz.app.widgets import DEFAULT_TEXT, choose_encoding, stop_without_text, text_field, url
from posviz.recipes import recipe
from posviz.views import probes as views

#: What each option is (a bound radio writes its option, the URL value, to the URL: no format_func).
REGRESSION_CAPTIONS = {"linear": "least squares, the paper's", "ridge": "RidgeCV"}
TEXTS = {"prose": "Pride and Prejudice, chapter 1", "sentence": "the sentence of the other pages"}

key, lm = current_model()

st.title("Probes")
st.caption("Wang & Chen, “What Do Position Embeddings Learn?” (EMNLP 2020). **Absolute position**: a linear "
           "regression from a position's vector to its index, 5-fold cross-validation over the shuffled rows, "
           "mean absolute error (MAE) of the rounded held-out prediction, in positions. **Relative order**: random "
           "pairs (i, j), i ≠ j, a logistic regression from [PE_i ; PE_j] to “j comes after i”, 5-fold "
           "cross-validation, error rate (0.5 is chance). scikit-learn does every fit.")

c1, c2, c3 = st.columns([1, 1, 2])
seed = int(c1.number_input("Seed", 0, 2**31 - 1, 0, **url("seed"),
                           help="Seeds the shuffle, the folds, the pairs and the random matrix."))
pairs = int(c2.number_input("Pairs", 50, 4096, 512, step=64, **url("pairs"),
                            help="Random pairs (i, j) of the relative-order probe; the paper's code drew 512, "
                                 "without a seed."))
regression = c3.radio("Regression (absolute probe)", REGRESSIONS, index=REGRESSIONS.index("ridge"), horizontal=True,
                      **url("regression"),
                      captions=[REGRESSION_CAPTIONS[r] for r in REGRESSIONS],
                      help="Ridge (scikit-learn's RidgeCV, not in the paper) chooses an L2 penalty by leave-one-out "
                           "on each training split. Least squares is the paper's: where the width nears the number "
                           "of training rows (hidden states of width 384 from 410 tokens) it overfits and scores "
                           "worse than a guess.")

st.subheader("Position vectors beside the sinusoid and a random matrix")
encoding = choose_encoding(lm)
if not encoding.has_vectors:
    st.info(f"{lm.name} uses {lm.scheme_label}: no vector per position, so there is no table to probe. "
            "The layer probe below reads position from what the layers compute, for any scheme.",
            icon=":material/info:")
else:
    names = views.source_names(lm.name, encoding, seed)
    with st.spinner(f"Probing {views.probed_positions(encoding)} positions of three matrices …"):
        found = {source: (caches.absolute_probe(key, encoding.component, source, seed, regression),
                          caches.relative_probe(key, encoding.component, source, seed, pairs))
                 for source in views.SOURCES}
    st.dataframe(pd.DataFrame(views.probe_table(found, names, encoding, pairs)), hide_index=True, column_config={
        "absolute MAE (positions)": st.column_config.NumberColumn(
            "absolute MAE", format="%.2f", help="The absolute probe's mean absolute error, in positions."),
        "relative error rate": st.column_config.NumberColumn(
            "relative error", format="%.3f", help="The relative-order probe's error rate; 0.5 is chance.")})
    st.caption(views.probe_caption(encoding, seed, pairs))
    show(views.probe_predictions({s: a for s, (a, _) in found.items()}, names, encoding.axis_label),
         recipe=recipe("probe-predictions", component=encoding.component, seed=seed, regression=regression))

st.subheader("Position in each layer's hidden states")
require_text(lm, "through every layer")
require_weights(lm, "through every layer")
source = st.radio("Text", list(TEXTS), captions=list(TEXTS.values()), horizontal=True, **url("probe_text"),
                  help="The built-in prose is the opening chapter of Jane Austen's Pride and Prejudice (1813, "
                       "public domain), longer than 512 tokens; the sentence is shared with the other pages.")
text = text_field(st, "Sentence", "text", lm, value=DEFAULT_TEXT) if source == "sentence" else BUILTIN_TEXT
if not text.strip():
    stop_without_text("Type a sentence above to probe its layers.")
try:
    with st.spinner("Running the model and one probe per layer …"):
        layers = caches.layer_probe(key, text, seed, regression)
except ValueError as exc:
    st.info(str(exc), icon=":material/edit:")
    st.stop()
count = len(layers.tokens)
if count < views.FEW_TOKENS:
    st.warning(f"{count} tokens: a probe fitted on {count * 4 // 5} tokens and tested on the rest says little. "
               "The built-in prose fills the model's positions.", icon=":material/info:")
show(views.layer_probe(layers, encoder_decoder=bool(lm.config.is_encoder_decoder), max_tokens=lm.max_tokens,
                       hidden=int(lm.config.get_text_config().hidden_size)),
     recipe=recipe("layer-probe", sentence=text if source == "sentence" else None, seed=seed, regression=regression))
