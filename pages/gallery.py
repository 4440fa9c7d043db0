"""Gallery: ready-made views for a lecture, each one click away (every view's state is in its URL)."""

import streamlit as st

from posviz.app import caches
from posviz.app.navigation import current_model

current_model()
st.title("Gallery")
st.markdown("Ready-made views on the bundled model (offline): one click opens the page with its settings in "
            "the URL, so a view can also be bookmarked or put on a slide.")

SENTENCE = "The quick brown fox jumps over the lazy dog because it was bored"
layer, head, weight = caches.previous_token_head(SENTENCE)

VIEWS = [
    ("BERT's 128 boundary", "pages/model.py", {},
     "The length of each position embedding: a jump at position 127, the last one of the 128-token pre-training "
     "phase (90 % of BERT's steps), then 512."),
    ("Positions 0–127 against 128–511", "pages/projection.py", {"boundaries": "128", "path": "true"},
     "UMAP of the 512 position vectors: the positions trained for 90 % of the steps sit apart from the rest."),
    ("Sinusoid vs learned", "pages/compare.py", {"against": "sinusoid"},
     "The cosine similarity of the learned positions beside the fixed sinusoid of the same width, on one colour "
     "scale."),
    ("Position 128 against all", "pages/similarity.py", {"metric": "cosine", "q": "128"},
     "How similar position 128 is to every other position: learned tables are noisier than the sinusoid."),
    ("Same word, other position", "pages/input.py", {},
     "'The cat chased the dog' against 'The dog chased the cat': the same words get different inputs because "
     "different position vectors are added to them."),
    ("The previous-token head", "pages/attention.py",
     {"layer": str(layer), "head": str(head), "text": SENTENCE, "text_pair": "", "hide_special": "true"},
     f"Layer {layer}, head {head}: each token puts {weight:.1%} of its attention, on average, on the token just "
     "before it. Where this head looks is decided by position alone."),
]

for row in range(0, len(VIEWS), 2):
    for column, (title, page, params, text) in zip(st.columns(2, gap="large"), VIEWS[row:row + 2]):
        with column.container(border=True):
            st.page_link(page, label=f"**{title}**", icon=":material/play_circle:", query_params=params)
            st.caption(text)
