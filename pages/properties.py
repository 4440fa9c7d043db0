"""Properties page: monotonicity, translation invariance and symmetry (Wang et al., ICLR 2021) of
P·Pᵀ beside the sinusoid of the same width, and of first-layer attention on identical-word inputs,
with the locality and symmetry scores of Chen, Varoquaux & Suchanek (2023).
"""

import numpy as np
import pandas as pd
import streamlit as st

from posviz.analysis.identical_words import max_identical_length
from posviz.analysis.locality import ATTENTION_SCORES
from posviz.app import caches
from posviz.app.downloads import show
from posviz.app.notices import explain, require_attention, require_text, require_weights
from posviz.app.navigation import current_model
from posviz.app.widgets import choose_encoding, clip_state, url
from posviz.positions.base import METRICS
from posviz.recipes import recipe
from posviz.views import properties as views
from posviz.views.limits import MAX_IDENTICAL_LENGTH, MAX_POSITIONS

#: The score table's headers, short enough for the table to fit beside the sidebar at 1024 px; each
#: column's help is its full name (posviz.analysis.locality.ATTENTION_SCORES).
SHORT_HEADERS = {"locality": "locality", "attention_symmetry": "symmetry", "monotonicity": "ρ",
                 "translation_invariance": "η²", "symmetry": "S"}

#: Defaults of the identical-word inputs: word tokens per input, words averaged over.
LENGTH, WORDS = 64, 16


def number(value) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.4f}"


key, lm = current_model()

st.title("Position properties")
st.markdown(
    "Wang et al. (*On Position Embeddings in BERT*, ICLR 2021) ask three things of a proximity φ between "
    "positions: **monotonicity** (nearer positions are closer), **translation invariance** (only the offset "
    "matters) and **symmetry** (φ(x, y) = φ(y, x)). Their exact numeric indicators were not available to us: "
    "each score here is named for what it is and defined beside it. Chen, Varoquaux & Suchanek (*The Locality "
    "and Symmetry of Positional Encodings*, EMNLP Findings 2023) score attention matrices; their two scores "
    "are in the attention section, computed as their code does.")
encoding = choose_encoding(lm)
hidden = int(lm.config.get_text_config().hidden_size)

# ---------------------------------------------------------------- from P·Pᵀ

