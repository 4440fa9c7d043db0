"""The app on models that mix positional schemes layer by layer (tiny ModernBERT, Gemma 3, SmolLM3 …):
the Model page's layer strip, the component picker, and every page running clean."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import TITLES, arr, assert_clean, figures, open_page, title_text


def _open(tiny_path, family: str, page: str, **state):
    if page == "projection":
        state.setdefault("method", "PCA")  # no UMAP here: slow when cold
    at = open_page(page, query_params={"model": str(tiny_path(family))}, **state)
    assert_clean(at, page)
    return at


def _strip(at) -> dict:
    found = [f for f in figures(at) if title_text(f).startswith("Positional scheme of each layer")]
    assert len(found) == 1, [title_text(f) for f in figures(at)]
    return found[0]


@pytest.mark.parametrize("family", ["modernbert", "gemma3_text", "gemma3", "smollm3", "cohere2"])
def test_model_page_shows_the_layer_strip(family, tiny_path, tiny_lm):
    lm = tiny_lm(family)
    at = _open(tiny_path, family, "model")
    fig = _strip(at)
    (trace,) = fig["data"]
    codes = arr(trace["z"]).reshape(len(trace["y"]), -1)  # row r holds r where it acts, NaN elsewhere
    for encoding in lm.encodings:
        r = trace["y"].index(encoding.component)
        assert tuple(np.flatnonzero(codes[r] == r)) == encoding.layers  # coloured on exactly its layers
        assert np.isnan(np.delete(codes[r], encoding.layers)).all()
    hover = trace["text"][0]
    assert len(hover) == lm.num_layers and all(h.startswith(f"layer {i}: ") for i, h in enumerate(hover))
    assert [s.value for s in at.subheader][:1] == ["Layer by layer"]


def test_gemma_strip_gives_bases_and_windows(tiny_path):
    fig = _strip(_open(tiny_path, "gemma3_text", "model"))
    (trace,) = fig["data"]
    assert trace["text"][0][2] == "layer 2: global rotary (base 1,000,000, linear scaling) · full attention"
    assert trace["text"][0][0] == "layer 0: local rotary (base 10,000) · sliding window of 8 tokens"
    r = trace["y"].index("sliding window of 8 tokens")
    codes = arr(trace["z"]).reshape(len(trace["y"]), -1)
    assert np.flatnonzero(codes[r] == r).tolist() == [0, 1]


def test_no_strip_where_every_layer_is_alike(tiny_path):
    at = _open(tiny_path, "llama", "model")
    assert not [f for f in figures(at) if title_text(f).startswith("Positional scheme of each layer")]


def test_similarity_picks_the_global_or_local_kernel(tiny_path, tiny_lm):
    lm = tiny_lm("modernbert")
    for component in ("global rotary", "local rotary"):
        at = _open(tiny_path, "modernbert", "similarity", component=component)
        v = lm.encoding(component).vectors(np.arange(128)).double().cpu().numpy()  # the default range
        heat = next(f for f in figures(at) if f["data"][0]["type"] == "heatmap")
        np.testing.assert_allclose(arr(heat["data"][0]["z"]), v @ v.T, rtol=1e-5, atol=1e-5)


def test_nope_component_says_what_it_is(tiny_path, tiny_lm):
    at = _open(tiny_path, "smollm3", "similarity", component="NoPE")
    (info,) = at.info
    assert "No positional encoding (NoPE) in layer 3" in info.value
    assert not at.get("plotly_chart")


@pytest.mark.parametrize("family, page", [(f, p) for f in ("modernbert", "gemma3_text", "gemma3", "smollm3",
                                                            "llama4_text", "cohere2", "gpt_oss", "qwen2_vl",
                                                            "deepseek_v3")
                                          for p in ("model", "similarity", "projection", "input", "attention")])
def test_pages_run_clean(family, page, tiny_path):
    at = _open(tiny_path, family, page)
    assert at.get("plotly_chart")
    assert [t.value for t in at.title] == [TITLES[page]]


def test_attention_by_offset_names_each_layers_scheme(tiny_path, tiny_lm):
    at = _open(tiny_path, "smollm3", "attention", layer=3)
    grids = {title_text(f).split("<br>")[0]: f for f in figures(at)}
    offsets = next(f for t, f in grids.items() if t.startswith("Attention by offset, every layer and head"))
    labels = offsets["data"][0]["y"]  # rows by name
    assert "L3 · NoPE H0" in labels and "L0 · rotary H0" in labels
    sinks = next(f for t, f in grids.items() if t.startswith("Attention on the first and on the previous token"))
    assert sinks["data"][0]["y"][3] == "layer 3 · NoPE"
    # the head's profile beside what the scheme alone predicts: a NoPE layer predicts nothing positional
    assert tiny_lm("smollm3").layer_encoding(3).component == "NoPE"
    assert tiny_lm("smollm3").layer_encoding(0).component == "rotary"
