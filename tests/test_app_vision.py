"""The app on vision towers (a tiny ViT, DeiT and CLIP: 4 × 4 patches), driven headless with AppTest.

The position pages show the image tower's table, its grid view and both towers of CLIP, with the
figures' numbers checked against the table the model holds (loaded here with plain transformers);
the pages that run sentences say that a ViT reads an image, and run CLIP's text tower.
"""

from __future__ import annotations

import numpy as np
import pytest

from posviz.app.widgets import DEFAULT_TEXT, DEFAULT_TEXT_PAIR
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import arr, assert_clean, figures, open_page, title_text
from tests.support.tiny_vision import GRID, own, stored_image_table  # noqa: F401  own: the fixture

ROWS, COLS = GRID
TEXT_PAGES = ["input", "attention", "word_order", "probes", "properties"]


def _open(path, page: str, **state):
    if page == "projection":
        state.setdefault("method", "PCA")
    at = open_page(page, query_params={"model": str(path)}, **state)
    assert_clean(at, page)
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
    return at


def _cosine(table: np.ndarray) -> np.ndarray:
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    return unit @ unit.T


def _by_title(at) -> dict[str, dict]:
    return {title_text(f).split("<br>")[0]: f for f in figures(at)}


def test_model_page_vit(tiny_path, own):
    table = stored_image_table(own("vit"), "vit")
    at = _open(tiny_path("vit"), "model")
    assert "**Positional scheme:** learned position embeddings of image patches" in [m.value for m in at.markdown]
    (fig,) = figures(at)
    np.testing.assert_allclose(arr(fig["data"][0]["y"]), np.linalg.norm(table, axis=1), rtol=1e-5)
    assert any("rows 1–16 the 4 × 4 patches, row by row" in c.value for c in at.main.caption)


def test_model_page_clip_shows_both_towers(tiny_path, own):
    model = own("clip")
    at = _open(tiny_path("clip"), "model")
    assert [h.value for h in at.subheader] == ["Text tower", "Vision tower"]
    text, vision = figures(at)
    text_table = model.text_model.embeddings.position_embedding.weight.detach().double().numpy()
    np.testing.assert_allclose(arr(text["data"][0]["y"]), np.linalg.norm(text_table, axis=1), rtol=1e-5)
    assert len(arr(text["data"][0]["y"])) == 77
    np.testing.assert_allclose(arr(vision["data"][0]["y"]),
                               np.linalg.norm(stored_image_table(model, "clip"), axis=1), rtol=1e-5)


@pytest.mark.parametrize("family", ["vit", "deit"])
def test_similarity_page_grid_view(family, tiny_path, own):
    table = stored_image_table(own(family), family)
    k = table.shape[0] - ROWS * COLS
    cos = _cosine(table)
    at = _open(tiny_path(family), "similarity")
    assert "The patches in their places" in [h.value for h in at.subheader]
    figs = _by_title(at)
    heat = figs[f"P·Pᵀ, positions 0–{table.shape[0] - 1}"]
    np.testing.assert_allclose(arr(heat["data"][0]["z"]), table @ table.T, rtol=1e-4, atol=1e-6)

    tiles = arr(figs["Each patch's similarity map, in its place (4 × 4 grid)"]["data"][0]["z"])
    assert tiles.shape == (ROWS * (ROWS + 1) - 1, COLS * (COLS + 1) - 1)
    for r in range(ROWS):
        for c in range(COLS):
            block = tiles[r * (ROWS + 1):r * (ROWS + 1) + ROWS, c * (COLS + 1):c * (COLS + 1) + COLS]
            np.testing.assert_allclose(block, cos[k + r * COLS + c, k:].reshape(ROWS, COLS), rtol=1e-5, atol=1e-6)
    captions = [c.value for c in at.main.caption]
    assert any("left out of the grid" in c for c in captions), captions

    names = " and ".join(["CLS", "distillation"][:k])
    apart = arr(figs[f"{names} against each patch"]["data"][0]["z"])
    for i in range(k):
        np.testing.assert_allclose(apart[:, i * (COLS + 1):i * (COLS + 1) + COLS], cos[i, k:].reshape(ROWS, COLS),
                                   rtol=1e-5, atol=1e-6)


