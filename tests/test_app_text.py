"""The Model, Position similarity and Input pages on tiny Longformer, GPT-Neo, LayoutLM and CodeGen (AppTest).

Checkpoints from tests/support/tiny_text.py (``tiny_path``), opened through the ``model`` query
parameter. Every page runs without an exception or error box, and the figures hold the family's
values: the table's norms and P·Pᵀ (Longformer's offset-2 rows, GPT-Neo's ``wpe``), LayoutLM's
1-D table and its box tables as components, CodeGen's rotation frequencies and kernel, and each
input part of the default sentences (tests/test_families_text.py checks those against the models).
"""

from __future__ import annotations

import numpy as np
import pytest

import posviz
from posviz.analysis.similarity import block_mean
from posviz.app.widgets import DEFAULT_TEXT, DEFAULT_TEXT_PAIR
from posviz.hooks import resolve
from tests.support.apptest import (
    apptest_like_browser,  # noqa: F401  the autouse AppTest shims
    arr,
    figures,
    title_text,
)
from tests.test_app_schemes import assert_explained, open_scheme, traces_by_name

FAMILIES = ["longformer", "gpt_neo", "layoutlm", "codegen"]
LEARNED = ["longformer", "gpt_neo"]
BOXES = ["box x (x0, x1)", "box y (y0, y1)", "box height", "box width"]


@pytest.fixture(scope="module")
def path_of(tiny_path):
    return lambda family: str(tiny_path(family))


@pytest.mark.parametrize("page", ["model", "similarity", "input"])
@pytest.mark.parametrize("family", FAMILIES)
def test_pages_run_clean(path_of, tiny_lm, family, page):
    at = open_scheme(path_of(family), page)
    assert at.get("plotly_chart"), "no chart"
    if page == "model":
        assert f"**Positional scheme:** {tiny_lm(family).scheme_label}" in [m.value for m in at.markdown]


# ---------------------------------------------------------------- Model


@pytest.mark.parametrize("family", LEARNED + ["layoutlm"])
def test_model_page_norms_of_every_table(path_of, tiny_lm, family):
    lm = tiny_lm(family)
    at = open_scheme(path_of(family), "model")
    figs = figures(at)
    assert len(figs) == len(lm.encodings)
    for fig, enc in zip(figs, lm.encodings):
        (line,) = fig["data"]
        np.testing.assert_allclose(arr(line["y"]), np.linalg.norm(enc.matrix, axis=1), rtol=1e-5)
        assert_explained(at, enc)
    if family == "longformer":
        table = resolve(lm.model, "embeddings.position_embeddings").weight.detach().numpy()
        assert arr(figs[0]["data"][0]["y"]).shape == (table.shape[0] - 2,)  # RoBERTa's two rows skipped
        assert lm.encodings[0].note in [c.value for c in at.main.caption]
    if family == "layoutlm":
        assert [s.value for s in at.subheader] == ["1-D positions", *(b[0].upper() + b[1:] for b in BOXES)]
        assert [title_text(f).split("<br>")[0] for f in figs] == (
            ["Length of each position embedding"] + ["Length of each box embedding"] * 4)
        assert all(arr(f["data"][0]["y"]).shape == (1024,) for f in figs[1:])


def test_codegen_model_page_frequencies(path_of, tiny_lm):
    (enc,) = tiny_lm("codegen").encodings
    at = open_scheme(path_of("codegen"), "model")
    (fig,) = figures(at)
    np.testing.assert_allclose(arr(fig["data"][0]["y"]), enc.frequencies, rtol=1e-6)
    assert "(4 rotated dims)" in title_text(fig)
    np.testing.assert_allclose(enc.frequencies, 10000.0 ** (-np.arange(0, 4, 2) / 4), rtol=1e-5)  # base 10 000
    assert_explained(at, enc)


# ---------------------------------------------------------------- Position similarity


