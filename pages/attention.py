"""Attention page: the attention pattern of each layer and head for the user's sentence.

For an encoder-decoder model the page also takes a target sentence (the decoder's input) and
shows one of three stacks: encoder self-attention, decoder self-attention or cross attention.
"""

import numpy as np
import streamlit as st

from posviz import app_state, figures
from posviz.attention import without_tokens

#: Attention stacks of an encoder-decoder model: URL value (``?stack=cross``) -> words.
STACKS = {
    "encoder": "encoder self-attention",
    "decoder": "decoder self-attention",
    "cross": "cross attention",
}
#: Tokens of the rows (queries) and columns (keys) of each stack.
SIDES = {"encoder": ("source", "source"), "decoder": ("target", "target"), "cross": ("target", "source")}

key = app_state.current_model()
lm = app_state.loaded_model(key)
encoder_decoder = bool(lm.config.is_encoder_decoder)

st.title("Attention")
app_state.require_weights(lm, "through every attention layer")
text, text_pair = app_state.sentence_inputs(lm)
target = None
if encoder_decoder:
    target = app_state.text_field(
        st, "Target sentence (decoder input)", "target", placeholder="empty: the source sentence",
        help="What the decoder reads: the target is tokenized as labels and shifted one token to the "
             "right behind the decoder start token, as in training. Empty: the (first) source sentence.")
if not text.strip():
    st.info("Type a sentence above to see its attention patterns.", icon=":material/edit:")
    st.stop()

with st.spinner("Running the model …"):
    att = app_state.attention_patterns(key, text, text_pair, (target or None) if encoder_decoder else None)
app_state.truncation_notice(att.truncated, lm, paired=bool(text_pair))

stack = "encoder"
if encoder_decoder:
    if att.decoder_truncated:
        st.warning(f"The target is longer than the model's {lm.max_tokens} positions: the last "
                   f"{att.decoder_truncated} tokens were dropped.", icon=":material/content_cut:")
    stack = st.radio(
        "Attention stack", list(STACKS), captions=list(STACKS.values()), key="stack", bind="query-params",
        horizontal=True,
        help="encoder: source tokens attend to source tokens. decoder: target tokens attend to earlier "
             "target tokens (causal). cross: target tokens (rows) attend to source tokens (columns).")
stack_patterns, row_tokens, col_tokens = att.stack(stack)

c1, c2, c3 = st.columns([2, 2, 1])
num_layers, num_heads = stack_patterns.shape[:2]
for name, top in (("layer", num_layers - 1), ("head", num_heads - 1)):
    if st.session_state.get(name, 0) > top:  # the previous stack or model had more
        st.session_state[name] = top
layer = app_state.index_slider(c1, "Layer", num_layers, "layer")
head = app_state.index_slider(c2, "Head", num_heads, "head")
hide = c3.toggle("Hide special tokens", key="hide_special", bind="query-params",
                 help="Drop [CLS], [SEP], BOS/EOS … and renormalise each row to sum to 1.")

patterns = stack_patterns[layer]
if hide:
    special = set(lm.tokenizer.all_special_tokens)
    keep_rows = np.array([t not in special for t in row_tokens])
    keep_cols = np.array([t not in special for t in col_tokens])
    if keep_rows.any() and keep_cols.any():
        patterns = without_tokens(patterns, keep_rows, keep_cols)
        row_tokens = [t for t, k in zip(row_tokens, keep_rows) if k]
        col_tokens = [t for t, k in zip(col_tokens, keep_cols) if k]

rows_title, cols_title, suffix, grid_axes = "query", "key", "", "rows = queries, columns = keys"
if encoder_decoder:
    rows_side, cols_side = SIDES[stack]
    rows_title, cols_title = f"query ({rows_side})", f"key ({cols_side})"
    suffix = f" · {STACKS[stack]}"
    grid_axes = f"rows = {rows_side} queries, columns = {cols_side} keys"
top = float(patterns.max())  # one colour scale for the head, the mean and the grid
left, right = st.columns(2)
with left:
    app_state.show(figures.token_heatmap(patterns[head], row_tokens, f"Layer {layer}, head {head}{suffix}", "weight",
                                         rows_title, cols_title, zmin=0, zmax=top, col_tokens=col_tokens),
                   arrays={"attention": patterns[head], "query_tokens": row_tokens, "key_tokens": col_tokens})
with right:
    app_state.show(figures.token_heatmap(patterns.mean(axis=0), row_tokens,
                                         f"Layer {layer}, mean over heads{suffix}", "weight",
                                         rows_title, cols_title, zmin=0, zmax=top, col_tokens=col_tokens),
                   arrays={"attention": patterns.mean(axis=0), "query_tokens": row_tokens, "key_tokens": col_tokens})
app_state.show(figures.heads_grid(patterns, f"Layer {layer}{suffix}: every head ({grid_axes})", zmax=top),
               arrays={"attention": patterns, "query_tokens": row_tokens, "key_tokens": col_tokens})