# a container, its elements however many the model makes: the controls below keep their place as the model
# changes (posviz.app.navigation.main says why that matters)
with st.container():
    st.header("From P·Pᵀ")
    if not encoding.has_vectors:
        reason = ("its positions are a bias on the attention score of each head, not a vector per position"
                  if encoding.has_bias else "it has no vector per position")
        st.info(f"{lm.name} uses {lm.scheme_label}: {reason}, so there is **no P·Pᵀ** and none of these three "
                "scores exists for it. Its properties can only be read from attention, in the next section.",
                icon=":material/info:")
        if encoding.has_bias:
            explain(encoding)
        width = hidden
    else:
        width = encoding.reference_width
        top = min(encoding.num_positions, MAX_POSITIONS)
        c1, c2 = st.columns([1, 2])
        metric = c1.radio("Proximity φ", METRICS, captions=[encoding.metric_names[m] for m in METRICS],
                          horizontal=True, **url("metric"), help="Wang et al. use the dot product.")
        clip_state("count", 3, top)
        count = c2.slider(f"{encoding.axis_label.capitalize()}s 0 … N − 1", 3, top, min(top, 512), **url("count"),
                          help=f"Consecutive rows only (offsets need them); at most {top}.")
        with st.spinner("Computing the properties …"):
            mine = caches.model_properties(key, encoding.component, metric, count)
            ref = caches.sinusoid_properties(width, metric, count)
        names = model_name, ref_name = views.compared_names(lm.name, encoding)
        phi = encoding.metric_label(metric)
        meaning = f", {encoding.width_meaning}" if encoding.width_meaning else ""
        st.caption(f"φ = {phi} over {encoding.axis_label}s 0 … {count - 1}, beside the interleaved sinusoid of the "
                   f"same width ({width}{meaning}) over the same positions, the reference: its φ depends on the "
                   "offset only.")

        def scores(label: str, mine_value: float, ref_value: float) -> None:
            left, right, _ = st.columns([3, 3, 4], vertical_alignment="bottom")  # values in line when a label wraps
            left.metric(f"{label}, {model_name}", number(mine_value))
            right.metric(f"{label}, {ref_name}", number(ref_value))

        st.subheader("Monotonicity")
        st.markdown("**Property** (Wang et al.): m > n ⇔ φ(x, x + m) < φ(x, x + n) — the nearer two positions, "
                    "the closer. **Score**: Spearman's rank correlation between the offset k and the mean proximity "
                    "at that offset over every start position; −1 = perfectly monotone, 0 = proximity unrelated to "
                    "distance.")
        st.latex(r"\begin{gathered} \rho = \operatorname{Spearman}\big(k,\ \bar g(k)\big),\ k = 1,\dots,N-1 \\ "
                 r"\bar g(k) = \frac{1}{N-k}\sum_{x=0}^{N-1-k} \varphi(x, x+k) \end{gathered}")
        scores("ρ", mine.monotonicity, ref.monotonicity)
        rises = ", ".join(f"{name}: {'never' if p.first_rise is None else f'k = {p.first_rise} → {p.first_rise + 1}'}"
                          for name, p in ((model_name, mine), (ref_name, ref)))
        st.caption(f"First offset where ḡ rises again — {rises}.")
        by_matrix = dict(component=encoding.component, metric=metric, count=count)
        show(views.monotonicity_profile(mine, ref, names), recipe=recipe("monotonicity", **by_matrix))

        st.subheader("Translation invariance")
        st.markdown("**Property** (Wang et al.): φ(x₁, x₁ + m) = … = φ(xₙ, xₙ + m) for every offset m — only the "
                    "offset matters, not where the pair starts. **Score**: the share of the variance of φ over all "
                    "pairs x ≠ y that the signed offset k = y − x explains (the correlation ratio η²); 1 = every "
                    "diagonal of the matrix is constant.")
        st.latex(r"\eta^2 = 1 - \frac{\sum_{k \ne 0} \sum_x \big(\varphi(x, x+k) - \bar g(k)\big)^2}"
                 r"{\sum_{k \ne 0} \sum_x \big(\varphi(x, x+k) - \bar g\big)^2}")
        scores("η²", mine.translation_invariance, ref.translation_invariance)
        show(views.translation_bands(mine, ref, names, phi), recipe=recipe("translation-invariance", **by_matrix))

        st.subheader("Symmetry")
        st.markdown("**Property** (Wang et al.): φ(x, y) = φ(y, x). **Score**: one minus the summed absolute "
                    "differences of the two directions, relative to their summed magnitudes; 1 = symmetric, 0 = in "
                    "every pair one direction is 0. A dot product or cosine of position vectors is symmetric by "
                    "construction (x·y = y·x), so S = 1 for every model here: the informative test is attention, "
                    "below.")
        st.latex(r"S = 1 - \frac{\sum_{x<y} \lvert \varphi(x, y) - \varphi(y, x) \rvert}"
                 r"{\sum_{x<y} \big(\lvert \varphi(x, y)\rvert + \lvert \varphi(y, x)\rvert\big)}")
        scores("S", mine.symmetry, ref.symmetry)
        show(views.symmetry_profile(mine, ref, names), recipe=recipe("symmetry", **by_matrix))

# ---------------------------------------------------------------- identical-word attention

st.header("Identical-word attention, layer 0")
st.markdown(
    "As Wang et al. do, the model reads inputs in which **every token is the same word** (\"the the the …\"), "
    "with its own special tokens around them; all tokens share one content, so what the first layer's "
    "attention does differently across tokens comes from positions. Each word from a list of common English "
    "words is used only if the tokenizer writes every copy as the same single token; the attention of layer 0 "
    "is averaged over the words.")
