"""Word order page: a sentence beside a permutation of its words, with and without positional information."""

import streamlit as st

from posviz.analysis.permutations import PERMUTATIONS, parse_order, reverse_words, shuffle_words, swap_words
from posviz.analysis.word_order import STAGES, removal_refused
from posviz.app import caches
from posviz.app.downloads import show
from posviz.app.notices import require_text, require_weights, truncation_notice
from posviz.app.navigation import current_model
from posviz.app.widgets import DEFAULT_TEXT, stop_without_text, text_field, url
from posviz.recipes import recipe
from posviz.views import word_order as views

#: A sentence of up to this many words has its words, both orders and the tokens read written out above the
#: charts; a longer one's are in collapsed sections (2 000 words took some 4 000 pixels at 1024 x 768).
INLINE_WORDS = 40

key, lm = current_model()

st.title("Word order")
st.markdown("Does the model care about word order? The same sentence runs twice, once with its words in another "
            "order; each token's vectors from the second run are put back in the original order and compared. "
            "Then the positional information is removed, and the two runs hold the same tokens and nothing else.")

require_text(lm, "through the whole model, twice")
require_weights(lm, "through the whole model, twice")
text = text_field(st, "Sentence", "text", lm, value=DEFAULT_TEXT)
if not text.strip():
    stop_without_text("Type a sentence above to permute its words.")
split = caches.sentence_words(key, text)
truncation_notice(split.truncated, lm)
words = split.words
n = len(words)
if n < 2:
    st.info("Type a sentence of at least two words: one word has only one order.", icon=":material/edit:")
    st.stop()
long = n > INLINE_WORDS
with st.expander(f"Words (the tokenizer's), {n:,}, with their indices") if long else st.container():
    st.caption("Words (the tokenizer's): " + " · ".join(f"**{k}** {w}" for k, w in enumerate(words)))

left, right = st.columns([3, 2])
permutation = left.radio("Permutation", list(PERMUTATIONS), index=1, horizontal=True, **url("permutation"),
                         help="; ".join(f"{name}: {words}" for name, words in PERMUTATIONS.items()) + ".")
reverse = " ".join(map(str, reverse_words(n)))
with right:
    if permutation == "reverse":
        order = reverse_words(n)
    elif permutation == "swap":
        pair = {"swap_i": 1 if n > 2 else 0, "swap_j": n - 1}  # the default pair of this sentence
        if st.session_state.get("swap_words", words) != words:  # a new sentence: its own default pair
            st.session_state.update(pair)
        st.session_state["swap_words"] = words
        # a pair set just above is the boxes' value: a default beside it too, and Streamlit warns
        index = {name: {} if name in st.session_state else {"index": value} for name, value in pair.items()}
        c1, c2 = st.columns(2)
        i = c1.selectbox("Swap word", range(n), **index["swap_i"], **url("swap_i"), help="The word's index (above).")
        j = c2.selectbox("with word", range(n), **index["swap_j"], **url("swap_j"))
        st.caption(f"Swapping **{words[i]}** and **{words[j]}**.")
        order = swap_words(n, i, j)
    elif permutation == "shuffle":
        seed = st.number_input("Seed", 0, 2 ** 31 - 1, 0, **url("seed"), help="The same seed gives the same shuffle.")
        order = shuffle_words(n, int(seed))
    else:
        typed = st.text_input("Order: the word indices in their new order", **url("order"), placeholder=reverse,
                              help=f"Each word index once, separated by spaces, e.g. {reverse} reverses the sentence.")
        if not typed.strip():
            st.info(f"Type an order, e.g. {reverse}.", icon=":material/edit:")
            st.stop()
        try:
            order = parse_order(typed, n)
        except ValueError as exc:
            st.warning(str(exc), icon=":material/warning:")
            st.stop()

refused = removal_refused(lm)
without = st.toggle("Remove positional information", **url("without_positions"), disabled=refused is not None,
                    help="Forward hooks on the model's own modules: the position embeddings become 0, or the "
                         "rotation becomes the identity (cos = 1, sin = 0), or the relative bias becomes 0.")
