"""Vision towers (ViT, DeiT, DINOv2, CLIP, SigLIP and their single towers), against the models' own modules.

Tiny random checkpoints of :mod:`tests.support.tiny_vision` (32 × 32 pixels in patches of 8: a 4 × 4
grid; width 32, one layer, two heads), saved and loaded through ``posviz.load_model``. The ground
truth is the model itself, loaded here with plain transformers: the vector its embeddings add to
each token in a forward pass on a random image (or sentence), and the table it holds.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import posviz
from posviz.analysis.patch_grid import map_stride, mosaic, patch_maps
from posviz.hooks import hooked
from posviz.positions import PositionRemovalError
from posviz.positions.patches import PatchEmbeddings, PatchGrid
from posviz.views import patch_grid as grid_views
from tests.support.tiny_vision import GRID, IMAGE_TOWERS, TEXT_TOWERS, stored_image_table, tower
from tests.support.tiny_vision import own  # noqa: F401  the fixture

ROWS, COLS = GRID


def _image_encoding(lm) -> PatchEmbeddings:
    found = [e for e in lm.encodings if e.grid is not None]
    assert len(found) == 1, lm.encodings
    return found[0]


def _added_in_forward(image_tower) -> np.ndarray:
    """What the image tower's embeddings add to each token in a forward pass of a random image, [tokens, width]:
    an ``nn.Embedding``'s output as called (CLIP, SigLIP), or the embeddings' output less the tokens they hold and
    the patch projection's output (ViT, DeiT, DINOv2: the table is an ``nn.Parameter`` added in their forward)."""
    pixels = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    emb = image_tower.embeddings
    table = getattr(emb, "position_embedding", None)
    capture = {"out": emb, "patches": emb.patch_embeddings} if table is None else {"table": table}
    with torch.no_grad(), hooked(capture) as seen:
        image_tower(pixel_values=pixels)
    if table is not None:
        return seen["table"][0].numpy() if seen["table"].dim() == 3 else seen["table"].numpy()
    tokens = [emb.cls_token] + ([emb.distillation_token] if hasattr(emb, "distillation_token") else [])
    before = torch.cat([t.detach().expand(1, 1, -1) for t in tokens], dim=1)
    return (seen["out"] - torch.cat([before, seen["patches"]], dim=1))[0].numpy()


# ---------------------------------------------------------------- the image towers' tables


@pytest.mark.parametrize("family", list(IMAGE_TOWERS))
def test_image_table_is_what_the_forward_adds(family, tiny_lm, own):
    path, special = IMAGE_TOWERS[family]
    enc = _image_encoding(tiny_lm(family))
    added = _added_in_forward(tower(own(family), path))
    assert added.shape == (len(special) + ROWS * COLS, 32)
    assert enc.num_positions == added.shape[0]
    np.testing.assert_allclose(enc.matrix, added, rtol=1e-5, atol=1e-6)
    assert enc.grid == PatchGrid(ROWS, COLS, special)
    assert enc.scheme == "learned_absolute" and isinstance(enc, posviz.PositionEmbeddings)


@pytest.mark.parametrize("family", list(IMAGE_TOWERS))
def test_image_table_is_the_stored_tensor(family, tiny_lm, own):
    """Row p is row p of the model's own parameter or embedding weight, as stored (float32 already)."""
    stored = stored_image_table(own(family), family)
    assert np.linalg.norm(stored, axis=1).min() > 0  # no row of zeros: every comparison can fail
    np.testing.assert_array_equal(_image_encoding(tiny_lm(family)).matrix, stored)


@pytest.mark.parametrize("family", ["vit", "deit", "clip", "siglip_vision_model"])
def test_positions_only_reads_the_same_table(family, tiny_path, tiny_lm):
    lm = posviz.load_model(str(tiny_path(family)), positions_only=True)
    assert lm.positions_only and lm.input_kind == tiny_lm(family).input_kind
    for mine, full in zip(lm.encodings, tiny_lm(family).encodings):
        assert mine.component == full.component and mine.grid == full.grid
        np.testing.assert_array_equal(mine.matrix, full.matrix)


