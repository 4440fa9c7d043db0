"""Properties page: monotonicity, translation invariance and symmetry (Wang et al., ICLR 2021) of
P·Pᵀ beside the sinusoid of the same width, and of first-layer attention on identical-word inputs,
with the locality and symmetry scores of Chen, Varoquaux & Suchanek (2023).
"""

import numpy as np
import pandas as pd
import streamlit as st

import posviz
from posviz import app_state, figures, properties
from posviz.app_state import ModelKey

#: Defaults of the identical-word inputs: word tokens per input, words averaged over.
LENGTH, WORDS = 64, 16
MAX_LENGTH = 512


@st.cache_data(show_spinner=False, max_entries=16)
def model_properties(key: ModelKey, component: int, metric: str, count: int) -> properties.PositionProperties:
    """:func:`posviz.properties.position_properties` of the scheme's similarity over positions 0 … count − 1."""
    matrix, _ = app_state.position_matrix(key, component, metric, 0, count - 1)
    return properties.position_properties(matrix)


@st.cache_data(show_spinner=False, max_entries=16)
def sinusoid_properties(width: int, metric: str, count: int) -> properties.PositionProperties:
    """The same for the interleaved sinusoid of ``width``."""
    matrix, _ = app_state.sinusoid_matrix(width, "interleaved", metric, 0, count - 1)
    return properties.position_properties(matrix)


@st.cache_data(show_spinner=False, max_entries=8)
def identical_words(key: ModelKey, words: int, length: int) -> properties.IdenticalWordAttention:
    """Cached :func:`posviz.properties.identical_word_attention` (layer 0)."""
    return properties.identical_word_attention(app_state.loaded_model(key), words, length)


@st.cache_data(show_spinner=False, max_entries=8)
def head_scores(key: ModelKey, words: int, length: int, keep_special: bool) -> tuple[np.ndarray, dict]:
    """The attention shown, float32 [heads, L, L], and :func:`posviz.properties.attention_scores` of every
    head and, last, of the heads' mean."""
    att = identical_words(key, words, length)
    matrices = att.patterns if keep_special else att.words_only()
    stacked = np.concatenate([matrices, matrices.mean(axis=0, keepdims=True)])
    return matrices, properties.attention_scores(stacked, att.causal)


@st.cache_data(show_spinner=False, max_entries=8)
def sinusoid_attention(width: int, length: int) -> tuple[np.ndarray, dict]:
    """softmax(P·Pᵀ/√d) of the sinusoid over ``length`` positions, and its scores."""
    matrix = properties.position_only_attention(posviz.sinusoidal(length, width))
    return matrix, properties.attention_scores(matrix)


def number(value) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.4f}"


def per_unit(p: properties.PositionProperties, values: np.ndarray) -> np.ndarray:
    """Divided by ḡ(0) (the mean of φ(x, x)) where that is positive."""
    return values / p.diagonal_mean if p.diagonal_mean > 0 else values


key = app_state.current_model()
lm = app_state.loaded_model(key)

st.title("Position properties")
st.markdown(
    "Wang et al. (*On Position Embeddings in BERT*, ICLR 2021) ask three things of a proximity φ between "
    "positions: **monotonicity** (nearer positions are closer), **translation invariance** (only the offset "
    "matters) and **symmetry** (φ(x, y) = φ(y, x)). Their exact numeric indicators were not available to us: "
    "each score here is named for what it is and defined beside it. Chen, Varoquaux & Suchanek (*The Locality "
    "and Symmetry of Positional Encodings*, EMNLP Findings 2023) score attention matrices; their two scores "
    "are in the attention section, computed as their code does.")
component, encoding = app_state.choose_encoding(key)
hidden = int(lm.config.get_text_config().hidden_size)

# ---------------------------------------------------------------- from P·Pᵀ

st.header("From P·Pᵀ")
if encoding.kind != "vectors":
    reason = ("it adds no positional information" if encoding.kind == "none"
              else "its positions are a bias on the attention score of each head, not a vector per position")
    st.info(f"{lm.name} uses {lm.scheme_label}: {reason}, so there is **no P·Pᵀ** and none of these three "
            "scores exists for it. Its properties are read from attention only, in the next section.",
            icon=":material/info:")
    if encoding.kind != "none":
        app_state.explain(encoding)
    width = hidden