def _check_table_similarity(at, enc, q: int | None = None) -> None:
    """Heatmap (P·Pᵀ, block means beyond 512 rows), profile of row ``q`` (default: the page's default
    row) and the table itself, from ``enc``."""
    n = enc.num_positions
    heat, profile, table = figures(at)
    g = posviz.similarity(enc.matrix, "dot")
    expected, _ = block_mean(g, 512)
    np.testing.assert_allclose(arr(heat["data"][0]["z"]), expected, rtol=1e-5, atol=1e-5)
    assert title_text(heat).startswith(f"P·Pᵀ, {enc.axis_label}s 0–{n - 1}")
    assert at.number_input(key="q").value == (min(128, n - 1) if q is None else q)
    q = at.number_input(key="q").value
    np.testing.assert_allclose(arr(profile["data"][0]["y"]), g[q] / g[q].max(), rtol=1e-5, atol=1e-6)
    table_z = arr(table["data"][0]["z"])
    assert table_z.shape[1] == enc.width
    every = -(-n // 512)  # beyond 512 rows the table shows every k-th row
    np.testing.assert_allclose(table_z, enc.matrix[::every], rtol=1e-6, atol=1e-7)
    assert (every > 1) == (f"every {every}nd" in title_text(table) or f"every {every}th" in title_text(table))
    assert_explained(at, enc)


@pytest.mark.parametrize("family", LEARNED)
def test_learned_similarity(path_of, tiny_lm, family):
    (enc,) = tiny_lm(family).encodings
    at = open_scheme(path_of(family), "similarity")
    _check_table_similarity(at, enc)


def test_layoutlm_similarity_of_each_component(path_of, tiny_lm):
    lm = tiny_lm("layoutlm")
    at = open_scheme(path_of("layoutlm"), "similarity")
    radio = at.radio(key="component")
    assert radio.options == ["1-D positions", *BOXES] and radio.value == "1-D positions"
    _check_table_similarity(at, lm.encoding("1-D positions"))
    for box, q in (("box x (x0, x1)", 63), ("box width", 700)):  # range and q stay as they were: set them
        at.radio(key="component").set_value(box).run()
        at.slider(key="range").set_value((0, 1023)).run()
        at.number_input(key="q").set_value(q).run()
        assert not at.exception and not at.main.error
        _check_table_similarity(at, lm.encoding(box), q)


def test_codegen_similarity_is_its_kernel(path_of, tiny_lm):
    (enc,) = tiny_lm("codegen").encodings
    n = enc.num_positions
    at = open_scheme(path_of("codegen"), "similarity")
    heat, profile, kernel = figures(at)
    g = posviz.similarity(enc.vectors(np.arange(n)), "dot")
    np.testing.assert_allclose(arr(heat["data"][0]["z"]), g, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.diag(g), enc.rotary_dim // 2, rtol=1e-5)  # K(m, m): the number of frequencies
    lines = traces_by_name(kernel)
    np.testing.assert_allclose(arr(lines["all frequencies"]["y"]), g[0], rtol=1e-5, atol=1e-5)  # K(0, k)
    q = at.number_input(key="q").value
    np.testing.assert_allclose(arr(profile["data"][0]["y"]), g[q] / g[q].max(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- Input


@pytest.mark.parametrize("family", ["longformer", "gpt_neo", "layoutlm"])
def test_input_parts(path_of, tiny_lm, family):
    lm = tiny_lm(family)
    emb = posviz.input_representation(lm, DEFAULT_TEXT, DEFAULT_TEXT_PAIR)
    n = len(lm.tokenizer(DEFAULT_TEXT, DEFAULT_TEXT_PAIR)["input_ids"])
    assert len(emb.tokens) == n == 13  # Longformer pads them to 16 (window 8): the page shows the 13
    at = open_scheme(path_of(family), "input")
    norms, vectors, cosine = figures(at)
    lines = traces_by_name(norms)
    assert list(lines) == list(emb.parts)
    for name, value in emb.parts.items():
        np.testing.assert_allclose(arr(lines[name]["y"]), np.linalg.norm(value, axis=1), rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(arr(vectors["data"][0]["z"]), emb.token, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(arr(cosine["data"][0]["z"]), posviz.similarity(emb.sum, "cosine"), atol=1e-5)
    position = resolve(lm.model, lm.family.input_positions).weight.detach().numpy()[lm.encodings[0].offset:][:n]
    np.testing.assert_allclose(emb.position, position, atol=1e-6)
    other = [c.value for c in at.main.caption if c.value.startswith("**other**")]
    if family == "layoutlm":  # the box embeddings of the default box, shown as "other"
        assert list(lines) == ["token", "segment", "position", "other", "sum", "after LayerNorm"]
        assert len(other) == 1
        at.radio(key="part").set_value("other").run()
        np.testing.assert_allclose(arr(figures(at)[1]["data"][0]["z"]), emb.other, rtol=1e-6, atol=1e-7)
    else:
        assert "other" not in lines and not other


def test_codegen_input_adds_no_position(path_of, tiny_lm):
    lm = tiny_lm("codegen")
    at = open_scheme(path_of("codegen"), "input")
    assert any("no position vector is added" in i.value for i in at.info), [i.value for i in at.info]
    norms, vectors = figures(at)
    assert list(traces_by_name(norms)) == ["token", "sum"]
    ids = lm.tokenizer(DEFAULT_TEXT, DEFAULT_TEXT_PAIR)["input_ids"]
    table = resolve(lm.model, "wte").weight.detach().numpy()
    np.testing.assert_allclose(arr(vectors["data"][0]["z"]), table[ids], rtol=1e-6, atol=1e-7)
