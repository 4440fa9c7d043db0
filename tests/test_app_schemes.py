"""The Streamlit app on every kind of positional scheme, driven headless with AppTest.

Tiny random checkpoints from conftest (``tiny_path``): Llama (rotary, rotate_half), GPT-J
(rotary, interleaved), BLOOM (ALiBi), T5 (bucketed relative bias, encoder-decoder) and Marian
(fixed sinusoid, encoder-decoder), opened through the ``model`` query parameter (one test types
the folder into the sidebar's model box instead). Every page must run without an exception or an
error box, and the figures must hold the scheme's true values, computed here with posviz.
A long-context Llama (131 072 positions) checks that wide ranges are shown by a stride.
"""

from __future__ import annotations

from pathlib import Path

import inspect
import re

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer, LlamaConfig

import posviz
import posviz.views.figures
from posviz.analysis.similarity import block_mean
from posviz.app.widgets import DEFAULT_TEXT, DEFAULT_TEXT_PAIR
from posviz.hooks import resolve
from posviz.views.limits import MAX_POSITIONS
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import TITLES, title_text, arr, assert_clean, figures, open_page
from tests.support.tiny_models import VOCAB, bundled_path

FAMILIES = {"llama": "rotary", "gptj": "rotary", "bloom": "alibi", "t5": "relative_bias", "marian": "sinusoidal"}
ROTARY = ["llama", "gptj"]
LONG = 131_072


@pytest.fixture(scope="module")
def path_of(tiny_path):
    return lambda family: str(tiny_path(family))


@pytest.fixture(scope="module")
def encodings_of(tiny_lm):
    """family -> the encodings of the same checkpoint, loaded here (``tiny_lm``, not by the app)."""
    return lambda family: tiny_lm(family).encodings


def open_scheme(path: str, page: str, **state):
    """``page`` with the model at ``path`` given in the URL; checked clean, the sidebar showing it."""
    if page == "projection":
        state.setdefault("method", "PCA")  # no UMAP here: slow when cold
    at = open_page(page, query_params={"model": path}, **state)
    assert_clean(at, page)
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
    assert any(path in c.value for c in at.sidebar.caption), [c.value for c in at.sidebar.caption]
    return at


def assert_explained(at, encoding) -> None:
    """The scheme's formula (st.latex) and its description (caption) are on the page."""
    latex = [e.value for e in at.get("latex")]
    assert encoding.formula and any(encoding.formula in v for v in latex), latex
    assert encoding.describe() in [c.value for c in at.main.caption]


def traces_by_name(fig: dict) -> dict[str, dict]:
    return {t["name"]: t for t in fig["data"]}


def assert_same(actual: np.ndarray, expected: np.ndarray, **tol) -> None:
    """Equal within tolerance, NaN (masked keys, JSON null) in the same cells."""
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    np.testing.assert_allclose(np.nan_to_num(actual), np.nan_to_num(expected), **tol)


# ---------------------------------------------------------------- every page, every scheme


@pytest.mark.parametrize("family, page", [
    (f, p) for f in FAMILIES for p in TITLES])
def test_every_page_runs_clean(path_of, tiny_lm, family, page):
    at = open_scheme(path_of(family), page)
    lm = tiny_lm(family)
    assert lm.scheme == FAMILIES[family]
    if page == "gallery":  # its views are on the bundled model, whatever the sidebar holds
        assert at.get("page_link")
    elif page in ("projection", "compare") and FAMILIES[family] in ("alibi", "relative_bias"):
        (info,) = at.info
        assert "bias" in info.value
        assert not at.get("plotly_chart")
    else:
        assert at.get("plotly_chart"), "no chart"
    if page == "model":
        assert f"**Positional scheme:** {lm.scheme_label}" in [m.value for m in at.markdown]


def test_model_typed_into_sidebar(path_of, encodings_of):
    at = open_page("model")
    at.sidebar.selectbox(key="model").set_value(path_of("llama")).run()
    assert_clean(at, "model")
    assert at.sidebar.selectbox(key="model").value == path_of("llama")
    assert any(posviz.RotaryEncoding.label in c.value for c in at.sidebar.caption)
    (fig,) = figures(at)
    np.testing.assert_allclose(arr(fig["data"][0]["y"]), encodings_of("llama")[0].frequencies, rtol=1e-6)

    at.switch_page("pages/similarity.py").run()
    assert_clean(at, "similarity")
    assert title_text(figures(at)[0]).startswith("K(m, n), positions 0–127")


