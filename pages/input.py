"""Input representation page: token + segment + position, their sum, and the LayerNorm output."""

import streamlit as st

from posviz.app import caches, layout
from posviz.app.downloads import show
from posviz.app.notices import require_text, require_weights, truncation_notice
from posviz.app.navigation import current_model
from posviz.app.widgets import sentence_inputs, stop_without_text, url
from posviz.recipes import recipe
from posviz.views import input as views

key, lm = current_model()

st.title("Input representation")
require_text(lm, "through the embedding layer")
family = lm.family
adds_positions = family.input_positions is not None
st.markdown("What the first layer receives for each token: **"
            + " + ".join(["token"] + ["segment"] * bool(family.segment) + ["position"] * adds_positions)
            + "** embeddings" + (", summed" if family.segment or adds_positions else "")
            + (", then the embedding LayerNorm." if family.layernorm
               else f" ({lm.model_type} has no embedding LayerNorm)."))
require_weights(lm, "through the embedding layer")
text, text_pair = sentence_inputs(lm)
if not text.strip():
    stop_without_text("Type a sentence above to see its input representation.")
if not family.token:
    st.info(f"posviz does not know where {lm.model_type} keeps its token embeddings (or its encoder does not read "
            "text), so it cannot split its input representation. Its attention patterns may still be available.",
            icon=":material/info:")
    st.stop()
if not adds_positions:
    inside = ("Position enters inside attention; see the Position similarity page."
              if any(e.has_vectors or e.has_bias for e in lm.encodings) else lm.encodings[0].describe())
    st.info(f"{lm.name} uses {lm.scheme_label}: no position vector is added to its input, so its input "
            f"representation is the same for a word wherever it stands. {inside}", icon=":material/info:")

with st.spinner("Running the embedding layer …"):
    emb = caches.input_parts(key, text, text_pair)
truncation_notice(emb.truncated, lm, paired=bool(text_pair))
if emb.other is not None:
    st.caption(f"**other**: what {lm.model_type} adds besides the token, segment and position vectors (what its "
               "embedding LayerNorm receives, less their sum): LayoutLM's box embeddings for the default box "
               "(0, 0, 0, 0), ERNIE 3's task embedding.")

sentences = dict(sentence=text, text_pair=text_pair)
show(views.part_norms(emb), recipe=recipe("input-norms", **sentences))
part = st.radio("Vectors", list(emb.parts), horizontal=True, **url("part"))
show(views.part_vectors(emb, part), recipe=recipe("input-vectors", part=part, **sentences))

if not adds_positions:
    st.stop()  # nothing is added per position: every copy of a word has the same input
st.subheader("Same word, other position")
left, right = layout.pair([3, 2])
with left:
    show(views.input_similarity(emb), recipe=recipe("input-similarity", **sentences))
with right:
    st.markdown("A word that occurs twice has the same token embedding both times, yet a different input sum, "
                "because the position embedding added to it differs: that is all the model knows of word order.")
    repeats = views.repeated_words(emb, set(lm.tokenizer.all_special_tokens))
    if repeats["word"]:
        st.dataframe(repeats, hide_index=True)
        st.caption("First two occurrences of each repeated word: equal token embeddings (cosine 1), "
                   "different input sums.")
