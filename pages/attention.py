"""Attention page: the attention pattern of each layer and head for the user's sentence.

For an encoder-decoder model the page also takes a target sentence (the decoder's input) and
shows one of three stacks: encoder self-attention, decoder self-attention or cross attention.
"""

import streamlit as st

from posviz.analysis.attention import STACKS, without_special
from posviz.app import caches, layout
from posviz.app.downloads import show
from posviz.app.notices import require_weights, truncation_notice
from posviz.app.navigation import current_model
from posviz.app.widgets import index_slider, sentence_inputs, text_field, url
from posviz.views import attention as views

key, lm = current_model()
encoder_decoder = bool(lm.config.is_encoder_decoder)

st.title("Attention")
require_weights(lm, "through every attention layer")
text, text_pair = sentence_inputs(lm)
target = None
if encoder_decoder:
    target = text_field(
        st, "Target sentence (decoder input)", "target", lm, placeholder="empty: the source sentence",
        help="What the decoder reads: the target is tokenized as labels and shifted one token to the "
             "right behind the decoder start token, as in training. Empty: the (first) source sentence.")
if not text.strip():
    st.info("Type a sentence above to see its attention patterns.", icon=":material/edit:")
    st.stop()

with st.spinner("Running the model …"):
    att = caches.attention_patterns(key, text, text_pair, (target or None) if encoder_decoder else None)
truncation_notice(att.truncated, lm, paired=bool(text_pair))

stack = None
if encoder_decoder:
    if att.decoder_truncated:
        st.warning(f"The target is longer than the model's {lm.max_tokens} positions: the last "
                   f"{att.decoder_truncated} tokens were dropped.", icon=":material/content_cut:")
    stack = st.radio(
        "Attention stack", list(STACKS), captions=list(STACKS.values()), **url("stack"), horizontal=True,
        help="encoder: source tokens attend to source tokens. decoder: target tokens attend to earlier "
             "target tokens (causal). cross: target tokens (rows) attend to source tokens (columns).")
stack_patterns, query_tokens, key_tokens = att.stack(stack or "encoder")

c1, c2, c3 = st.columns([2, 2, 1.5])
num_layers, num_heads = stack_patterns.shape[:2]
layer = index_slider(c1, "Layer", num_layers, "layer")
head = index_slider(c2, "Head", num_heads, "head")
hide = c3.toggle("Hide special tokens", **url("hide_special"), wrap=True,
                 help="Drop [CLS], [SEP], BOS/EOS … and renormalise each row to sum to 1; beside each pattern, how "
                      f"much of each row was hidden; rows with under {views.VISIBLE_AT_LEAST:.0%} left are greyed.")

patterns, hidden = stack_patterns[layer], None
if hide:
    patterns, query_tokens, key_tokens, hidden = without_special(patterns, query_tokens, key_tokens,
                                                                 set(lm.tokenizer.all_special_tokens))
shown = dict(layer=layer, stack=stack, hidden=hidden)
left, right = layout.pair()
with left:
    show(views.attention_head(patterns, query_tokens, key_tokens, head=head, **shown))
with right:
    show(views.attention_mean(patterns, query_tokens, key_tokens, **shown))
show(views.attention_grid(patterns, query_tokens, key_tokens, **shown))
