"""Position properties: Wang et al.'s (ICLR 2021) monotonicity, translation invariance and symmetry,
Chen, Varoquaux & Suchanek's (2023) locality and symmetry, identical-word attention, and the page.

Expectations come from the sinusoid's formula (tests/support/sinusoid.py, whose reference values
tests/test_schemes.py asserts), from hand-made matrices whose answers follow from the definitions,
and from the model's own ``output_attentions``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr
from sklearn.preprocessing import MinMaxScaler

import posviz
from posviz.analysis import identical_words as iw
from posviz.analysis import locality as loc
from posviz.analysis import properties as pr
from tests.support import sinusoid as formula
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import arr, assert_clean, figures, open_page


def sinusoid_gram(n: int, d: int, layout: str = "interleaved") -> np.ndarray:
    return posviz.similarity(posviz.sinusoidal(n, d, layout))


# ---------------------------------------------------------------- the sinusoid


def formula_offsets(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets k = 1 .. 511 and the sinusoid's dot product at each, g(k) = sum_k cos(k w_k), from its
    formula (tests/support/sinusoid.py; the reference values are asserted in tests/test_schemes.py)."""
    return np.arange(1, 512), formula.offset_curve(512, d)[1:]


@pytest.mark.parametrize("layout", ["interleaved", "halves"])
def test_sinusoid_768_properties_are_the_formulas(layout):
    G = sinusoid_gram(512, 768, layout)
    offsets, curve = formula_offsets(768)
    p = pr.position_properties(G)
    assert p.monotonicity == pytest.approx(spearmanr(offsets, curve).statistic, abs=5e-5)
    assert pr.monotonicity(G) == p.monotonicity
    rise = formula.first_rise(formula.offset_curve(512, 768))
    assert p.first_rise == rise  # ḡ(rise + 1) > ḡ(rise), the first time
    assert p.mean[rise] > p.mean[rise - 1] and np.all(np.diff(p.mean[:rise]) < 0)
    # translation invariance and symmetry: exact up to float32 rounding
    assert p.translation_invariance == pytest.approx(1.0, abs=1e-9)
    assert p.symmetry == pytest.approx(1.0, abs=1e-7)
    # every diagonal constant: G[i, i + k] the same for every i (max - min < 1e-3 in float32)
    assert np.max(p.high - p.low) < 1e-3
    np.testing.assert_array_equal(p.offsets, offsets)
    np.testing.assert_allclose(p.mean, curve, atol=1e-3)
    assert p.diagonal_mean == pytest.approx(formula.offset_curve(512, 768)[0], abs=1e-3)
    # signed profile: mirror image, ḡ(0) = G[i, i] in the middle
    assert p.signed_offsets.tolist() == list(range(-511, 512))
    np.testing.assert_allclose(p.signed_mean, p.signed_mean[::-1], atol=1e-3)
    assert p.signed_mean[511] == pytest.approx(p.diagonal_mean, abs=1e-3)
    np.testing.assert_allclose(p.signed_mean[512:], curve, atol=1e-3)


def test_sinusoid_512_first_rise_and_float64():
    G = sinusoid_gram(512, 512)
    assert pr.first_rise(pr.proximity_by_offset(G)[1]) == formula.first_rise(formula.offset_curve(512, 512))
    P = posviz.sinusoidal(512, 768).astype(np.float64)
    assert pr.monotonicity(P @ P.T) == pytest.approx(spearmanr(*formula_offsets(768)).statistic, abs=5e-5)


def test_rotary_kernel_is_translation_invariant_and_symmetric(tiny_lm):
    encoding = tiny_lm("llama").encodings[0]
    G = posviz.similarity(encoding.vectors(np.arange(128)))
    assert pr.translation_invariance(G) == pytest.approx(1.0, abs=1e-6)
    assert pr.symmetry(G) == pytest.approx(1.0, abs=1e-6)


def test_learned_table_is_not_translation_invariant(bundled_lm):
    G = posviz.similarity(bundled_lm.encodings[0].matrix)
    assert pr.translation_invariance(G) < 0.9
    assert pr.symmetry(G) == pytest.approx(1.0, abs=1e-6)  # the score of a symmetric matrix (a dot product)