# ---------------------------------------------------------------- rotary (Llama, GPT-J)


@pytest.mark.parametrize("family", ROTARY)
def test_rotary_similarity_kernel_and_bands(path_of, encodings_of, family):
    (enc,) = encodings_of(family)
    assert isinstance(enc, posviz.RotaryEncoding)
    n = enc.num_positions
    at = open_scheme(path_of(family), "similarity")
    assert at.radio(key="metric").value == "dot"
    assert at.slider(key="range").value == (0, n - 1)
    heat, profile, kernel = figures(at)

    g = posviz.similarity(enc.vectors(np.arange(n)), "dot")
    assert title_text(heat).startswith(f"K(m, n), positions 0–{n - 1}<br>")
    (h,) = heat["data"]
    assert h["type"] == "heatmap"
    np.testing.assert_allclose(arr(h["z"]), g, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(arr(h["x"]), np.arange(n))
    # content-free kernel: K(m, m) = number of frequencies (attention_scaling 1 here)
    np.testing.assert_allclose(np.diag(g), enc.rotary_dim // 2, rtol=1e-5)

    q = at.number_input(key="q").value
    np.testing.assert_allclose(arr(profile["data"][0]["y"]), g[q] / g[q].max(), rtol=1e-5, atol=1e-6)

    assert kernel["layout"]["title"]["text"] == "K(m, m + k) against the offset k"
    lines = traces_by_name(kernel)
    assert list(lines) == ["all frequencies", "band 1 (fastest)", "band 2", "band 3", "band 4 (slowest)"]
    np.testing.assert_array_equal(arr(lines["all frequencies"]["x"]), np.arange(n))
    k0 = arr(lines["all frequencies"]["y"])
    np.testing.assert_allclose(k0, g[0], rtol=1e-5, atol=1e-5)  # K(0, k)
    bands = sum(arr(t["y"]).astype(np.float64) for name, t in lines.items() if name != "all frequencies")
    np.testing.assert_allclose(bands, k0, atol=1e-4)  # the bands split the sum over frequencies
    assert_explained(at, enc)
    assert "K(m, n)" in enc.formula


@pytest.mark.parametrize("family", ROTARY)
def test_rotary_model_page_frequencies(path_of, encodings_of, family):
    (enc,) = encodings_of(family)
    at = open_scheme(path_of(family), "model")
    (fig,) = figures(at)
    (line,) = fig["data"]
    assert line["name"] == "θ_i"
    theta = arr(line["y"])
    assert theta.shape == (enc.rotary_dim // 2,)
    np.testing.assert_allclose(theta, enc.frequencies, rtol=1e-6)
    assert fig["layout"]["yaxis"]["type"] == "log"
    assert f"({enc.rotary_dim} rotated dims)" in title_text(fig)
    assert_explained(at, enc)


@pytest.mark.parametrize("family", ROTARY)
def test_rotary_projection_pca(path_of, encodings_of, family):
    (enc,) = encodings_of(family)
    at = open_scheme(path_of(family), "projection")
    (fig,) = figures(at)
    assert "rotation features" in title_text(fig)
    points = np.concatenate([np.stack([arr(t["x"]), arr(t["y"])], axis=1) for t in fig["data"]])
    assert points.shape == (enc.num_positions, 2)
    assert np.isfinite(points).all() and points.std(axis=0).min() > 0
    # PCA keeps no more variance than the features have
    features = enc.vectors(np.arange(enc.num_positions)).numpy().astype(np.float64)
    assert points.var(axis=0).sum() <= features.var(axis=0).sum() * (1 + 1e-4)


@pytest.mark.parametrize("family", ROTARY)
def test_rotary_input_page_no_position_vector(path_of, tiny_lm, family):
    lm = tiny_lm(family)
    at = open_scheme(path_of(family), "input")
    assert any("no position vector is added" in i.value for i in at.info), [i.value for i in at.info]
    norms, vectors = figures(at)  # no "same word, other position": every copy has the same input
    assert "position" not in traces_by_name(norms)
    assert vectors["layout"]["title"]["text"].startswith("token vectors")
    ids = lm.tokenizer(DEFAULT_TEXT, DEFAULT_TEXT_PAIR)["input_ids"]
    table = resolve(lm.model, lm.family.token[0]).weight.detach().float().numpy()
    np.testing.assert_allclose(arr(vectors["data"][0]["z"]), table[ids], rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- ALiBi (BLOOM)


def test_alibi_heads_small_multiples_and_one_head(path_of, encodings_of):
    (enc,) = encodings_of("bloom")
    assert isinstance(enc, posviz.AlibiBias)
    n = enc.num_positions
    at = open_scheme(path_of("bloom"), "similarity")
    assert at.selectbox(key="bias_head").value == "all"
    # default range: every position, shown as block means
    (fig,) = figures(at)
    assert [t["type"] for t in fig["data"]] == ["heatmap"] * enc.heads
    expected, block = block_mean(enc.bias(np.arange(n)), 96)
    assert block > 1 and f"means of {block}×{block} blocks" in title_text(fig)
    for h, trace in enumerate(fig["data"]):
        assert_same(arr(trace["z"]), expected[h], rtol=1e-5, atol=1e-6)

    at.slider(key="range").set_value((0, 95)).run()
    assert_clean(at, "similarity")
    (fig,) = figures(at)
    assert "blocks" not in title_text(fig)
    bias = enc.bias(np.arange(96))
    for h, trace in enumerate(fig["data"]):
        z = arr(trace["z"])
        assert_same(z, bias[h], rtol=1e-6, atol=1e-6)
        assert np.isnan(z[0, 1]) and z[5, 2] == pytest.approx(-enc.slopes[h] * 3, rel=1e-5)

    at.selectbox(key="bias_head").set_value(3).run()
    assert_clean(at, "similarity")
    heat, profile = figures(at)
    (h,) = heat["data"]
    assert_same(arr(h["z"]), bias[3], rtol=1e-6, atol=1e-6)
    everything = enc.bias(np.arange(n))[3]
    q = at.number_input(key="q").value
    assert_same(arr(profile["data"][0]["y"]), everything[q], rtol=1e-6, atol=1e-6)
    assert_explained(at, enc)


def test_alibi_model_page_slopes(path_of, encodings_of):
    (enc,) = encodings_of("bloom")
    at = open_scheme(path_of("bloom"), "model")
    (fig,) = figures(at)
    slopes = arr(fig["data"][0]["y"])
    assert slopes.shape == (enc.heads,)
    np.testing.assert_allclose(slopes, enc.slopes, rtol=1e-6)
    np.testing.assert_allclose(enc.slopes, 2.0 ** (-8 * np.arange(1, 5) / 4), rtol=1e-6)  # Press et al., 4 heads
    assert_explained(at, enc)


def test_alibi_projection_says_no_vectors(path_of, encodings_of):
    at = open_scheme(path_of("bloom"), "projection")
    assert any("no vector per position" in i.value for i in at.info)
    assert_explained(at, encodings_of("bloom")[0])


# ---------------------------------------------------------------- relative bias (T5)


def test_t5_component_radio_switches_encoder_decoder(path_of, encodings_of):
    encoder, decoder = encodings_of("t5")
    assert (encoder.component, decoder.component) == ("encoder", "decoder")
    at = open_scheme(path_of("t5"), "similarity", range=(0, 95))
    radio = at.radio(key="component")
    assert radio.value == "encoder" and radio.options == ["encoder", "decoder"]
    positions = np.arange(96)
    (fig,) = figures(at)
    for h, trace in enumerate(fig["data"]):
        z = arr(trace["z"])
        assert not np.isnan(z).any()
        assert_same(z, encoder.bias(positions)[h], rtol=1e-6, atol=1e-6)
    assert_explained(at, encoder)

    radio.set_value("decoder").run()
    assert_clean(at, "similarity")
    (fig,) = figures(at)
    upper = np.triu(np.ones((96, 96), dtype=bool), k=1)
    for h, trace in enumerate(fig["data"]):
        z = arr(trace["z"])
        assert np.isnan(z[upper]).all() and not np.isnan(z[~upper]).any()  # causal: keys after the query masked
        assert_same(z, decoder.bias(positions)[h], rtol=1e-6, atol=1e-6)
    assert_explained(at, decoder)

    at.selectbox(key="bias_head").set_value(2).run()
    assert_clean(at, "similarity")
    heat = figures(at)[0]
    assert_same(arr(heat["data"][0]["z"]), decoder.bias(positions)[2], rtol=1e-6, atol=1e-6)


def test_t5_model_page_bias_by_offset(path_of, encodings_of):
    encodings = encodings_of("t5")
    at = open_scheme(path_of("t5"), "model")
    figs = figures(at)
    assert [f["layout"]["title"]["text"] for f in figs] == ["Relative bias by offset (encoder)",
                                                             "Relative bias by offset (decoder)"]
    assert all(f["layout"]["title"]["subtitle"]["text"] == Path(path_of("t5")).name for f in figs)  # the model
    offsets = np.arange(-160, 161)
    for fig, enc in zip(figs, encodings):
        expected = enc.by_offset(offsets)
        assert [t["name"] for t in fig["data"]] == [f"head {h}" for h in range(enc.heads)]
        for h, trace in enumerate(fig["data"]):
            np.testing.assert_array_equal(arr(trace["x"]), offsets)
            np.testing.assert_allclose(arr(trace["y"]), expected[h], rtol=1e-6)
    assert [s.value for s in at.subheader] == ["Encoder", "Decoder"]


# ---------------------------------------------------------------- sinusoidal (Marian)


def test_marian_sinusoid_similarity(path_of, encodings_of, tiny_lm):
    (enc,) = encodings_of("marian")
    assert enc.sinusoid == "halves"
    n, d = enc.num_positions, enc.width
    at = open_scheme(path_of("marian"), "similarity")
    assert any(posviz.SinusoidalEmbeddings.label in c.value for c in at.sidebar.caption)
    heat = figures(at)[0]
    assert title_text(heat).startswith(f"P·Pᵀ, positions 0–{n - 1}")
    expected = posviz.similarity(posviz.sinusoidal(n, d, "halves"), "dot")
    np.testing.assert_allclose(arr(heat["data"][0]["z"]), expected, atol=1e-4, rtol=1e-4)
    assert_explained(at, enc)
    assert tiny_lm("marian").scheme_label == posviz.SinusoidalEmbeddings.label == "fixed sinusoidal position embeddings"


# ---------------------------------------------------------------- long context by stride


@pytest.fixture(scope="module")
def long_llama(tmp_path_factory):
    """A tiny Llama with 131 072 positions (hidden 64, 2 layers) and the bundled tokenizer."""
    folder = tmp_path_factory.mktemp("tiny-llama-long")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=LONG,
                         pad_token_id=0, bos_token_id=101, eos_token_id=102)
    AutoModel.from_config(config).eval().save_pretrained(folder)
    AutoTokenizer.from_pretrained(bundled_path()).save_pretrained(folder)
    return str(folder)


def test_long_context_rotary_by_stride(long_llama):
    """131 072 positions: at most MAX_POSITIONS positions computed (a stride, said in the title), and the
    heatmap sent as block means (said too) of at most ``position_heatmap``'s ``max_cells`` per side."""
    cells = inspect.signature(posviz.views.figures.position_heatmap).parameters["max_cells"].default
    at = open_scheme(long_llama, "similarity")
    assert at.slider(key="range").value == (0, MAX_POSITIONS - 1)
    assert arr(figures(at)[0]["data"][0]["z"]).shape == (min(cells, MAX_POSITIONS),) * 2

    at.slider(key="range").set_value((0, LONG - 1)).run()
    assert_clean(at, "similarity")
    heat, profile, kernel = figures(at)
    step = LONG // MAX_POSITIONS
    z = arr(heat["data"][0]["z"])
    assert z.shape[0] <= MAX_POSITIONS and z.shape[0] == z.shape[1]
    assert np.isfinite(z).all()
    assert re.search(rf"positions 0–{LONG - 1}, every {step}th position \(faster oscillations alias\)",
                     title_text(heat)), title_text(heat)
    enc = posviz.load_model(long_llama).encodings[0]
    assert enc.num_positions == LONG
    expected, block = block_mean(posviz.similarity(enc.vectors(np.arange(0, LONG, step)), "dot"), cells)
    if block > 1:
        assert f"means of {block}×{block} blocks" in title_text(heat), title_text(heat)
    np.testing.assert_allclose(z, expected, rtol=1e-5, atol=1e-4)
    x = arr(heat["data"][0]["x"])
    assert x[0] == 0 and np.all(np.diff(x) == step * block)

    assert arr(profile["data"][0]["y"]).shape == (MAX_POSITIONS,)
    assert f"(every {step}th)" in title_text(kernel)
    assert all(arr(t["y"]).shape == (MAX_POSITIONS,) for t in kernel["data"])
