"""The Model and Position similarity pages on the speech encoders and the schemes of their own, with AppTest.

Tiny random checkpoints of ``tests/support/tiny_speech.py`` (conftest's ``tiny_path``), opened through
the ``model`` query parameter: wav2vec2 and WavLM positions only (they have no tokenizer), XLNet,
Reformer, CTRL and Mamba with their weights. Each figure must hold the scheme's values, computed here
with posviz from the same checkpoint (loaded positions only where the app does).
"""

from __future__ import annotations

import numpy as np
import pytest

import posviz
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import arr, assert_clean, figures, open_page, title_text


@pytest.fixture(scope="module")
def path_of(tiny_path):
    return lambda family: str(tiny_path(family))


def _open(path: str, page: str, positions_only: bool = False, **state):
    """``page`` with the model at ``path`` in the URL (positions only on request), widgets preset to ``state``."""
    at = open_page(page, query_params={"model": path, **({"positions_only": "true"} if positions_only else {})},
                   **state)
    assert_clean(at, page)
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
    return at


def _explained(at, encoding) -> None:
    """The formula (st.latex) and the description (caption) of the component are on the page."""
    if encoding.formula:
        assert any(encoding.formula in e.value for e in at.get("latex"))
    assert encoding.describe() in [c.value for c in at.main.caption]


# ---------------------------------------------------------------- convolutional positions


def test_wav2vec2_model_page_shows_the_tap_norms(path_of):
    lm = posviz.load_model(path_of("wav2vec2"), positions_only=True)
    (enc,) = lm.encodings
    at = _open(path_of("wav2vec2"), "model", positions_only=True)
    assert f"**Positional scheme:** {enc.label}" in [m.value for m in at.markdown]
    (fig,) = figures(at)
    (line,) = fig["data"]
    assert title_text(fig).startswith("Weight of each tap of the positional convolution")
    np.testing.assert_array_equal(arr(line["x"]), np.arange(-8, 8))
    np.testing.assert_allclose(arr(line["y"]), enc.tap_norms(), rtol=1e-6)
    np.testing.assert_allclose(arr(line["y"]), np.linalg.norm(lm.model.encoder.pos_conv_embed.conv.weight.detach()
                                                              .numpy(), axis=(0, 1)), rtol=1e-5)
    _explained(at, enc)


def test_wav2vec2_similarity_page_says_there_is_no_matrix(path_of):
    enc = posviz.load_model(path_of("wav2vec2"), positions_only=True).encodings[0]
    at = _open(path_of("wav2vec2"), "similarity", positions_only=True)
    assert not at.get("plotly_chart")
    (info,) = at.info
    assert enc.describe() in info.value and "no vector per position" in info.value


def test_wavlm_model_page_shows_convolution_and_bias(path_of):
    conv, rel = posviz.load_model(path_of("wavlm"), positions_only=True).encodings
    at = _open(path_of("wavlm"), "model", positions_only=True)
    assert [s.value for s in at.subheader] == ["Convolution", "Relative bias"]
    taps, bias = figures(at)
    np.testing.assert_allclose(arr(taps["data"][0]["y"]), conv.tap_norms(), rtol=1e-6)
    offsets = np.arange(-160, 161)
    assert bias["layout"]["title"]["text"] == "Relative bias by offset (relative bias)"
    expected = rel.by_offset(offsets)
    for h, trace in enumerate(bias["data"]):
        np.testing.assert_array_equal(arr(trace["x"]), offsets)
        np.testing.assert_allclose(arr(trace["y"]), expected[h], rtol=1e-6)
    _explained(at, conv)
    _explained(at, rel)
    assert "gate is not shown" in rel.describe()


def test_wavlm_similarity_page_shows_the_bias_of_each_head(path_of):
    conv, rel = posviz.load_model(path_of("wavlm"), positions_only=True).encodings
    at = _open(path_of("wavlm"), "similarity", positions_only=True, component="relative bias", range=(0, 63))
    assert at.radio(key="component").options == ["convolution", "relative bias"]
    (fig,) = figures(at)
    bias = rel.bias(np.arange(64))
    assert [t["type"] for t in fig["data"]] == ["heatmap"] * 4
    for h, trace in enumerate(fig["data"]):
        np.testing.assert_allclose(arr(trace["z"]), bias[h], rtol=1e-6, atol=1e-6)
    _explained(at, rel)

    at.radio(key="component").set_value("convolution").run()
    assert_clean(at, "similarity")
    assert not at.get("plotly_chart") and conv.describe() in at.info[0].value


# ---------------------------------------------------------------- XLNet, Reformer, CTRL


def test_xlnet_pages_show_the_relative_sinusoid(path_of, tiny_lm):
    (enc,) = tiny_lm("xlnet").encodings
    reach = -enc.first_label
    at = _open(path_of("xlnet"), "model")
    (fig,) = figures(at)
    np.testing.assert_array_equal(arr(fig["data"][0]["x"]), np.arange(-reach, reach + 1))
    np.testing.assert_allclose(arr(fig["data"][0]["y"]), next(iter(enc.signature().series.values())), rtol=1e-6)
    _explained(at, enc)

    at = _open(path_of("xlnet"), "similarity", range=(0, 99))
    heat = figures(at)[0]
    assert title_text(heat).startswith(f"P·Pᵀ, relative positions {-reach}–{-reach + 99}<br>")
    (h,) = heat["data"]
    rows = enc.vectors(np.arange(100)).double().numpy()
    np.testing.assert_allclose(arr(h["z"]), rows @ rows.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(arr(h["x"]), np.arange(-reach, -reach + 100))


def test_reformer_pages_show_the_axial_table(path_of, tiny_lm):
    (enc,) = tiny_lm("reformer").encodings
    rows = enc.vectors(np.arange(64)).double().numpy()
    at = _open(path_of("reformer"), "model")
    (fig,) = figures(at)
    np.testing.assert_allclose(arr(fig["data"][0]["y"]), np.linalg.norm(rows, axis=1), rtol=1e-5)
    _explained(at, enc)

    at = _open(path_of("reformer"), "similarity", metric="cosine")
    heat, profile, vectors = figures(at)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    np.testing.assert_allclose(arr(heat["data"][0]["z"]), unit @ unit.T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(arr(vectors["data"][0]["z"]), rows, rtol=1e-5, atol=1e-6)


def test_ctrl_pages_show_its_sinusoid(path_of, tiny_lm):
    (enc,) = tiny_lm("ctrl").encodings
    table = posviz.sinusoidal(64, 32, "halves").astype(np.float64)
    at = _open(path_of("ctrl"), "model")
    (fig,) = figures(at)
    np.testing.assert_allclose(arr(fig["data"][0]["y"]), np.linalg.norm(table, axis=1), rtol=1e-5)  # √(d/2) each
    _explained(at, enc)

    at = _open(path_of("ctrl"), "similarity")
    heat = figures(at)[0]
    np.testing.assert_allclose(arr(heat["data"][0]["z"]), table @ table.T, atol=1e-4)


# ---------------------------------------------------------------- Mamba


def test_mamba_pages_say_where_order_comes_from(path_of, tiny_lm):
    (enc,) = tiny_lm("mamba").encodings
    at = _open(path_of("mamba"), "model")
    assert not at.get("plotly_chart")
    assert enc.describe() in [c.value for c in at.main.caption]
    assert "selective state-space scan" in enc.describe()

    at = _open(path_of("mamba"), "similarity")
    assert not at.get("plotly_chart") and enc.describe() in at.info[0].value