else:
    width = app_state.reference_width(encoding)
    top = min(encoding.num_positions, app_state.MAX_SHOWN)
    c1, c2 = st.columns([1, 2])
    names = ({"dot": "kernel K(m, n)", "cosine": "cosine"} if encoding.scheme == "rotary"
             else {"dot": "dot product P·Pᵀ", "cosine": "cosine"})
    metric = c1.radio("Proximity φ", ["dot", "cosine"], horizontal=True, key="metric", bind="query-params",
                      format_func=names.get, help="Wang et al. use the dot product.")
    app_state.clip_state("count", 3, top)
    count = c2.slider(f"{encoding.axis_label.capitalize()}s 0 … N − 1", 3, top, min(top, 512), key="count",
                      bind="query-params", help=f"Consecutive rows only (offsets need them); at most {top}.")
    with st.spinner("Computing the properties …"):
        mine = model_properties(key, component, metric, count)
        ref = sinusoid_properties(width, metric, count)
    model_name = lm.name + (f" ({encoding.component})" if encoding.component else "")
    ref_name = f"sinusoid, width {width}"
    phi = "K" if encoding.scheme == "rotary" and metric == "dot" else ("P·Pᵀ" if metric == "dot" else "cosine")
    st.caption(f"φ = {phi} over {encoding.axis_label}s 0 … {count - 1}, beside the interleaved sinusoid of the same "
               f"width ({width}{', the rotated dimensions' if encoding.scheme == 'rotary' else ''}) over the same "
               "positions, the reference: its φ depends on the offset only.")

    def scores(label: str, mine_value: float, ref_value: float) -> None:
        left, right, _ = st.columns([1, 1, 2])
        left.metric(f"{label}, {model_name}", number(mine_value))
        right.metric(f"{label}, {ref_name}", number(ref_value))

    st.subheader("Monotonicity")
    st.markdown("**Property** (Wang et al.): m > n ⇔ φ(x, x + m) < φ(x, x + n) — the nearer two positions, the "
                "closer. **Score**: Spearman's rank correlation between the offset k and the mean proximity at that "
                "offset over every start position; −1 = perfectly monotone, 0 = proximity unrelated to distance.")
    st.latex(r"\rho = \operatorname{Spearman}\big(k,\ \bar g(k)\big),\ k = 1,\dots,N-1,\qquad "
             r"\bar g(k) = \frac{1}{N-k}\sum_{x=0}^{N-1-k} \varphi(x, x+k)")
    scores("ρ", mine.monotonicity, ref.monotonicity)
    rises = ", ".join(f"{name}: {'never' if p.first_rise is None else f'k = {p.first_rise} → {p.first_rise + 1}'}"
                      for name, p in ((model_name, mine), (ref_name, ref)))
    st.caption(f"First offset where ḡ rises again — {rises}.")
    app_state.show(figures.line_figure(
        {model_name: per_unit(mine, mine.mean), ref_name: per_unit(ref, ref.mean)},
        "Mean proximity against offset, ÷ ḡ(0)", "offset k", "ḡ(k) ÷ ḡ(0)", x=mine.offsets))
    st.caption("Each curve is divided by its own ḡ(0), the mean of φ(x, x), so that widths compare; ρ does not "
               "change under that scaling.")

    st.subheader("Translation invariance")
    st.markdown("**Property** (Wang et al.): φ(x₁, x₁ + m) = … = φ(xₙ, xₙ + m) for every offset m — only the "
                "offset matters, not where the pair starts. **Score**: the share of the variance of φ over all "
                "pairs x ≠ y that the signed offset k = y − x explains (the correlation ratio η²); 1 = every "
                "diagonal of the matrix is constant.")
    st.latex(r"\eta^2 = 1 - \frac{\sum_{k \ne 0} \sum_x \big(\varphi(x, x+k) - \bar g(k)\big)^2}"
             r"{\sum_{k \ne 0} \sum_x \big(\varphi(x, x+k) - \bar g\big)^2}")
    scores("η²", mine.translation_invariance, ref.translation_invariance)
    app_state.show(figures.offset_band_figure(
        {model_name: (mine.offsets, mine.mean, mine.low, mine.high),
         ref_name: (ref.offsets, ref.mean, ref.low, ref.high)},
        "φ(x, x + k) against the offset k: mean and min–max over start positions x", "offset k", phi),
        arrays={"offset": mine.offsets, "model_mean": mine.mean, "model_low": mine.low, "model_high": mine.high,
                "sinusoid_mean": ref.mean, "sinusoid_low": ref.low, "sinusoid_high": ref.high})
    st.caption("The band runs from the smallest to the largest φ(x, x + k) over x = 0 … N − 1 − k; a "
               "translation-invariant φ has no band. ḡ is the mean over all pairs x ≠ y.")

    st.subheader("Symmetry")
    st.markdown("**Property** (Wang et al.): φ(x, y) = φ(y, x). **Score**: one minus the summed absolute "
                "differences of the two directions, relative to their summed magnitudes; 1 = symmetric, 0 = in "
                "every pair one direction is 0. A dot product or cosine of position vectors is symmetric by "
                "construction (x·y = y·x), so S = 1 for every model here: the informative test is attention, below.")
    st.latex(r"S = 1 - \frac{\sum_{x<y} \lvert \varphi(x, y) - \varphi(y, x) \rvert}"
             r"{\sum_{x<y} \big(\lvert \varphi(x, y)\rvert + \lvert \varphi(y, x)\rvert\big)}")
    scores("S", mine.symmetry, ref.symmetry)
    app_state.show(figures.line_figure(
        {model_name: per_unit(mine, mine.signed_mean), ref_name: per_unit(ref, ref.signed_mean)},
        "Mean proximity against the signed offset k = y − x, ÷ ḡ(0)", "signed offset k", "ḡ(k) ÷ ḡ(0)",
        x=mine.signed_offsets))
    st.caption("A symmetric φ gives a curve that is its own mirror image about k = 0.")