# ---------------------------------------------------------------- Wang et al.'s scores on hand-made matrices


def toeplitz(values: np.ndarray) -> np.ndarray:
    n = len(values)
    return values[np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])]


def test_wang_scores_on_hand_made_matrices():
    decreasing = toeplitz(1.0 / (1.0 + np.arange(20)))
    assert pr.monotonicity(decreasing) == pytest.approx(-1.0)
    assert pr.translation_invariance(decreasing) == pytest.approx(1.0)
    assert pr.symmetry(decreasing) == pytest.approx(1.0)
    assert pr.monotonicity(toeplitz(np.arange(20.0))) == pytest.approx(1.0)  # farther = closer
    assert pr.first_rise(pr.proximity_by_offset(decreasing)[1]) is None

    # one cell off: a band appears at offset 3 only, and η² drops below 1
    broken = decreasing.copy()
    broken[4, 7] += 0.5
    offsets, mean, low, high = pr.proximity_by_offset(broken)
    assert high[2] - low[2] == pytest.approx(0.5) and np.all((high - low)[offsets != 3] == 0)
    assert 0 < pr.translation_invariance(broken) < 1
    # symmetry: |a − b| summed over pairs / (|a| + |b|) summed over pairs
    a = decreasing[np.triu_indices(20, 1)]
    assert pr.symmetry(broken) == pytest.approx(1 - 0.5 / (2 * np.sum(np.abs(a)) + 0.5))

    # a row-only matrix: the offset explains nothing beyond the row's own variance
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(200, 200))
    assert pr.translation_invariance(noise) < 0.02
    assert abs(pr.monotonicity(noise)) < 0.3

    # strictly lower-triangular (causal): S = 0; masked cells (NaN) are left out
    causal = np.tril(decreasing, -1)
    assert pr.symmetry(causal) == 0.0
    masked = np.where(np.triu(np.ones((20, 20), bool), 1), np.nan, decreasing)
    assert pr.translation_invariance(masked) == pytest.approx(1.0)
    assert pr.monotonicity(masked, side="before") == pytest.approx(-1.0)
    assert np.isnan(pr.monotonicity(masked, side="after"))
    assert pr.monotonicity(decreasing, side="both") == pytest.approx(-1.0)
    assert pr.symmetry(np.zeros((4, 4))) == 1.0 and pr.translation_invariance(np.ones((4, 4))) == 1.0

    offsets, mean, low, high = pr.proximity_by_offset(decreasing, signed=True, max_offset=3)
    assert offsets.tolist() == [-3, -2, -1, 0, 1, 2, 3]
    np.testing.assert_allclose(mean, [1 / 4, 1 / 3, 1 / 2, 1, 1 / 2, 1 / 3, 1 / 4])


def test_wang_scores_reject_bad_input():
    with pytest.raises(ValueError, match="square"):
        pr.monotonicity(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="max_offset"):
        pr.proximity_by_offset(np.eye(4), max_offset=4)
    with pytest.raises(ValueError, match="side"):
        pr.monotonicity(np.eye(4), side="left")


# ---------------------------------------------------------------- Chen et al.'s scores


def chen_symmetry_with_sklearn(M: np.ndarray) -> float:
    """Independent check: per row, pairs (i − t, i + t), scaled with scikit-learn's MinMaxScaler,
    pooled over every (row, t)."""
    L = len(M)
    scaled = []
    for i in range(L):
        m = min(i, L - 1 - i)
        if m == 0:
            continue
        d = np.array([abs(M[i, i - t] - M[i, i + t]) for t in range(1, m + 1)]).reshape(-1, 1)
        scaled.extend(MinMaxScaler().fit_transform(d).ravel())
    return 1 - sum(scaled) / len(scaled)


def previous_token(L: int) -> np.ndarray:
    M = np.zeros((L, L))
    M[0, 0] = 1
    M[np.arange(1, L), np.arange(L - 1)] = 1
    return M


@pytest.mark.parametrize("L", [3, 5, 8, 64])
def test_identity_is_local_and_symmetric(L):
    assert loc.locality(np.eye(L)) == pytest.approx(1.0)
    assert loc.attention_symmetry(np.eye(L)) == pytest.approx(1.0)


