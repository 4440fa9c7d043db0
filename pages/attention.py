"""Attention page: the attention pattern of each layer and head for the user's sentence, at any length,
and the attention read by offset (sinks, the previous token) beside the positional scheme.

For an encoder-decoder model the page also takes a target sentence (the decoder's input) and
shows one of three stacks: encoder self-attention, decoder self-attention or cross attention.
"""

from dataclasses import astuple

import streamlit as st

from posviz.analysis import attention_budget as budget
from posviz.analysis.attention import STACKS
from posviz.analysis.attention_offsets import stack_encoding
from posviz.analysis.attention_reading import CORPUS_TOKENS, CORPUS_WINDOWS
from posviz.analysis.generation import MOST_GENERATED
from posviz.hub import CheckpointError
from posviz.app import caches, layout
from posviz.app.downloads import show
from posviz.app.notices import (
    attention_budget_notice, budget_set_limit, require_attention, require_text, require_weights,
    truncation_notice,
)
from posviz.app.navigation import current_model, page_fragment
from posviz.app.widgets import (
    index_slider, on_by_default, position_range, sentence_inputs, stop_without_text, text_field, url,
)
from posviz.views import attention as views
from posviz.views import attention_offsets as offset_views
from posviz.views.limits import MAX_LABELS
from posviz.recipes import recipe
from posviz.tokenization import fewest_tokens

#: Tokens a side of the zoom's default window (from the first token): its labels can be read.
ZOOM = 32

key, lm = current_model()
encoder_decoder = bool(lm.config.is_encoder_decoder)

st.title("Attention")
require_text(lm, "through every attention layer")
require_weights(lm, "through every attention layer")
require_attention(lm, "Attention patterns")
text, text_pair = sentence_inputs(lm)
target = None
decoder_inputs = st.container()  # made for every model: the controls below keep their place as the model changes
if encoder_decoder:
    target = text_field(
        decoder_inputs, "Target sentence (decoder input)", "target", lm, placeholder="empty: the source sentence",
        help="What the decoder reads: the target is tokenized as labels and shifted one token to the "
             "right behind the decoder start token, as in training. Empty: the (first) source sentence.")
stack = "encoder"
if encoder_decoder:
    stack = decoder_inputs.radio(
        "Attention stack", list(STACKS), captions=list(STACKS.values()), **url("stack"), horizontal=True,
        help="encoder: source tokens attend to source tokens. decoder: target tokens attend to earlier "
             "target tokens (causal). cross: target tokens (rows) attend to source tokens (columns).")
target = (target or None) if encoder_decoder else None

# a causal text tower beside a vision tower (CLIP) has no language-modelling head: nothing to generate
decoder_only = not encoder_decoder and lm.family.text_tower is None and caches.causal(key)
with st.expander("Tokens read and generated", icon=":material/straighten:"):
    default = {} if budget_set_limit() else {"value": lm.max_tokens}  # the button's value, without a default beside it
    fewest = fewest_tokens(lm)
    limit = st.number_input("Read at most (tokens)", fewest, lm.max_tokens, **default, **url("limit"),
                            help="The first tokens of the input are read; the rest is dropped, as the model's own "
                                 f"limit drops it. At least {fewest}: the tokenizer's special tokens and a token of "
                                 "each sentence.")
    generate = 0
    if decoder_only:
        generate = st.number_input("Generate after the sentence (tokens)", 0, MOST_GENERATED, 0, **url("generate"),
                                   help="The model's own greedy continuation (the most likely token, step by step), "
                                        "read with the sentence; generated tokens are marked ⟨…⟩.")
if not text.strip():
    stop_without_text("Type a sentence above to see its attention patterns.")

limit = None if limit >= lm.max_tokens else int(limit)
generated = ()
generation_notice = st.container()  # made on every run: the controls below keep their place as it comes and goes
if generate:
    try:
        with st.spinner(f"Generating {generate} tokens …"):
            generated = caches.continuation(key, text, text_pair, limit, int(generate))
    except CheckpointError as exc:
        generation_notice.warning(f"No generation: the model's output head cannot be read ({exc}).",
                                  icon=":material/block:")
