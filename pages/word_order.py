"""Word order page: a sentence beside a permutation of its words, with and without positional information."""

import numpy as np
import streamlit as st

import posviz
from posviz import app_state, figures, word_order
from posviz.app_state import DEFAULT_TEXT, ModelKey


@st.cache_data(show_spinner=False, max_entries=32)
def sentence_words(key: ModelKey, text: str) -> word_order.SentenceWords:
    """Cached :func:`posviz.word_order.split_words`."""
    return word_order.split_words(app_state.loaded_model(key), text)


@st.cache_data(show_spinner=False, max_entries=32)
def comparison(key: ModelKey, text: str, order: tuple[int, ...], without_positions: bool
               ) -> word_order.WordOrderComparison:
    """Cached :func:`posviz.word_order.compare_orders` (keyed by plain values)."""
    return word_order.compare_orders(app_state.loaded_model(key), text, list(order), without_positions)


def removal_refused(lm: posviz.LoadedModel) -> str | None:
    """Why this model's positions cannot be removed, or None when they can."""
    try:
        word_order.removal_plan(lm)
    except word_order.PositionRemovalError as exc:
        return str(exc)
    return None


key = app_state.current_model()
lm = app_state.loaded_model(key)

st.title("Word order")
st.markdown("Does the model care about word order? The same sentence runs twice, once with its words in another "
            "order; each token's vectors from the second run are put back in the original order and compared. "
            "Then the positional information is removed, and the two runs hold the same tokens and nothing else.")

app_state.require_weights(lm, "through the whole model, twice")
text = app_state.text_field(st, "Sentence", "wo_text", value=DEFAULT_TEXT)
if not text.strip():
    st.info("Type a sentence above to permute its words.", icon=":material/edit:")
    st.stop()
split = sentence_words(key, text)
app_state.truncation_notice(split.truncated, lm)
words = split.words
n = len(words)
if n < 2:
    st.info("Type a sentence of at least two words: one word has only one order.", icon=":material/edit:")
    st.stop()
st.caption("Words (the tokenizer's): " + " · ".join(f"**{k}** {w}" for k, w in enumerate(words)))

left, right = st.columns([3, 2])
preset = left.radio("Permutation", list(word_order.PRESETS), index=1, horizontal=True, key="wo_preset",
                    bind="query-params", format_func=word_order.PRESETS.get)
with right:
    if preset == "reverse":
        order = word_order.reverse_words(n)
    elif preset == "swap":
        c1, c2 = st.columns(2)
        label = lambda k: f"{k} · {words[k]}"  # noqa: E731
        i = c1.selectbox("Swap word", range(n), index=1 if n > 2 else 0, format_func=label, key="wo_i",
                         bind="query-params")
        j = c2.selectbox("with word", range(n), index=n - 1, format_func=label, key="wo_j", bind="query-params")
        order = word_order.swap_words(n, i, j)
    elif preset == "shuffle":
        seed = st.number_input("Seed", 0, 2 ** 31 - 1, 0, key="wo_seed", bind="query-params",
                               help="The same seed gives the same shuffle.")
        order = word_order.shuffle_words(n, int(seed))
    else:
        typed = st.text_input("Order: the word indices in their new order", key="wo_order", bind="query-params",
                              placeholder=" ".join(map(str, word_order.reverse_words(n))),
                              help="Each word index once, separated by spaces, e.g. "
                                   + " ".join(map(str, word_order.reverse_words(n))) + " reverses the sentence.")
        if not typed.strip():
            st.info("Type an order, e.g. " + " ".join(map(str, word_order.reverse_words(n))) + ".",
                    icon=":material/edit:")
            st.stop()
        try:
            order = word_order.parse_order(typed, n)
        except ValueError as exc:
            st.warning(str(exc), icon=":material/warning:")
            st.stop()

refused = removal_refused(lm)
without = st.toggle("Remove positional information", key="wo_nopos", bind="query-params",
                    disabled=refused is not None,
                    help="Forward hooks on the model's own modules: the position embeddings become 0, or the "
                         "rotation becomes the identity (cos = 1, sin = 0), or the relative bias becomes 0.")
if refused:
    st.info(refused, icon=":material/block:")
without = without and refused is None

with st.spinner("Running both orders …"):
    kept = comparison(key, text, tuple(order), False)
    removed = comparison(key, text, tuple(order), True) if refused is None else None
shown = removed if without else kept

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

series = {"with positions": kept.l2("output")}
if removed is not None:
    series["without positions"] = removed.l2("output")
app_state.show(figures.token_bars(series, kept.tokens, "‖permuted − original‖ per token, last layer (log scale)",
                                  "L2 norm of the difference"), arrays={**series, "tokens": np.array(kept.tokens)})

st.subheader("The vectors of both orders")
stage = st.radio("Stage", list(word_order.STAGES), horizontal=True, key="wo_stage", bind="query-params",
                 index=2, format_func=word_order.STAGES.get)
original, permuted, _ = shown.stage(stage)
app_state.show(figures.vector_heatmaps(
    {"original order": original, "permuted, put back in the original order": permuted,
     "difference": permuted - original},
    f"{word_order.STAGES[stage]}, {setting} (tokens × dimensions)", shown.tokens),
    arrays={"original": original, "permuted_back": permuted, "difference": permuted - original,
            "tokens": np.array(shown.tokens)})
if stage == "input" and not lm.layout.position:
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