def test_previous_token_matrix():
    # locality: row 0 attends to itself (weight 1), every other row to its left neighbour (1/2)
    for L in (4, 5, 6, 64):
        assert loc.locality(previous_token(L)) == pytest.approx((1 + (L - 1) / 2) / L)
    # symmetry: a row with one pair scales to 0; a row with m ≥ 2 pairs has differences (1, 0, …, 0)
    # and contributes exactly one 1. L = 5: rows 1..3 hold m = 1, 2, 1 pairs -> 1 − 1/4.
    assert loc.attention_symmetry(previous_token(4)) == pytest.approx(1.0)  # only one-pair rows
    assert loc.attention_symmetry(previous_token(5)) == pytest.approx(0.75)
    assert loc.attention_symmetry(previous_token(6)) == pytest.approx(1 - 2 / 6)
    L = 64
    pairs = sum(min(i, L - 1 - i) for i in range(1, L - 1))
    rows_with_two = sum(1 for i in range(1, L - 1) if min(i, L - 1 - i) >= 2)
    assert loc.attention_symmetry(previous_token(L)) == pytest.approx(1 - rows_with_two / pairs)


def test_chen_scores_on_random_attention_match_a_direct_computation():
    rng = np.random.default_rng(0)
    for L in (3, 7, 30):
        M = rng.random((L, L))
        M /= M.sum(axis=1, keepdims=True)
        direct = sum(M[i, j] * 2.0 ** -abs(i - j) for i in range(L) for j in range(L)) / L
        assert loc.locality(M) == pytest.approx(direct, rel=1e-12)
        assert loc.attention_symmetry(M) == pytest.approx(chen_symmetry_with_sklearn(M), abs=1e-12)
    uniform = np.full((9, 9), 1 / 9)
    assert loc.attention_symmetry(uniform) == 1.0
    with pytest.raises(ValueError, match="at least 3"):
        loc.attention_symmetry(np.eye(2))


def test_attention_scores_per_head_and_causal():
    heads = np.stack([np.eye(6), previous_token(6)])
    scores = loc.attention_scores(heads, causal=True)
    assert set(scores) == set(loc.ATTENTION_SCORES)
    np.testing.assert_allclose(scores["locality"], [1.0, (1 + 5 / 2) / 6])
    np.testing.assert_allclose(scores["attention_symmetry"], [1.0, 1 - 2 / 6])
    assert scores["symmetry"].tolist() == [1.0, 0.0]
    single = loc.attention_scores(np.eye(6))
    assert float(single["locality"]) == 1.0


# ---------------------------------------------------------------- identical-word attention


def own_identical_attention(model, tok, words, length, layer=0, text=lambda w, n: " ".join([w] * n)):
    """The model's own output_attentions on each identical-word input, averaged over words."""
    total = 0
    for word in words:
        enc = tok(text(word, length), return_tensors="pt")
        body = enc["input_ids"][0][~tok(text(word, length), return_special_tokens_mask=True,
                                        return_tensors="pt")["special_tokens_mask"][0].bool()]
        assert len(body) == length and len(set(body.tolist())) == 1
        with torch.no_grad():
            out = model(**enc, output_attentions=True)
        total = total + out.attentions[layer][0].double().numpy()
    return total / len(words)


def test_identical_word_attention_equals_the_models_own(bundled_lm, bundled_reference):
    model, tok = bundled_reference
    att = iw.identical_word_attention(bundled_lm, 6, 20)
    assert att.words == ["the", "of", "and", "to", "in", "is"]
    assert att.patterns.shape == (12, 22, 22) and att.layer == 0 and not att.causal
    assert att.tokens == ["[CLS]"] + ["the"] * 20 + ["[SEP]"]
    assert att.special.tolist() == [True] + [False] * 20 + [True] and att.length == 20
    np.testing.assert_allclose(att.patterns, own_identical_attention(model, tok, att.words, 20), atol=1e-6)
    words_only = att.words_only()
    assert words_only.shape == (12, 20, 20)
    np.testing.assert_allclose(words_only.sum(axis=-1), 1, atol=1e-5)
    sub = att.patterns[:, 1:21, 1:21]
    np.testing.assert_allclose(words_only, sub / sub.sum(axis=-1, keepdims=True), atol=1e-6)
    # a later layer, and words given by name
    att2 = iw.identical_word_attention(bundled_lm, ["cat", "dog"], 8, layer=2)
    np.testing.assert_allclose(att2.patterns, own_identical_attention(model, tok, ["cat", "dog"], 8, layer=2),
                               atol=1e-5)  # batched vs one at a time: float32 rounding grows with depth


