"""Models that mix positional schemes layer by layer, and modern LLMs' own forms of rotary.

Tiny random checkpoints (``tests/support/tiny_layers.py``) loaded through ``posviz.load_model``; the
ground truth is each model's own code: its rotary module called as its layers call it, its own
``apply_rotary_pos_emb`` (or ``apply_rotary_emb``) on basis vectors, the attributes its layers set
from the config (``use_rope``, ``sliding_window``, ``attention_type``), its ``sinks`` parameters.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import posviz
from posviz.hooks import hooked, resolve

_POSITIONS = np.array([0, 1, 2, 3, 5, 8, 13, 21, 40, 64, 100, 127])

# family -> {component: layer type its layers pass to the rotary module (None: none)}
ROTARY = {
    "modernbert": {"global rotary": "full_attention", "local rotary": "sliding_attention"},
    "gemma3_text": {"global rotary": "full_attention", "local rotary": "sliding_attention"},
    "smollm3": {"rotary": None},
    "llama4_text": {"rotary": None},
    "cohere2": {"rotary": None},
    "cohere": {"": None},
    "gpt_oss": {"": None},
    "qwen2_vl": {"": None},
    "deepseek_v3": {"": None},
    "deepseek_v2": {"": None},
    "gemma3": {"global rotary": "full_attention", "local rotary": "sliding_attention"},
    "qwen2_5_vl": {"": None},
    "qwen2_vl_text": {"": None},
    **{name: {"": None} for name in ("gemma", "gemma2", "mistral", "mixtral", "olmo", "olmo2", "phi3", "qwen2",
                                     "qwen3", "stablelm")},
}
# family -> rotated dimensions per head, from the configs (DeepSeek: qk_rope_head_dim 8 of 16; StableLM:
# partial_rotary_factor 0.25 of 8); 8 (all of head_dim) for the others
WIDTH = {**{family: 8 for family in ROTARY}, "stablelm": 2}


def _rotary_path(model) -> str:
    return "language_model.rotary_emb" if resolve(model, "language_model") is not None else "rotary_emb"


def _own_rotated(family: str, model, positions: np.ndarray, layer_type: str | None) -> torch.Tensor:
    """R[j] = the rotation the model applies to basis vector e_j at each position, float64
    [width, n, width], by its own rotary module and its own apply function."""
    own = inspect.getmodule(type(model))
    rotary = resolve(model, _rotary_path(model))
    width, n = WIDTH[family], len(positions)
    ids = torch.as_tensor(positions, dtype=torch.long)[None, :]
    probe = torch.zeros(1, dtype=torch.float32)
    basis = torch.eye(width, dtype=torch.float32)
    with torch.no_grad():
        out = rotary(probe, ids, layer_type) if layer_type else rotary(probe, ids)
        if family == "llama4_text":  # [batch, seq, heads, dim] and complex frequencies
            x = basis[None, None].expand(1, n, width, width)
            rotated, _ = own.apply_rotary_emb(x, x, out)
            return rotated[0].permute(1, 0, 2).double()
        x = basis[None, :, None, :].expand(1, width, n, width)  # [batch, heads = j, seq, dim]
        if family == "deepseek_v2":  # complex frequencies
            rotated, _ = own.apply_rotary_emb(x, x, out)
            return rotated[0].double()
        apply = (own.apply_rotary_pos_emb_interleave if getattr(model.config, "rope_interleave", False)
                 else own.apply_rotary_pos_emb)
        rotated, _ = apply(x, x, *out)
    return rotated[0].double()


@pytest.mark.parametrize("family, component", [(f, c) for f, parts in ROTARY.items() for c in parts])
def test_rotary_kernel_is_the_models_own_rotation(family, component, tiny_lm):
    lm = tiny_lm(family)
    enc = lm.encoding(component)
    assert enc.scheme == "rotary" and enc.rotary_dim == WIDTH[family]
    rotated = _own_rotated(family, lm.model, _POSITIONS, ROTARY[family][component])
    # Σ_j (R_m e_j)·(R_n e_j) = trace(R_mᵀ R_n) = 2 s² K(m, n), whatever the pairing of dimensions
    own = torch.einsum("jmd,jnd->mn", rotated, rotated).numpy()
    v = enc.vectors(_POSITIONS).double().cpu()
    np.testing.assert_allclose(own, 2 * (v @ v.T).numpy(), atol=2e-5)


def test_global_and_local_bases_are_the_configs(tiny_lm):
    for family, (global_base, local_base) in {"modernbert": (160_000, 10_000),
                                              "gemma3_text": (1_000_000, 10_000)}.items():
        lm = tiny_lm(family)
        glob, local = lm.encoding("global rotary"), lm.encoding("local rotary")
        assert (glob.theta, local.theta) == (global_base, local_base)
        assert glob.frequencies[1] < local.frequencies[1]  # the global layers turn slower
    gemma = tiny_lm("gemma3_text").encoding("global rotary")
    assert gemma.rope_type == "linear"
    np.testing.assert_allclose(gemma.frequencies,
                               tiny_lm("gemma3_text").model.rotary_emb.full_attention_inv_freq.double().numpy(),
                               rtol=1e-5)


# family -> what each of the model's own layers says about its positions
def _layer_component(family: str, layer) -> str:
    if family in ("smollm3", "llama4_text"):
        return "rotary" if layer.self_attn.use_rope else "NoPE"
    if family == "cohere2":
        return "rotary" if layer.self_attn.sliding_window is not None else "NoPE"
    if family == "modernbert":
        return "local rotary" if layer.attn.sliding_window is not None else "global rotary"
    return "local rotary" if layer.self_attn.is_sliding else "global rotary"  # gemma3_text


@pytest.mark.parametrize("family", ["modernbert", "gemma3_text", "smollm3", "llama4_text", "cohere2"])
def test_layer_strip_is_what_each_layer_does(family, tiny_lm):
    lm = tiny_lm(family)
    strip = lm.layer_strip
    own = [_layer_component(family, layer) for layer in lm.model.layers]
    assert len(strip) == lm.num_layers == len(own)
    assert [s.components for s in strip] == [(c,) for c in own]
    assert len(set(own)) == 2  # the tiny configs mix two
    for e in lm.encodings:
        assert e.layers == tuple(i for i, c in enumerate(own) if c == e.component)


def test_layer_strip_details_and_spans(tiny_lm):
    modernbert = tiny_lm("modernbert").layer_strip
    assert [s.span for s in modernbert] == ["full attention", "sliding window of 8 tokens",
                                           "sliding window of 8 tokens", "full attention"]
    assert modernbert[0].details == ("base 160,000",)
    gemma = tiny_lm("gemma3_text").layer_strip
    assert gemma[2].details == ("base 1,000,000, linear scaling",)
    llama4 = tiny_lm("llama4_text").layer_strip
    assert llama4[0].span == "chunks of 16 tokens" and llama4[3].span == "full attention"
    assert not tiny_lm("llama").layer_strip  # every layer alike: no strip


def test_nope_layers_say_what_they_are(tiny_lm):
    nope = tiny_lm("smollm3").encoding("NoPE")
    assert nope.layers == (3,) and not nope.has_vectors and not nope.has_bias
    assert nope.describe().startswith("No positional encoding (NoPE) in layer 3")
    assert tiny_lm("smollm3").family.positional  # the model knows order: its other layers rotate
    rotary = tiny_lm("smollm3").encoding("rotary").describe()
    assert "queries and keys of layers 0, 1 and 2 are rotated" in rotary


def test_nope_layers_attend_by_content_only(tiny_lm):
    """The NoPE layer's attention pattern is the same whatever positions the rotary module is given
    (shifted ids change nothing there), while a rotary layer's is shift invariant but not position free."""
    lm = tiny_lm("smollm3")
    ids = torch.tensor([[101, 2000, 2001, 2002, 2003, 102]])
    with torch.no_grad():
        base = lm.model(ids, output_attentions=True)
        hidden = lm.model(ids, output_hidden_states=True).hidden_states
    layer = lm.model.layers[3]
    with torch.no_grad():
        q = layer.self_attn.q_proj(layer.input_layernorm(hidden[3]))
        k = layer.self_attn.k_proj(layer.input_layernorm(hidden[3]))
    heads, kv = lm.config.num_attention_heads, lm.config.num_key_value_heads
    q = q.view(1, -1, heads, 8).transpose(1, 2)
    k = k.view(1, -1, kv, 8).transpose(1, 2).repeat_interleave(heads // kv, dim=1)
    scores = (q @ k.transpose(-1, -2)) * 8 ** -0.5
    mask = torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)
    expected = scores.masked_fill(mask, float("-inf")).softmax(-1)  # no rotation anywhere
    torch.testing.assert_close(base.attentions[3], expected, rtol=1e-5, atol=1e-6)