# ---------------------------------------------------------------- identical-word attention

st.header("Identical-word attention, layer 0")
st.markdown(
    "As Wang et al. do, the model reads inputs in which **every token is the same word** (\"the the the …\"), "
    "with its own special tokens around them; all tokens share one content, so what the first layer's "
    "attention does differently across tokens comes from positions. Each word from a list of common English "
    "words is used only if the tokenizer writes every copy as the same single token; the attention of layer 0 "
    "is averaged over the words.")
app_state.require_weights(lm, "of one repeated word through the first layer")
longest = min(properties.max_identical_length(lm), MAX_LENGTH)
c1, c2, c3 = st.columns([2, 2, 1])
app_state.clip_state("length", 3, longest)
length = c1.slider("Word tokens per input (L)", 3, longest, min(LENGTH, longest), key="length", bind="query-params")
words = c2.slider("Words averaged over", 1, 64, WORDS, key="words", bind="query-params",
                  help="One forward pass per word (in batches).")
keep_special = c3.toggle("Keep special tokens", key="keep_special", bind="query-params",
                         help="Off: [CLS], [SEP], BOS … dropped as queries and keys, each row renormalised to 1.")
try:
    with st.spinner("Running the model on identical-word inputs …"):
        att = identical_words(key, words, length)
        matrices, head = head_scores(key, words, length, keep_special)
except ValueError as exc:
    st.warning(str(exc), icon=":material/warning:")
    st.stop()
ref_matrix, ref_scores = sinusoid_attention(width, matrices.shape[-1])
heads = matrices.shape[0]
first = 0 if keep_special else int(np.argmax(~att.special))
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
st.latex(r"\mathrm{symmetry} = 1 - \frac{\sum_i \sum_{t=1}^{m_i} s_i(t)}{\sum_i m_i},\qquad "
         r"m_i = \min(i, L-1-i)")
st.latex(r"s_i(t) = \frac{d_i(t) - \min_t d_i}{\max_t d_i - \min_t d_i},\qquad "
         r"d_i(t) = \lvert M_{i,i-t} - M_{i,i+t}\rvert")
side = "the “before” side (a query looking k back)" if att.causal else "both sides, against |k|"
st.markdown(f"Wang et al.'s three properties use the definitions above with φ(x, y) = M[x, y] (query x, key y): "
            f"monotonicity ρ on {side}" + ("; translation invariance without the masked keys" if att.causal else "")
            + f". The reference row is the sinusoid of width {width} attending by position alone, "
              "M = softmax(P·Pᵀ / √d) row by row.")
rows = [f"head {h}" for h in range(heads)] + ["mean of the heads' attention",
                                              f"sinusoid, width {width}: softmax(P·Pᵀ/√d)"]
table = pd.DataFrame({"attention": rows, **{label: np.concatenate([head[name], [ref_scores[name]]])
                                            for name, label in properties.ATTENTION_SCORES.items()}})
st.dataframe(table.style.format("{:.4f}", na_rep="n/a", subset=list(properties.ATTENTION_SCORES.values())),
             hide_index=True, height=35 * (len(table) + 1) + 3,
             column_config={"attention": st.column_config.TextColumn(width="medium")})

titles = [f"head {h} · loc {head['locality'][h]:.2f} · sym {head['attention_symmetry'][h]:.2f}"
          for h in range(heads)]
app_state.show(figures.small_multiples(
    matrices, titles, f"Layer 0 attention on identical words ({'with' if keep_special else 'without'} special "
    "tokens), rows = queries, columns = keys", zmin=0, names=("query", "key"), first=first,
    columns=min(3, heads)), arrays={"attention": np.asarray(matrices)})
st.caption("Tile titles: Chen et al.'s locality (loc) and symmetry (sym) of each head. One colour scale from 0 "
           "to the largest weight.")

profiles = {f"head {h}": properties.proximity_by_offset(matrices[h], signed=True)[1] for h in range(heads)}
offsets, ref_profile, _, _ = properties.proximity_by_offset(ref_matrix, signed=True)
profiles[f"sinusoid, width {width}: softmax(P·Pᵀ/√d)"] = ref_profile
app_state.show(figures.line_figure(
    profiles, "Mean attention against the offset k = key − query (mean over queries)", "offset k = key − query",
    "mean attention weight", x=offsets))
st.caption("A local head peaks at k = 0 or ±1; a symmetric one is its own mirror image about k = 0; a "
           "translation-invariant one has the same weight at every query for a given k. Click a legend entry to "
           "hide it.")