def test_identical_word_attention_of_a_causal_model(tiny_lm, reference):
    model, tok = reference("bloom")
    att = iw.identical_word_attention(tiny_lm("bloom"), 3, 10)
    assert att.causal
    np.testing.assert_allclose(att.patterns, own_identical_attention(model, tok, att.words, 10), atol=1e-6)
    assert np.all(np.triu(att.words_only(), 1) == 0)


def test_identical_word_attention_rejects_what_does_not_fit(bundled_lm):
    with pytest.raises(ValueError, match="at least 3"):
        iw.identical_word_attention(bundled_lm, 2, 2)
    with pytest.raises(ValueError, match="512 positions"):
        iw.identical_word_attention(bundled_lm, 1, 511)
    with pytest.raises(ValueError, match="No word"):
        iw.identical_word_attention(bundled_lm, ["xqzv-not-a-word"], 8)
    assert iw.max_identical_length(bundled_lm) == 510
    with pytest.raises(ValueError, match="layer"):
        iw.identical_word_attention(bundled_lm, 1, 8, layer=6)


def test_position_only_attention_rows_sum_to_one():
    M = loc.position_only_attention(posviz.sinusoidal(32, 64))
    np.testing.assert_allclose(M.sum(axis=1), 1)
    P = posviz.sinusoidal(32, 64).astype(np.float64)
    scores = P @ P.T / 8
    np.testing.assert_allclose(M[3], np.exp(scores[3]) / np.exp(scores[3]).sum())


# ---------------------------------------------------------------- the page


def metric_values(at) -> dict[str, float]:
    return {m.label: float(m.value) for m in at.metric}


def check_attention_figures(at, lm, grid: dict, profile: dict, width: int) -> np.ndarray:
    """The heads' small multiples and the profiles hold the library's identical-word attention
    (defaults: 16 words, 64 tokens, special tokens dropped); the table its scores."""
    att = iw.identical_word_attention(lm, 16, 64)
    expected = att.words_only()
    heads = expected.shape[0]
    tiles = [arr(t["z"]) for t in grid["data"]]
    assert len(tiles) == heads
    np.testing.assert_allclose(np.stack(tiles), expected, atol=1e-6)
    scores = loc.attention_scores(np.concatenate([expected, expected.mean(0, keepdims=True)]), att.causal)
    titles = [a["text"] for a in grid["layout"]["annotations"]]
    assert titles == [f"head {h}<br>loc {scores['locality'][h]:.2f}<br>sym {scores['attention_symmetry'][h]:.2f}"
                      for h in range(heads)]
    reference = loc.position_only_attention(posviz.sinusoidal(64, width))
    names = [t["name"] for t in profile["data"]]
    assert names == [f"head {h}" for h in range(heads)] + ["sinusoid"]
    offsets, mean, _, _ = pr.proximity_by_offset(expected[0], signed=True)
    np.testing.assert_allclose(arr(profile["data"][0]["x"]), offsets)
    np.testing.assert_allclose(arr(profile["data"][0]["y"]), mean, atol=1e-6)
    np.testing.assert_allclose(arr(profile["data"][-1]["y"]), pr.proximity_by_offset(reference, signed=True)[1],
                               atol=1e-6)
    table = at.dataframe[0].value
    assert list(table["attention"]) == [f"head {h}" for h in range(heads)] + [  # short enough for 1024 px
        "mean of the heads' attention", f"sinusoid, width {width}"]
    for name, label in loc.ATTENTION_SCORES.items():
        np.testing.assert_allclose(table[label].to_numpy()[:heads + 1], scores[name], atol=1e-9)
        assert table[label].to_numpy()[-1] == pytest.approx(float(loc.attention_scores(reference)[name]), abs=1e-9)
    shown = json.loads(at.dataframe[0].proto.columns)  # short headers (the table fits at 1024 px), full names as help
    assert {shown[label]["label"]: shown[label]["help"] for label in loc.ATTENTION_SCORES.values()} == {
        "locality": "locality (Chen)", "symmetry": "symmetry (Chen)", "ρ": "monotonicity ρ",
        "η²": "translation invariance η²", "S": "symmetry S"}
    return expected


