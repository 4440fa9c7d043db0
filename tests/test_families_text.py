"""More text families (tests/support/tiny_text.py) against their own modules, on tiny random configs.

The checks of the existing learned families (tests/test_positions.py, tests/test_embeddings.py) are
run on these: posviz's table is what the position module outputs in a forward pass, and the parts of
the input representation are what the embedding modules output (:func:`tests.test_embeddings._own_embeddings`,
:func:`tests.test_embeddings._check_against_model`). Beside them, each family's own form: DeBERTa v1's
``get_rel_embedding()``, LayoutLM's box tables and what its forward adds for a box, CodeGen's rotation by
its own ``apply_rotary_pos_emb``, Funnel's description of what it builds in the forward pass.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import posviz
from posviz.families import family_of
from posviz.hooks import resolve
from posviz.positions.base import PositionRemovalError
from posviz.positions.box import BoxEmbeddings
from posviz.positions.unshown import ForwardBuiltPositions
from tests.support.reference import Capture, random_ids, run_model
from tests.support.tiny_models import PAIR, SENTENCE, tiny_config
from tests.support.tiny_text import FAMILIES
from tests.test_embeddings import _check_against_model, _own_embeddings

LEARNED = [name for name, f in FAMILIES.items() if f.scheme == "learned_absolute"]
#: Families whose embedding LayerNorm receives more than token + segment + position (with text alone):
#: the reference for ``other``, from the model's own modules.
OTHER = {
    # LayoutLMModel's default box is (0, 0, 0, 0): X[x0] + Y[y0] + X[x1] + Y[y1] + H[y1 - y0] + W[x1 - x0]
    "layoutlm": lambda e: 2 * e.x_position_embeddings.weight[0] + 2 * e.y_position_embeddings.weight[0]
                          + e.h_position_embeddings.weight[0] + e.w_position_embeddings.weight[0],
    "ernie": lambda e: e.task_type_embeddings.weight[0],  # task 0 unless task_type_ids are given
}
#: Families whose model pads its input to a multiple of ``attention_window``.
PADDED = {"longformer": 8, "led": 4}


def _added_positions(model, spec, batch) -> np.ndarray:
    """What the model's position module output in its forward pass on ``batch``, [rows, width]
    (LED's module returns them without a batch axis, the others with one)."""
    with Capture(model) as cap:
        cap.output_of(spec.position_module)
        run_model(model, batch, encoder_decoder=spec.encoder_decoder)
    out = cap.outputs[spec.position_module]
    return (out[0] if out.dim() == 3 else out).float().numpy()


def _own_parts(model, tok, spec, text, text_pair=None):
    """:func:`_own_embeddings`, the rows a model appends itself (Longformer's window padding) dropped."""
    own = _own_embeddings(model, tok, spec, text, text_pair)
    own["position"] = _added_positions(model, spec, tok(text, text_pair, return_tensors="pt"))
    n = len(own["tokens"])
    return {key: value[:n] if isinstance(value, np.ndarray) else value for key, value in own.items()}


# ---------------------------------------------------------------- the table


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_entry_names_real_modules(family, tiny_lm, reference):
    """Every path of the family's entry exists in the model, and the tiny config's facts hold."""
    spec = FAMILIES[family]
    model, _ = reference(family)
    lm = tiny_lm(family)
    entry = lm.family
    assert entry is family_of(model.config) or entry == family_of(model.config)
    assert lm.scheme == spec.scheme
    assert type(lm.model).__name__ == type(model).__name__
    for path in (*entry.modules(), *entry.token[:1], entry.segment, entry.layernorm):
        if path is not None:
            assert resolve(model, path) is not None, path
    if spec.position_module:
        assert entry.input_positions == spec.position_module
        assert lm.max_tokens == spec.max_tokens
    if spec.word_module:
        assert entry.token[0] == spec.word_module


@pytest.mark.parametrize("family", LEARNED)
def test_matrix_is_what_the_model_adds(family, tiny_lm, reference):
    """Every row of posviz's table is the vector the model's own position module added at that
    position, in a forward pass of the longest input the model takes (the family's offset skipped)."""
    spec = FAMILIES[family]
    model, _ = reference(family)
    table = model.get_submodule(spec.position_module).weight.detach().numpy()
    pe = tiny_lm(family).encodings[0]
    assert type(pe) is posviz.PositionEmbeddings
    assert (pe.offset, pe.source) == (spec.offset, spec.position_module)
    assert pe.matrix.shape == (table.shape[0] - spec.offset, table.shape[1]) and pe.matrix.shape[0] == spec.max_tokens
    np.testing.assert_array_equal(pe.matrix, table[spec.offset:])
    ids = random_ids(spec.max_tokens)
    hooked = _added_positions(model, spec, {"input_ids": ids, "attention_mask": torch.ones_like(ids)})
    np.testing.assert_array_equal(pe.matrix, hooked)
    if spec.offset:  # the skipped rows are other vectors, so the comparison above can fail
        assert not np.allclose(pe.matrix[0], table[0]) and not np.allclose(pe.matrix[0], table[1])


@pytest.mark.parametrize("text_pair", [None, PAIR], ids=["single", "pair"])
@pytest.mark.parametrize("family", LEARNED)
def test_input_parts_are_the_models_own(family, text_pair, tiny_lm, reference):
    """Token, segment, position, their sum (what the LayerNorm or the first layer receives) and the
    LayerNorm's output, as the model's own embedding modules computed them."""
    spec = FAMILIES[family]
    model, tok = reference(family)
    lm = tiny_lm(family)
    emb = posviz.input_representation(lm, SENTENCE, text_pair=text_pair)
    own = _own_parts(model, tok, spec, SENTENCE, text_pair)
    if family in PADDED:
        padded = len(own["tokens"]) % PADDED[family] != 0
        assert padded == (family == "longformer")  # the model pads Longformer's input: posviz drops those rows
    if family not in OTHER:
        assert emb.other is None
        _check_against_model(emb, own, lm.encodings[0].matrix)
        return
    # more than token + segment + position: the sum is still what the LayerNorm received
    for name in ("token", "segment", "position", "sum"):
        np.testing.assert_allclose(getattr(emb, name), own[name], atol=1e-5, rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(emb.normalized, own["normalized"], atol=1e-4, rtol=1e-4)
    expected = OTHER[family](model.embeddings).detach().numpy()
    np.testing.assert_allclose(emb.other, np.broadcast_to(expected, emb.other.shape), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(emb.token + emb.segment + emb.position + emb.other, emb.sum, atol=1e-5, rtol=1e-5)
    assert list(emb.parts) == ["token", "segment", "position", "other", "sum", "after LayerNorm"]


@pytest.mark.parametrize("family", list(PADDED))
def test_window_padding_is_dropped(family, tiny_lm, reference):
    """Longformer and LED pad their input to a multiple of the attention window: posviz shows the
    input's tokens only, each part equal to the model's own modules run on the input unpadded."""
    model, tok = reference(family)
    lm = tiny_lm(family)
    text = "one two three"  # [CLS] one two three [SEP]: 5 tokens, a multiple of neither window
    emb = posviz.input_representation(lm, text)
    ids = tok(text, return_tensors="pt")["input_ids"]
    n = ids.shape[1]
    assert n % PADDED[family] and len(emb.tokens) == n
    embeddings = model.get_encoder() if family == "led" else model.embeddings
    words = embeddings.embed_tokens if family == "led" else embeddings.word_embeddings
    norm = embeddings.layernorm_embedding if family == "led" else embeddings.LayerNorm
    with torch.no_grad():
        token = words(ids)[0]
        expected = token + torch.as_tensor(lm.encodings[0].matrix[:n])
        if family == "longformer":
            expected = expected + embeddings.token_type_embeddings.weight[0]
        normalized = norm(expected)
    for name, value in (("token", token), ("sum", expected), ("normalized", normalized)):
        assert getattr(emb, name).shape == (n, 32), name
        np.testing.assert_allclose(getattr(emb, name), value.numpy(), atol=1e-5, rtol=1e-5, err_msg=name)


# ---------------------------------------------------------------- DeBERTa v1


@pytest.mark.parametrize("family, components", [("deberta", ["absolute table", "relative embeddings"]),
                                                ("deberta-relative", [""])])
def test_deberta_relative_embeddings_are_get_rel_embedding(family, components, tiny_lm, reference):
    """DeBERTa v1: rel_embeddings as the encoder's own get_rel_embedding() returns them (no LayerNorm
    in v1), row r for the relative position r - max_relative_positions; the absolute table where
    position_biased_input says so."""
    model, _ = reference(family)
    encodings = tiny_lm(family).encodings
    assert [e.component for e in encodings] == components
    rel = encodings[-1]
    assert type(rel) is posviz.RelativeEmbeddings
    span = model.encoder.max_relative_positions
    assert span == 64  # deberta: max_relative_positions 64; deberta-relative: -1, so max_position_embeddings
    with torch.no_grad():
        own = model.encoder.get_rel_embedding().numpy()
    assert rel.num_positions == own.shape[0] == 2 * span and rel.first_label == -span
    np.testing.assert_array_equal(rel.vectors(np.arange(rel.num_positions)).numpy(), own)
    assert (getattr(model.embeddings, "position_embeddings", None) is not None) == (len(encodings) == 2)


def test_deberta_without_relative_attention_has_the_table_only():
    config = tiny_config("deberta")
    config.relative_attention = False
    entry = family_of(config)
    assert [spec.scheme for spec in entry.positions] == ["learned_absolute"]
    assert entry.positions[0].component == ""


# ---------------------------------------------------------------- LayoutLM


def test_layoutlm_box_tables_are_what_its_forward_adds(tiny_lm, reference):
    """Each box component is its table (1024 coordinates, none skipped); for a given box the model's
    own x/y/h/w modules output exactly those rows."""
    model, _ = reference("layoutlm")
    lm = tiny_lm("layoutlm")
    first, *boxes = lm.encodings
    assert first.component == "1-D positions" and type(first) is posviz.PositionEmbeddings
    assert [b.component for b in boxes] == ["box x (x0, x1)", "box y (y0, y1)", "box height", "box width"]
    assert lm.max_tokens == 64  # the 1-D table, not the 1024 coordinates
    n = 6
    g = torch.Generator().manual_seed(3)
    x0, y0 = torch.randint(0, 500, (1, n), generator=g), torch.randint(0, 500, (1, n), generator=g)
    x1, y1 = x0 + torch.randint(1, 400, (1, n), generator=g), y0 + torch.randint(1, 400, (1, n), generator=g)
    bbox = torch.stack([x0, y0, x1, y1], dim=-1)
    emb = model.embeddings
    modules = {"x": "x_position_embeddings", "y": "y_position_embeddings", "h": "h_position_embeddings",
               "w": "w_position_embeddings"}
    with Capture(model) as cap, torch.no_grad():
        for name in modules.values():
            cap.output_of(f"embeddings.{name}")
        model(input_ids=random_ids(n), bbox=bbox)
    # x and y are called twice (x0 then x1, y0 then y1): the capture holds the second call
    for enc, (axis, name), index in zip(boxes, modules.items(), (x1, y1, y1 - y0, x1 - x0)):
        assert type(enc) is BoxEmbeddings and enc.source == f"embeddings.{name}"
        assert enc.num_positions == 1024 and enc.axis_label == "coordinate" and enc.offset == 0
        np.testing.assert_array_equal(enc.matrix, getattr(emb, name).weight.detach().numpy())
        np.testing.assert_array_equal(enc.matrix[index[0].numpy()], cap.outputs[f"embeddings.{name}"][0].numpy())
        assert "Xu et al., KDD 2020" in enc.describe() and f"`{enc.source}`" in enc.describe()
        assert enc.signature().xlabel == "coordinate c"


# ---------------------------------------------------------------- CodeGen (rotary, rotate_every_two)


def test_codegen_rotation_is_its_own_apply_rotary_pos_emb(tiny_lm, reference):
    """The kernel of posviz's rotation features is the one CodeGen's attention applies: its own
    rotary module and apply_rotary_pos_emb on the first rotary_dim dims of each head (see
    tests/test_schemes.py for the identity sum_j (R_m e_j)·(R_n e_j) = 2 K(m, n))."""
    from transformers.models.codegen.modeling_codegen import apply_rotary_pos_emb

    model, _ = reference("codegen")
    enc = tiny_lm("codegen").encodings[0]
    assert isinstance(enc, posviz.RotaryEncoding) and enc.style == "interleaved"
    attn = model.h[0].attn
    width, head_dim = attn.rotary_dim, attn.head_dim
    assert enc.rotary_dim == width == 4 and head_dim == 8
    positions = np.array([0, 1, 2, 5, 9, 30, 95])
    ids = torch.as_tensor(positions)[None, :]
    basis = torch.eye(head_dim)
    with torch.no_grad():
        sin, cos = model.rotary_emb(basis, ids)  # CodeGenRotaryEmbedding returns (sin, cos) of its embed_positions
        x = basis[None, None].expand(1, len(positions), head_dim, head_dim)  # [batch, seq, heads = basis j, dim]
        rotated = apply_rotary_pos_emb(x[..., :width], sin, cos)[0].permute(1, 0, 2).double()  # [j, n, width]
    own = torch.einsum("jmd,jnd->mn", rotated[:width], rotated[:width]).numpy()
    v = enc.vectors(positions).double()
    np.testing.assert_allclose(own, 2 * (v @ v.T).numpy(), atol=2e-5)
    sin1, cos1 = model.rotary_emb.embed_positions[1].double().chunk(2)  # the module's own table, position 1
    np.testing.assert_allclose(enc.frequencies, np.arctan2(sin1.numpy(), cos1.numpy()), rtol=1e-6)
    assert enc.num_positions == 96


# ---------------------------------------------------------------- Funnel


def test_funnel_says_what_it_builds_and_shows_nothing(tiny_lm, reference):
    """No table, no module: Funnel's relative positional attention is built in the forward pass.
    posviz names the method that builds it (which exists) and the parameters that use it."""
    from transformers.models.funnel import modeling_funnel

    model, _ = reference("funnel")
    lm = tiny_lm("funnel")
    (enc,) = lm.encodings
    assert type(enc) is ForwardBuiltPositions and not (enc.has_vectors or enc.has_bias)
    assert lm.family.positional
    assert not [name for name, _ in model.named_parameters() if "position" in name]
    assert callable(modeling_funnel.FunnelAttentionStructure.get_position_embeds)
    assert enc.source == "transformers.models.funnel.modeling_funnel.FunnelAttentionStructure.get_position_embeds"
    text = enc.describe()
    assert f"`{enc.source}`" in text and "Dai et al., 2020" in text
    for name in ("r_kernel", "r_r_bias"):
        assert name in text and hasattr(model.encoder.blocks[0][0].attention, name)
    with pytest.raises(PositionRemovalError, match="forward pass"):
        lm.family.removal(lm.model)


# ---------------------------------------------------------------- BigBird's rescaled tokens


def test_big_bird_rescaled_tokens_are_not_split():
    """With rescale_embeddings the tokens are scaled by sqrt(hidden) inside the forward, by no module:
    the entry gives the table but no token path, so the Input page says it cannot split the input."""
    config = tiny_config("big_bird")
    assert family_of(config).token == ("embeddings.word_embeddings",)
    config.rescale_embeddings = True
    entry = family_of(config)
    assert entry.token == () and entry.input_positions == "embeddings.position_embeddings"