if refused:
    st.info(refused, icon=":material/block:")
without = without and refused is None

with st.spinner("Running both orders …"):
    kept = caches.word_order(key, text, tuple(order), False)
    removed = caches.word_order(key, text, tuple(order), True) if refused is None else None
shown = removed if without else kept

with st.expander("Both orders, and the tokens the model reads") if long else st.container():
    st.markdown(f"**Original:** {' '.join(words)}  \n**Permuted:** {' '.join(shown.permuted_words)}")
    st.caption("The model reads: " + " ".join(f"`{t}`" for t in shown.permuted_tokens)
               + ". Special tokens stay where the tokenizer put them; a word's tokens move together.")
if list(order) == list(range(n)):
    st.info("This order is the sentence itself: nothing to compare. Pick other words or another permutation.",
            icon=":material/info:")

setting = "without positions" if without else "with positions"
m1, m2, m3 = st.columns(3)
m1.metric(f"Largest difference, last layer ({setting})", f"{shown.max_abs_difference:.2e}",
          help="max over tokens and dimensions of |permuted − original|, after putting the permuted run's "
               "tokens back in the original order. float32 rounding is about 1e-6 here.")
m2.metric(f"Largest difference, input sums ({setting})", f"{shown.max_abs_difference_input:.2e}")
other = kept if without else removed
if other is not None:
    m3.metric(f"Largest difference, last layer ({'with' if without else 'without'} positions)",
              f"{other.max_abs_difference:.2e}")

if shown.causal:
    st.metric("Largest difference, first layer, on tokens that see the same tokens in both orders "
              f"({setting})", f"{shown.max_difference('first', must_match_only=True):.2e}",
              help="Tokens whose preceding tokens (and themselves) are the same set in both orders.")
    st.markdown(
        f"{lm.name} is **causal**: token i attends only to tokens 0 … i. Permuting changes what each token "
        "sees, so even without positions its outputs do not simply follow the permutation. What holds without "
        "positions: after the **first** layer a token whose prefix holds the same tokens, in any order, has "
        "the same vector in both runs; after two or more layers only a token whose prefix is the same "
        "*sequence* does, because the tokens it attends to carry their own, different, prefixes.")
elif without:
    if shown.max_abs_difference < 1e-4:
        st.success(f"Without positions the two orders give the same vector for every token, up to float "
                   f"rounding (largest difference {shown.max_abs_difference:.1e}): the model sees a bag of tokens. "
                   f"With positions the largest difference is {kept.max_abs_difference:.2g}.",
                   icon=":material/check_circle:")
    else:
        st.warning(f"Without positions the largest difference is still {shown.max_abs_difference:.2g}: something "
                   "else in this model depends on position.", icon=":material/warning:")
    st.caption("Removed: " + "; ".join(shown.removed) if shown.removed else "This model has no positional "
               "information to remove.")

show(views.difference_bars(kept, removed), recipe=recipe("word-order-difference", sentence=text, order=order))

st.subheader("The vectors of both orders")
stage = st.radio("Stage", list(STAGES), captions=list(STAGES.values()), horizontal=True, **url("stage"), index=2)
show(views.stage_vectors(shown, stage),
     recipe=recipe("word-order-vectors", sentence=text, order=order, without_positions=without, stage=stage))
if stage == "input" and lm.family.input_positions is None:
    st.caption(f"{lm.name} adds no position vector to its input ({lm.scheme_label}): its input representation "
               "is the same for a token wherever it stands, with or without positions. Position enters inside "
               "attention.")

st.subheader("Why")
st.markdown(
    "Self-attention compares every token with every other by content alone, and the feed-forward layers "
    "treat each token on its own: without positions a bidirectional encoder is *permutation-equivariant*, "
    "permuting its input only permutes its output. Word order exists for the model only through its positional "
    "information: position vectors added to the tokens (BERT, GPT-2), rotations of queries and keys (RoPE), "
    "or biases on the attention scores (T5, ALiBi). BERT's segment embedding is the same for every token of "
    "one sentence, so it carries no order.")