def test_similarity_page_clip_towers(tiny_path, own):
    model = own("clip")
    at = _open(tiny_path("clip"), "similarity")
    radio = at.radio(key="component")
    assert radio.value == "text tower" and radio.options == ["text tower", "vision tower"]
    assert "The patches in their places" not in [h.value for h in at.subheader]  # a sequence: no grid
    text_table = model.text_model.embeddings.position_embedding.weight.detach().double().numpy()
    heat = _by_title(at)["P·Pᵀ, positions 0–76"]
    np.testing.assert_allclose(arr(heat["data"][0]["z"]), text_table @ text_table.T, rtol=1e-4, atol=1e-6)

    radio.set_value("vision tower").run()
    assert_clean(at, "similarity")
    cos = _cosine(stored_image_table(model, "clip"))
    tiles = arr(_by_title(at)["Each patch's similarity map, in its place (4 × 4 grid)"]["data"][0]["z"])
    np.testing.assert_allclose(tiles[:ROWS, COLS + 1:2 * COLS + 1], cos[2, 1:].reshape(ROWS, COLS), rtol=1e-5,
                               atol=1e-6)  # grid cell (0, 1): patch 1, table row 2


@pytest.mark.parametrize("colour, column", [("grid row", 0), ("grid column", 1)])
def test_projection_page_colours_by_grid(colour, column, tiny_path):
    at = _open(tiny_path("vit"), "projection", colour=colour)
    (fig,) = figures(at)
    patches = next(t for t in fig["data"] if t["name"] == "patches")
    cells = np.array([divmod(p, COLS) for p in range(ROWS * COLS)])
    np.testing.assert_array_equal(arr(patches["marker"]["color"]), cells[:, column])
    assert [t["name"] for t in fig["data"]] == ["patches", "CLS (row 0)"]


@pytest.mark.parametrize("page", TEXT_PAGES)
def test_text_pages_say_vit_needs_an_image(page, tiny_path):
    at = _open(tiny_path("vit"), page)
    needs = [i.value for i in at.info if "reads an image, not text" in i.value]
    assert len(needs) == 1, [i.value for i in at.info]
    assert "Position similarity" in needs[0]  # the way forward
    if page in ("input", "attention", "word_order"):
        assert not at.get("plotly_chart")


def test_input_page_runs_clip_text_tower(tiny_path, tiny_lm, own):
    """The position vectors added to the sentence are the text tower's table rows 0 … n − 1."""
    at = _open(tiny_path("clip"), "input", part="position")
    assert not [i.value for i in at.info if "reads" in i.value]
    ids = tiny_lm("clip").tokenizer(DEFAULT_TEXT, DEFAULT_TEXT_PAIR)["input_ids"]
    table = own("clip").text_model.embeddings.position_embedding.weight.detach().numpy()
    vectors = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("position vectors"))
    np.testing.assert_allclose(arr(vectors["data"][0]["z"]), table[:len(ids)], rtol=1e-6, atol=1e-7)


def test_attention_page_runs_clip_text_tower(tiny_path, tiny_lm, own):
    """Layer 0, head 0 is the text tower's own attention (its ``output_attentions``), causal as CLIP's text is."""
    import torch

    at = _open(tiny_path("clip"), "attention")
    assert "generate" not in [w.key for w in at.number_input]  # a text tower has no LM head: nothing to generate
    encoded = tiny_lm("clip").tokenizer(DEFAULT_TEXT, DEFAULT_TEXT_PAIR, return_tensors="pt")
    with torch.no_grad():
        expected = own("clip").text_model(**encoded, output_attentions=True).attentions[0][0, 0].numpy()
    head = _by_title(at)["Layer 0, head 0"]
    z = arr(head["data"][0]["z"])
    np.testing.assert_allclose(np.nan_to_num(z), expected, rtol=1e-5, atol=1e-6)
    assert np.allclose(np.triu(expected, 1), 0)
