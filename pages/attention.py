"""Attention page: the attention pattern of each layer and head for the user's sentence."""

import numpy as np
import streamlit as st

from posviz import app_state, figures
from posviz.attention import without_tokens

key = app_state.current_model()
lm = app_state.loaded_model(key)

st.title("Attention")
text, text_pair = app_state.sentence_inputs(lm)
if not text.strip():
    st.info("Type a sentence above to see its attention patterns.", icon=":material/edit:")
    st.stop()

with st.spinner("Running the model …"):
    att = app_state.attention_patterns(key, text, text_pair)
app_state.truncation_notice(att.truncated, lm)

c1, c2, c3 = st.columns([2, 2, 1])
num_layers, num_heads = att.patterns.shape[:2]
layer = c1.slider("Layer", 0, num_layers - 1, 0, key="layer", bind="query-params")
head = c2.slider("Head", 0, num_heads - 1, 0, key="head", bind="query-params")
hide = c3.toggle("Hide special tokens", key="hide_special", bind="query-params",
                 help="Drop [CLS], [SEP], BOS/EOS … and renormalise each row to sum to 1.")

tokens, patterns = att.tokens, att.patterns[layer]
if hide:
    keep = np.array([t not in set(lm.tokenizer.all_special_tokens) for t in tokens])
    if keep.any():
        tokens = [t for t, k in zip(tokens, keep) if k]
        patterns = without_tokens(patterns, keep)

left, right = st.columns(2)
with left:
    app_state.show(figures.token_heatmap(patterns[head], tokens, f"Layer {layer}, head {head}", "weight",
                                         "query", "key", zmin=0))
with right:
    app_state.show(figures.token_heatmap(patterns.mean(axis=0), tokens, f"Layer {layer}, mean over heads",
                                         "weight", "query", "key", zmin=0))
app_state.show(figures.heads_grid(patterns, f"Layer {layer}: every head (rows = queries, columns = keys)"))