def test_gpt_oss_sinks_are_its_parameters(tiny_lm):
    lm = tiny_lm("gpt_oss")
    sinks = lm.encoding("attention sinks")
    own = np.stack([layer.self_attn.sinks.detach().numpy() for layer in lm.model.layers])
    np.testing.assert_array_equal(sinks.logits, own)
    assert sinks.signature().series["largest"].tolist() == own.max(axis=1).tolist()
    # the rows over real tokens sum to less than one, as its attention computes, and posviz's reading
    # (its eager attention by blocks of queries) gives the same weights
    ids = lm.tokenizer("a b", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        own_rows = lm.model(ids, output_attentions=True).attentions[1][0]  # [heads, queries, keys]
    assert (own_rows.sum(-1) < 1 - 1e-3).all()
    patterns = posviz.read_attention(lm, "a b").layer(1).patterns
    np.testing.assert_allclose(patterns, own_rows.numpy(), rtol=1e-5, atol=1e-6)


def test_gpt_oss_rotary_is_yarn(tiny_lm):
    enc = tiny_lm("gpt_oss").encodings[0]
    assert enc.rope_type == "yarn" and enc.theta == 150_000
    np.testing.assert_allclose(enc.frequencies, tiny_lm("gpt_oss").model.rotary_emb.inv_freq.double().numpy(),
                               rtol=1e-5)


def test_mrope_bands_are_the_sections(tiny_lm):
    lm = tiny_lm("qwen2_vl")
    enc = lm.encodings[0]
    assert enc.multimodal
    assert [b.tolist() for b in enc.bands] == [[0], [1], [2, 3]]  # mrope_section [1, 1, 2]
    assert enc.band_names == ("temporal section (1 pair)", "height section (1 pair)", "width section (2 pairs)")
    # a temporal step alone turns only the temporal pair, as the module's own recomposition does
    rotary = lm.model.language_model.rotary_emb
    ids = torch.tensor([[[3]], [[0]], [[0]]])
    with torch.no_grad():
        cos, sin = rotary(torch.zeros(1), ids)
    half = cos.shape[-1] // 2
    assert torch.nonzero(sin[0, 0, :half]).flatten().tolist() == [0]
    assert "M-RoPE" in enc.describe()


def test_deepseek_rotates_part_of_each_head(tiny_lm):
    enc = tiny_lm("deepseek_v3").encodings[0]
    assert (enc.rotary_dim, enc.head_dim, enc.style) == (8, 16, "interleaved")
    assert "over the first 8 of 16 dimensions per head" in enc.describe()


@pytest.mark.parametrize("family", ["smollm3", "modernbert"])
def test_word_order_removal_takes_out_every_rotary_layer(family, tiny_lm):
    """With posviz's patches on, the model's own rotary module gives no rotation to any layer type."""
    lm = tiny_lm(family)
    rotary = lm.model.rotary_emb
    with hooked(patches=lm.family.removal(lm.model)):
        for layer_type in ROTARY[family].values():
            args = (layer_type,) if layer_type else ()
            cos, sin = rotary(torch.zeros(1), torch.arange(5)[None], *args)
            assert torch.equal(cos, torch.ones_like(cos)) and torch.equal(sin, torch.zeros_like(sin))