def test_page_on_the_bundled_model(bundled_lm):
    at = open_page("properties")
    assert_clean(at, "properties")
    monotone, band, mirror, grid, profile = figures(at)

    G = posviz.similarity(bundled_lm.encodings[0].matrix)  # 512 positions, dot product
    mine, ref = pr.position_properties(G), pr.position_properties(sinusoid_gram(512, 384))
    model, sinusoid = "all-MiniLM-L6-v2 (bundled)", "sinusoid, width 384"
    values = metric_values(at)
    for symbol, attr in (("ρ", "monotonicity"), ("η²", "translation_invariance"), ("S", "symmetry")):
        assert values[f"{symbol}, {model}"] == pytest.approx(getattr(mine, attr), abs=1e-4)
        assert values[f"{symbol}, {sinusoid}"] == pytest.approx(getattr(ref, attr), abs=1e-4)
    assert values[f"η², {sinusoid}"] == 1.0 and values[f"S, {model}"] == 1.0

    lines = {t["name"]: t for t in monotone["data"]}
    np.testing.assert_allclose(arr(lines[model]["y"]), mine.mean / mine.diagonal_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(lines[sinusoid]["y"]), ref.mean / ref.diagonal_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(lines[model]["x"]), np.arange(1, 512))

    traces = {t["name"]: t for t in band["data"]}
    np.testing.assert_allclose(arr(traces[f"{model}: mean"]["y"]), mine.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(traces[f"{model}: min–max over start positions"]["y"]), mine.high, rtol=1e-5)
    np.testing.assert_allclose(arr(traces[f"{model}: min over start positions"]["y"]), mine.low, rtol=1e-5)
    spread = arr(traces[f"{sinusoid}: min–max over start positions"]["y"]) - \
        arr(traces[f"{sinusoid}: min over start positions"]["y"])
    assert np.max(spread) < 1e-3  # the sinusoid has no band

    mirrored = {t["name"]: t for t in mirror["data"]}
    np.testing.assert_allclose(arr(mirrored[model]["y"]), mine.signed_mean / mine.diagonal_mean, rtol=1e-5, atol=1e-6)
    rises = (f"{model}: k = {mine.first_rise} → {mine.first_rise + 1}, "
             f"{sinusoid}: k = {ref.first_rise} → {ref.first_rise + 1}")
    assert any(rises in c.value for c in at.main.caption), [c.value for c in at.main.caption]

    check_attention_figures(at, bundled_lm, grid, profile, 384)


def test_page_cosine_and_fewer_positions(bundled_lm):
    at = open_page("properties", metric="cosine", count=128)
    assert_clean(at, "properties")
    G = posviz.similarity(bundled_lm.encodings[0].matrix[:128], "cosine")
    values = metric_values(at)
    assert values["ρ, all-MiniLM-L6-v2 (bundled)"] == pytest.approx(pr.monotonicity(G), abs=1e-4)
    assert values["η², all-MiniLM-L6-v2 (bundled)"] == pytest.approx(pr.translation_invariance(G), abs=1e-4)
    assert arr(figures(at)[0]["data"][0]["x"]).tolist() == list(range(1, 128))


def test_page_on_a_tiny_bloom_shows_attention_scores_only(tiny_path, tiny_lm):
    at = open_page("properties", query_params={"model": str(tiny_path("bloom"))})
    assert_clean(at, "properties")
    assert any("no P·Pᵀ" in i.value for i in at.info)
    assert not at.metric
    grid, profile = figures(at)
    lm = tiny_lm("bloom")
    expected = check_attention_figures(at, lm, grid, profile, 32)
    assert np.all(np.triu(expected, 1) == 0)
    assert any("Causal model" in c.value for c in at.main.caption)