queries, keys = caches.attention_size(key, text, text_pair, target, stack, limit, len(generated))
summarised = max(queries, keys) > budget.WHOLE_TOKENS


def patterns_and_offsets() -> None:
    """The page below its inputs: the sliders, the layer's patterns, the zoom and the attention by offset. A
    fragment (:func:`~posviz.app.navigation.page_fragment`): moving a slider reruns this part alone."""
    c1, c2, c3 = st.columns(3)
    layer = index_slider(c1, "Layer", budget.stack_layers(lm, stack), "layer")
    head = index_slider(c2, "Head", budget.stack_heads(lm, stack), "head")
    hide, reduction = False, "mean"
    if summarised:
        reduction = c3.radio("Block summary", ["mean", "max"], horizontal=True, **url("blocks"),
                             help=f"Beyond {budget.WHOLE_TOKENS} tokens a cell stands for a block of tokens: the mean "
                                  "of its weights, or the largest (a strong link stays visible). The zoom below shows "
                                  "every weight.")
    else:
        hide = c3.toggle("Hide special tokens", **url("hide_special"), wrap=True,
                         help="Drop [CLS], [SEP], BOS/EOS … and renormalise each row to sum to 1; beside each "
                              "pattern, how much of each row was hidden; rows with under "
                              f"{views.VISIBLE_AT_LEAST:.0%} left are greyed.")
    clip = c3.toggle("Clip colours", **on_by_default("clip"), wrap=True,
                     help=f"Colours from 0 to the layer's {views.CLIP_PERCENTILE}th percentile weight, not its "
                          "largest: a few large weights (on [CLS] or [SEP], most of all in a long input) otherwise "
                          "leave every other cell at the bottom colour. Hover shows the true weights either way.")
    # Drawn top to bottom: notices, the layer's figures, the zoom; its sliders are made first (the reading
    # needs them).
    notices_box, figures_box, zoom_slot = st.container(), st.container(), st.empty()
    zoom_box = zoom_slot.container()
    window = None
    if max(queries, keys) > MAX_LABELS:
        zoom_box.subheader("Zoom")
        zq, zk = zoom_box.columns(2)
        most = budget.WINDOW_CELLS
        q0, q1 = position_range(zq, "Queries", queries, (0, min(ZOOM - 1, queries - 1)), name="zoom_q",
                                help=f"Query rows shown at full resolution (at most {most}).")
        k0, k1 = position_range(zk, "Keys", keys, (0, min(ZOOM - 1, keys - 1)), name="zoom_k",
                                help=f"Key columns shown at full resolution (at most {most}).")
        window = budget.Window(q0, q1 + 1, k0, k1 + 1).clipped(queries, keys, most)
        if (window.q1 - window.q0, window.k1 - window.k0) != (q1 + 1 - q0, k1 + 1 - k0):
            zoom_box.caption(f"The zoom shows at most {most} × {most} weights: queries "
                             f"{window.q0}–{window.q1 - 1}, keys {window.k0}–{window.k1 - 1}.")

    asked = dict(stack=stack, window=window if summarised else None)
    layers = None if budget.every_layer_fits(lm, queries, keys, **asked) else (layer,)
    cost = budget.estimate(lm, queries, keys=keys if stack == "cross" else None, stack=stack,
                            kept=budget.stack_layers(lm, stack) if layers is None else 1, window=asked["window"])
    if not cost.fits:
        zoom_slot.empty()  # nothing to zoom into
        with notices_box:
            attention_budget_notice(cost)
    running = f"Running the model on {queries:,} tokens (about {cost.seconds:,.1f} s of attention) …"
    with notices_box, st.spinner(running):
        att = caches.attention_reading(key, text, text_pair, target, stack, layers, asked["window"], limit, generated)
    with notices_box:
        truncation_notice(att.truncated, lm, paired=bool(text_pair), limit=limit)
        if encoder_decoder and stack != "encoder" and queries >= lm.max_tokens:
            st.caption(f"The target fills the model's {lm.max_tokens} positions: a longer one is cut.")
        if generated:
            st.caption(f"⟨…⟩: the {len(generated)} tokens the model generated after the sentence (greedy: the "
                       "most likely token at each step), read with it.")

    # what every sidecar of the page says: the input as read (the generation as asked, where it was made)
    read = dict(sentence=text, text_pair=text_pair, target=target, stack=stack, limit=limit,
                generate=int(generate) if generated else 0)
    drawn = dict(encoder_decoder=encoder_decoder, generated=len(generated))
    tops = caches.attention_tops(key, text, text_pair, target, stack, layers, asked["window"], limit, generated,
                                 reduction, hide, clip)
    head_view, mean_view, grid_view = views.layer_views(
        att, layer, head, reduction=reduction, special=set(lm.tokenizer.all_special_tokens) if hide else None,
        clip=clip, top=tops[layer], **drawn)
    shown = dict(read, layer=layer, hide_special=hide, blocks=reduction, clip=clip)
    with figures_box:
        left, right = layout.pair()
        with left:
            show(head_view, recipe=recipe("attention-head", head=head, **shown))
        with right:
            show(mean_view, recipe=recipe("attention-mean", **shown))
        show(grid_view, recipe=recipe("attention-grid", **shown))
    if window is not None:
        with zoom_box:
            show(views.window_view(att, layer, head, window, clip=clip, **drawn),
                 recipe=recipe("attention-window", layer=layer, head=head, zoom=list(astuple(window)), clip=clip,
                               **read))

    st.subheader("Attention by offset")
    if stack == "cross":
        st.info("Offsets j − i compare a query's and a key's positions in one sequence: pick the encoder or the "
                "decoder stack.", icon=":material/info:")
        return
    o1, o2 = st.columns(2)
    over = o1.radio("Over", ["input", "corpus"], horizontal=True, **url("offsets_over"), disabled=stack != "encoder",
                    captions=["this input", "windows of the probes' text"],
                    help="corpus: the mean over windows of 128 tokens (up to 16) of the text the probes read (Pride "
                         "and Prejudice, chapter 1), so that one sentence's words do not decide the profile; the "
                         "figures say how many.")
    profile = att.offsets
    over = over if stack == "encoder" else "input"
    if over == "corpus":
        with st.spinner("Reading the corpus windows …"):
            profile = caches.corpus_profile(key, CORPUS_TOKENS, CORPUS_WINDOWS)
    max_offset = o2.number_input("Offsets shown each side", 1, offset_views.MOST_OFFSETS, offset_views.MAX_OFFSET,
                                 **url("max_offset"), help="Up to the input's length less one.")
    encoding = stack_encoding(lm, stack, layer)
    prediction = caches.scheme_prediction(key, encoding.component, profile.tokens)
    source = ("corpus", key) if over == "corpus" else (key, text, text_pair, target, stack, layers, asked["window"],
                                                       limit, generated)
    offsets_view, sinks_view = caches.offset_overview(source, profile, int(max_offset),
                                                     offset_views.stack_name(stack, encoder_decoder),
                                                     offset_views.layer_tags(lm.layer_strip, stack))
    by_offset = dict(read, over=over)
    show(offsets_view, recipe=recipe("offset-grid", max_offset=int(max_offset), **by_offset))
    show(sinks_view, recipe=recipe("sink-grid", **by_offset))
    left, right = layout.pair()
    with left:
        show(offset_views.head_offsets(profile, prediction, layer=layer, head=head, scheme=encoding.label,
                                       score=encoding.metric_label("dot"), max_offset=max_offset),
             recipe=recipe("head-offsets", layer=layer, head=head, max_offset=int(max_offset), **by_offset))
    with right:
        show(offset_views.shares_by_query(profile, layer=layer, head=head),
             recipe=recipe("shares-by-query", layer=layer, head=head, **by_offset))


page_fragment(patterns_and_offsets)