require_text(lm, "of one repeated word through the first layer")
require_weights(lm, "of one repeated word through the first layer")
require_attention(lm, "Identical-word attention")
longest = min(max_identical_length(lm), MAX_IDENTICAL_LENGTH)
c1, c2 = st.columns(2)
clip_state("length", 3, longest)
length = c1.slider("Word tokens per input (L)", 3, longest, min(LENGTH, longest), **url("length"))
words = c2.slider("Words averaged over", 1, 64, WORDS, **url("words"), help="One forward pass per word (in batches).")
keep_special = st.toggle("Keep special tokens", **url("keep_special"),
                         help="Off: [CLS], [SEP], BOS … dropped as queries and keys, each row renormalised to 1.")
try:
    with st.spinner("Running the model on identical-word inputs …"):
        att = caches.identical_words(key, words, length)
        matrices, first, head = caches.shown_identical_words(key, words, length, keep_special)
except ValueError as exc:
    st.warning(str(exc), icon=":material/warning:")
    st.stop()
ref_matrix, ref_scores = caches.sinusoid_attention(width, matrices.shape[-1])
shown_words = ", ".join(att.words[:12]) + (" …" if len(att.words) > 12 else "")
st.caption(f"Averaged over {len(att.words)} words ({shown_words}); input of the first: "
           f"{' '.join(att.tokens[:4])} … ({len(att.tokens)} tokens)"
           + (". Causal model: keys after the query get weight 0." if att.causal else "."))

st.subheader("Scores per head")
st.markdown("**Chen et al.'s locality** weighs each attention weight by 2 to the minus distance; 1 = every token "
            "attends only to itself, ½ = only to a neighbour. **Chen et al.'s symmetry** compares each query's "
            "weights at the same distance on its left and right, min-max scaled within the row and pooled over "
            "all (row, distance) pairs, exactly as their code (`locality_symmetry/calculate.py`); rows without a "
            "key on both sides are skipped, and a row whose differences are all equal (always with one pair) "
            "counts 0. The min-max scaling makes it relative: it says how concentrated the asymmetry is, not "
            "how large.")
st.latex(r"\mathrm{locality} = \frac{1}{L}\sum_{i,j} M_{ij}\, 2^{-\lvert i-j\rvert}")
st.latex(r"\begin{gathered} \mathrm{symmetry} = 1 - \frac{\sum_i \sum_{t=1}^{m_i} s_i(t)}{\sum_i m_i} \\ "
         r"m_i = \min(i, L-1-i) \end{gathered}")
st.latex(r"\begin{gathered} s_i(t) = \frac{d_i(t) - \min_t d_i}{\max_t d_i - \min_t d_i} \\ "
         r"d_i(t) = \lvert M_{i,i-t} - M_{i,i+t}\rvert \end{gathered}")
side = "the “before” side (a query looking k back)" if att.causal else "both sides, against |k|"
st.markdown(f"Wang et al.'s three properties use the definitions above with φ(x, y) = M[x, y] (query x, key y): "
            f"monotonicity ρ on {side}" + ("; translation invariance without the masked keys" if att.causal else "")
            + f". The reference row is the sinusoid of width {width} attending by position alone, "
              "M = softmax(P·Pᵀ / √d) row by row.")
table = pd.DataFrame(views.score_rows(head, ref_scores, width))
headers = {ATTENTION_SCORES[score]: st.column_config.NumberColumn(short, help=ATTENTION_SCORES[score])
           for score, short in SHORT_HEADERS.items()}
st.dataframe(table.style.format("{:.4f}", na_rep="n/a", subset=list(ATTENTION_SCORES.values())),
             hide_index=True, height=35 * (len(table) + 1) + 3,
             column_config={"attention": st.column_config.TextColumn(width="medium"), **headers})

by_words = dict(words=words, length=length, keep_special=keep_special)
show(views.identical_word_tiles(matrices, head, keep_special=keep_special, first=first),
     recipe=recipe("identical-word-attention", **by_words))
show(views.attention_by_offset(matrices, ref_matrix, width),
     recipe=recipe("attention-by-offset", component=encoding.component, **by_words))