def test_grid_from_config_with_pairs_and_a_wrong_table():
    from posviz.positions.patches import PatchTableSpec, config_grid
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(image_size=(32, 48), patch_size=(8, 16), hidden_size=8, num_hidden_layers=1,
                       num_attention_heads=2, intermediate_size=8)
    assert config_grid(config, ("CLS",)) == PatchGrid(4, 3, ("CLS",))
    model = ViTModel(ViTConfig(image_size=32, patch_size=8, hidden_size=8, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=8))
    with pytest.raises(ValueError, match="17 rows, not the 1 special token"):
        PatchTableSpec("embeddings.position_embeddings").read(model, config, heads=2, max_tokens=17)


def test_cell_of_a_table_row():
    grid = PatchGrid(ROWS, COLS, ("CLS", "distillation"))
    assert grid.cell(2) == (0, 0) and grid.cell(2 + 4 * 2 + 3) == (2, 3)
    for row in (0, 1, 2 + 16):
        with pytest.raises(ValueError, match="not a patch"):
            grid.cell(row)


# ---------------------------------------------------------------- text towers beside them


@pytest.mark.parametrize("family", list(TEXT_TOWERS))
def test_text_table_is_what_the_forward_adds(family, tiny_lm, own):
    path, rows = TEXT_TOWERS[family]
    lm = tiny_lm(family)
    enc = lm.encodings[0]
    assert enc.grid is None and enc.num_positions == rows == lm.max_tokens
    assert enc.component == ("text tower" if path else "")
    text = tower(own(family), path)
    ids = torch.randint(200, 2000, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), hooked({"table": text.embeddings.position_embedding}) as seen:
        text(input_ids=ids)
    np.testing.assert_allclose(enc.matrix[:9], seen["table"][0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(enc.matrix, text.embeddings.position_embedding.weight.detach().numpy())


@pytest.mark.parametrize("family", ["clip", "siglip"])
def test_two_towers_are_named_components(family, tiny_lm):
    lm = tiny_lm(family)
    assert [e.component for e in lm.encodings] == ["text tower", "vision tower"]
    assert lm.encoding("vision tower").grid.special == IMAGE_TOWERS[family][1]
    assert lm.forward_module is lm.model.text_model  # sentences run through the text tower
    assert lm.reads_text and lm.tokenizer is not None


# ---------------------------------------------------------------- what the model reads


@pytest.mark.parametrize("family", ["vit", "deit", "dinov2", "clip_vision_model", "siglip_vision_model"])
def test_image_model_loads_without_a_tokenizer(family, tiny_path, tiny_lm):
    assert not (tiny_path(family) / "tokenizer_config.json").exists()
    lm = tiny_lm(family)
    assert lm.tokenizer is None and lm.input_kind == "image" and not lm.reads_text


def test_input_kinds_of_configs():
    from transformers import BertConfig, CLIPConfig, HubertConfig, ViTConfig, WhisperConfig

    kinds = [posviz.loading.input_kind(c()) for c in (BertConfig, CLIPConfig, ViTConfig, HubertConfig, WhisperConfig)]
    assert kinds == ["text", "text", "image", "audio", "audio"]


def test_text_model_without_tokenizer_still_refused(tmp_path):
    from tests.support.tiny_models import build_tiny

    build_tiny("clip", tmp_path, with_tokenizer=False)
    with pytest.raises(posviz.ModelLoadError, match="tokenizer"):
        posviz.load_model(str(tmp_path))


def test_removal(tiny_lm):
    with pytest.raises(PositionRemovalError, match="parameter added inside the embeddings' forward"):
        tiny_lm("vit").family.removal(tiny_lm("vit").model)
    clip = tiny_lm("clip")
    patches = clip.family.removal(clip.model)
    assert [p.module for p in patches] == [clip.model.text_model.embeddings.position_embedding,
                                           clip.model.vision_model.embeddings.position_embedding]


# ---------------------------------------------------------------- the grid view


def _cosine(table: np.ndarray) -> np.ndarray:
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    return unit @ unit.T


@pytest.mark.parametrize("family", ["vit", "deit", "siglip"])
def test_grid_view_places_each_patch_map(family, tiny_lm, own):
    special = IMAGE_TOWERS[family][1]
    table = stored_image_table(own(family), family)
    k = len(special)
    cos = _cosine(table)
    view = grid_views.patch_grid(_image_encoding(tiny_lm(family)))
    tiles = view.arrays["mosaic"]
    assert tiles.shape == (ROWS * (ROWS + 1) - 1, COLS * (COLS + 1) - 1)
    for r in range(ROWS):
        for c in range(COLS):
            block = tiles[r * (ROWS + 1):r * (ROWS + 1) + ROWS, c * (COLS + 1):c * (COLS + 1) + COLS]
            expected = cos[k + r * COLS + c, k:].reshape(ROWS, COLS)  # patch r*cols + c against every patch, row-major
            np.testing.assert_allclose(block, expected, rtol=1e-5, atol=1e-6)
            assert block[r, c] == pytest.approx(1.0, abs=1e-6)  # the patch itself
    separators = np.zeros(tiles.shape, dtype=bool)
    separators[ROWS::ROWS + 1, :] = separators[:, COLS::COLS + 1] = True
    assert np.isnan(tiles[separators]).all() and not np.isnan(tiles[~separators]).any()
    (heat,) = view.figure.data
    np.testing.assert_array_equal(np.asarray(heat.z), tiles)
    np.testing.assert_array_equal(view.arrays["grid_rows"], np.arange(ROWS))

    apart = grid_views.special_rows(_image_encoding(tiny_lm(family)))
    if not special:
        assert apart is None and "left out" not in view.caption
        return
    assert f"The {' and '.join(special)} row" in view.caption and "left out of the grid" in view.caption
    np.testing.assert_allclose(apart.arrays["maps"], cos[:k, k:].reshape(k, ROWS, COLS), rtol=1e-5, atol=1e-6)
    z = np.asarray(apart.figure.data[0].z)
    for i in range(k):
        np.testing.assert_allclose(z[:, i * (COLS + 1):i * (COLS + 1) + COLS], cos[i, k:].reshape(ROWS, COLS),
                                   rtol=1e-5, atol=1e-6)


def test_mosaic_of_a_large_grid_shows_every_kth_map():
    """DINOv2 at 518 pixels: 37 × 37 patches; every 3rd patch's map, each map whole."""
    rng = np.random.default_rng(0)
    maps = rng.standard_normal((37, 37, 37, 37)).astype(np.float32)
    step = map_stride(37, 37)
    tiles = mosaic(maps, step)
    assert step == 3 and tiles.shape == (13 * 38 - 1, 13 * 38 - 1)
    for a, b in [(0, 0), (4, 7), (12, 12)]:
        np.testing.assert_array_equal(tiles[a * 38:a * 38 + 37, b * 38:b * 38 + 37], maps[3 * a, 3 * b])


def test_patch_maps_of_a_sequence_refused(bundled_lm):
    with pytest.raises(ValueError, match="sequence, not a grid"):
        patch_maps(bundled_lm.encodings[0])
    assert bundled_lm.encodings[0].grid is None


@pytest.mark.parametrize("by, column", [("grid row", 0), ("grid column", 1)])
def test_projection_coloured_by_grid(by, column, tiny_lm):
    from posviz.views import positions

    enc = _image_encoding(tiny_lm("deit"))
    coords, rows = positions.projection_coordinates(enc, "pca", 2)
    view = positions.projection(coords, rows, enc.vector_name, method="pca", boundaries=[], grid=enc.grid, colour=by)
    traces = {t.name: t for t in view.figure.data}
    assert list(traces) == ["patches", "CLS (row 0)", "distillation (row 1)"]
    cells = np.array([divmod(p, COLS) for p in range(ROWS * COLS)])
    np.testing.assert_array_equal(np.asarray(traces["patches"].marker.color), cells[:, column])
    np.testing.assert_allclose(np.asarray(traces["patches"].x), coords[2:, 0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(traces["CLS (row 0)"].y), coords[:1, 1], rtol=1e-6)
    assert f"the patch's {by}" in view.caption


def test_export_of_an_image_model_holds_the_grid_view(tiny_lm):
    from posviz import standard_set

    stems = [e.stem for e in standard_set.standard_set(tiny_lm("vit"))]
    assert stems == ["position-similarity", "profile-q16", "projection-pca", "patch-grid", "patch-grid-special"]
    grid = next(e for e in standard_set.standard_set(tiny_lm("clip")) if e.stem == "patch-grid-vision-tower")
    expected = grid_views.patch_grid(tiny_lm("clip").encoding("vision tower")).arrays["mosaic"]
    np.testing.assert_array_equal(grid.arrays["mosaic"], expected)
