"""Input representation page: token + segment + position, their sum, and the LayerNorm output."""

import numpy as np
import streamlit as st

import posviz
from posviz import app_state, figures

key = app_state.current_model()
lm = app_state.loaded_model(key)

st.title("Input representation")
layout = lm.layout
st.markdown("What the first layer receives for each token: **"
            + " + ".join(["token"] + ["segment"] * bool(layout.segment) + ["position"] * bool(layout.position))
            + "** embeddings" + (", summed" if layout.segment or layout.position else "")
            + (", then the embedding LayerNorm." if layout.layernorm else f" ({lm.family} has no embedding LayerNorm)."))
app_state.require_weights(lm, "through the embedding layer")
text, text_pair = app_state.sentence_inputs(lm)
if not text.strip():
    st.info("Type a sentence above to see its input representation.", icon=":material/edit:")
    st.stop()
if not lm.layout.token:
    st.info(f"posviz does not know where {lm.family} keeps its token embeddings (or its encoder does not read "
            "text), so it cannot split its input representation. Its attention patterns may still be available.",
            icon=":material/info:")
    st.stop()
if not lm.layout.position:
    st.info(f"{lm.name} uses {lm.scheme_label}: no position vector is added to its input, so its input "
            "representation is the same for a word wherever it stands. Position enters inside attention; "
            "see the Position similarity page.", icon=":material/info:")

with st.spinner("Running the embedding layer …"):
    emb = app_state.input_representation(key, text, text_pair)
app_state.truncation_notice(emb.truncated, lm, paired=bool(text_pair))

parts = {"token": emb.token, "segment": emb.segment, "position": emb.position, "sum": emb.sum,
         "after LayerNorm": emb.normalized}
parts = {name: value for name, value in parts.items() if value is not None}
app_state.show(figures.line_figure(
    {name: np.linalg.norm(value, axis=1) for name, value in parts.items()},
    "Norm of each part, per token (log scale)", "token", "L2 norm", x_labels=emb.tokens, log_y=True),
    arrays={"norms": np.stack([np.linalg.norm(value, axis=1) for value in parts.values()]),
            "parts": list(parts), "tokens": emb.tokens})

choice = st.radio("Vectors", list(parts), horizontal=True, key="part")
app_state.show(figures.vector_heatmap(parts[choice], f"{choice} vectors (tokens × dimensions)", "token",
                                      row_labels=emb.tokens), arrays={"vectors": parts[choice], "tokens": emb.tokens})

if not lm.layout.position:
    st.stop()  # nothing is added per position: every copy of a word has the same input
st.subheader("Same word, other position")
sums = posviz.similarity(emb.sum, "cosine")
tokens_alike = posviz.similarity(emb.token, "cosine")
left, right = st.columns([3, 2], gap="large")
with left:
    app_state.show(figures.token_heatmap(sums, emb.tokens, "Cosine similarity of the input sums", "cosine"),
                   arrays={"cosine": sums, "tokens": emb.tokens})
with right:
    st.markdown("A word that occurs twice has the same token embedding both times, yet a different input sum, "
                "because the position embedding added to it differs: that is all the model knows of word order.")
    special = set(lm.tokenizer.all_special_tokens)
    seen: dict[str, list[int]] = {}
    for i, token in enumerate(emb.tokens):
        seen.setdefault(token, []).append(i)
    repeats = [(token, where[0], where[1]) for token, where in seen.items() if len(where) > 1 and token not in special]
    if repeats:
        st.dataframe({
            "word": [t for t, _, _ in repeats],
            "positions": [f"{i} and {j}" for _, i, j in repeats],
            "cos(token)": [round(float(tokens_alike[i, j]), 4) for _, i, j in repeats],
            "cos(input sum)": [round(float(sums[i, j]), 4) for _, i, j in repeats],
        }, hide_index=True)
        st.caption("First two occurrences of each repeated word: equal token embeddings (cosine 1), "
                   "different input sums.")
