"""Every positional scheme posviz shows, checked against the model's own code or the reference values.

Tiny checkpoints are built by ``tests/support/tiny_models.py`` (``SCHEME_FAMILIES`` and ``FAMILIES``),
saved, and loaded through ``posviz.load_model(str(path))``. The ground truth is never a copy of posviz's
formula: it is the family's own rotary module and ``apply_rotary_pos_emb``, its own ALiBi builder, its
own ``compute_bias`` / ``_relative_position_bucket`` / ``compute_position_bias``, the tables its modules
hold (and what they output in a forward pass), ``get_rel_embedding()``, or the reference values of
``docs/references.md``.
"""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

import posviz
from tests.support import sinusoid
from tests.support.reference import Capture, random_ids, run_model
from tests.support.tiny_models import SCHEME_FAMILIES


# ----------------------------------------------------------------------------------------- rotary

# family -> (path of the first attention layer (it knows its own rotary width), attribute holding that width)
_ROTARY = {
    "llama": ("layers.0.self_attn", "head_dim"),
    "llama-scaled": ("layers.0.self_attn", "head_dim"),
    "llama-yarn": ("layers.0.self_attn", "head_dim"),
    "gpt_neox": ("layers.0.attention", "rotary_ndims"),
    "phi": ("layers.0.self_attn", "rotary_ndims"),
    "gptj": ("h.0.attn", "rotary_dim"),
    "falcon": ("h.0.self_attention", "head_dim"),
}
_EXPECTED_ROTARY_DIM = {  # partial factor x head_dim, from the conftest configs
    "llama": 8, "llama-scaled": 8, "llama-yarn": 8,
    "gpt_neox": 4,  # 0.25 x 16
    "phi": 8,  # 0.5 x 16
    "gptj": 8,  # rotary_dim 8 < head_dim 16
    "falcon": 8,
}
_POSITIONS = np.array([0, 1, 2, 3, 5, 8, 13, 21, 40, 64, 100, 127])


def _own_rotation(family: str, model, positions: np.ndarray) -> tuple[torch.Tensor, int, int]:
    """R[j, i, :] = R_{p_i} e_j for the basis vectors e_j of one head, rotated by the family's
    own rotary module and its own apply function, as its attention layer calls them.

    Returns (R float64 [head_dim, n, head_dim], head_dim, rotary width the layer slices)."""
    attn_path, width_attr = _ROTARY[family]
    attn = model.get_submodule(attn_path)
    head_dim = int(getattr(attn, "head_dim", None) or attn.head_size)
    width = int(getattr(attn, width_attr))
    n = len(positions)
    ids = torch.as_tensor(positions, dtype=torch.long)[None, :]
    probe = torch.zeros(1, dtype=torch.float32)
    basis = torch.eye(head_dim, dtype=torch.float32)
    with torch.no_grad():
        if family == "gptj":
            from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb

            sin, cos = model.rotary_emb(probe, ids)  # GPT-J's module returns (sin, cos) from embed_positions
            # its layout: [batch, seq, heads, dim]; the basis index plays the part of the head
            x = basis[None, None].expand(1, n, head_dim, head_dim)
            rot = apply_rotary_pos_emb(x[..., :width], sin, cos)  # the layer rotates the first rotary_dim
            out = torch.cat([rot, x[..., width:]], dim=-1)[0].permute(1, 0, 2)
        else:
            cos, sin = model.rotary_emb(probe, ids)
            x = basis[None, :, None, :].expand(1, head_dim, n, head_dim)  # [batch, heads=j, seq, dim]
            if family == "gpt_neox":
                from transformers.models.gpt_neox.modeling_gpt_neox import apply_rotary_pos_emb

                out, _ = apply_rotary_pos_emb(x, x, cos, sin)  # splits rotated / passed dims itself
            elif family == "phi":
                from transformers.models.phi.modeling_phi import apply_rotary_pos_emb

                rot, _ = apply_rotary_pos_emb(x[..., :width], x[..., :width], cos, sin)  # the layer slices
                out = torch.cat([rot, x[..., width:]], dim=-1)
            elif family == "falcon":
                from transformers.models.falcon.modeling_falcon import apply_rotary_pos_emb

                out, _ = apply_rotary_pos_emb(x, x, cos, sin)
            else:
                from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

                out, _ = apply_rotary_pos_emb(x, x, cos, sin)
            out = out[0]
    return out.double(), head_dim, width


@pytest.mark.parametrize("family", list(_ROTARY))
def test_rotary_kernel_is_the_models_own_rotation(family, tiny_lm, reference):
    model, _ = reference(family)
    enc = tiny_lm(family).encodings[0]
    assert isinstance(enc, posviz.RotaryEncoding)
    assert enc.scheme == "rotary"

    rotated, head_dim, width = _own_rotation(family, model, _POSITIONS)
    r = enc.rotary_dim
    assert r == width == _EXPECTED_ROTARY_DIM[family]

    # The dims the model does not rotate come out unchanged: the rotary width is the model's.
    eye = torch.eye(head_dim, dtype=torch.float64)
    for j in range(r, head_dim):
        np.testing.assert_allclose(rotated[j].numpy(), eye[j].expand(len(_POSITIONS), -1).numpy(), atol=1e-6)

    # Identity: on the rotated dims the model applies R_m = s * blockdiag(rotation by m*theta_i), s its
    # attention_scaling (1 unless YaRN & co.). Passed dims do not mix into rotated ones, so
    #   sum_{j < r} (R_m e_j) . (R_n e_j) = trace of the r x r block of R_m^T R_n
    #                                    = s^2 * sum_i 2 cos((m - n) theta_i) = 2 s^2 K(m, n),
    # and posviz's vectors [s cos(p theta), s sin(p theta)] give vectors(m) . vectors(n) = s^2 K(m, n).
    own = torch.einsum("jmd,jnd->mn", rotated[:r], rotated[:r]).numpy()
    v = enc.vectors(_POSITIONS).double().cpu()
    kernel = (v @ v.T).numpy()
    assert v.shape == (len(_POSITIONS), r)
    np.testing.assert_allclose(own, 2 * kernel, atol=2e-5)

    s = float(getattr(model.rotary_emb, "attention_scaling", 1.0))
    np.testing.assert_allclose(np.diag(kernel), s * s * r / 2, rtol=1e-5)
    # a band of frequencies is a part of the kernel; the bands add up to the whole
    low, high = enc.vectors(_POSITIONS, band=slice(0, 1)).double(), enc.vectors(_POSITIONS, band=slice(1, None)).double()
    np.testing.assert_allclose((low @ low.T + high @ high.T).numpy(), kernel, atol=1e-5)


@pytest.mark.parametrize("family", [f for f in _ROTARY if f != "gptj"])
def test_rotary_frequencies_are_the_modules_inv_freq(family, tiny_lm, reference):
    model, _ = reference(family)
    enc = tiny_lm(family).encodings[0]
    inv_freq = model.rotary_emb.inv_freq.double().numpy()  # computed by transformers from the config
    assert enc.frequencies.shape == inv_freq.shape == (enc.rotary_dim // 2,)
    np.testing.assert_allclose(enc.frequencies, inv_freq, rtol=1e-5)


def test_gptj_frequencies_are_its_embed_positions(tiny_lm, reference):
    model, _ = reference("gptj")
    enc = tiny_lm("gptj").encodings[0]
    sin, cos = model.rotary_emb.embed_positions[1].double().chunk(2)  # GPT-J's own table, row of position 1
    np.testing.assert_allclose(enc.frequencies, np.arctan2(sin.numpy(), cos.numpy()), rtol=1e-6)
    assert enc.style == "interleaved"


def test_rope_base_and_linear_scaling_are_read(tiny_lm, reference):
    """rope_parameters {rope_theta 500000, linear factor 4}: the module's inv_freq, and the RoPE
    formula of the reference (inv_freq = 1 / base^(2i/dim)) divided by the linear factor."""
    model, _ = reference("llama-scaled")
    enc = tiny_lm("llama-scaled").encodings[0]
    np.testing.assert_allclose(enc.frequencies, model.rotary_emb.inv_freq.double().numpy(), rtol=1e-5)
    dim = 8
    expected = 1.0 / 500000.0 ** (np.arange(0, dim, 2) / dim) / 4.0
    np.testing.assert_allclose(enc.frequencies, expected, rtol=1e-5)
    default = tiny_lm("llama").encodings[0].frequencies
    assert not np.allclose(enc.frequencies, default)
    assert enc.theta == 500000.0 and enc.rope_type == "linear"
    assert "500000" in enc.describe() and "linear" in enc.describe()


def test_yarn_scaling_is_in_the_kernel(tiny_lm, reference):
    model, _ = reference("llama-yarn")
    s = float(model.rotary_emb.attention_scaling)
    assert s != pytest.approx(1.0)  # so the kernel test above really covers s^2
    enc = tiny_lm("llama-yarn").encodings[0]
    v = enc.vectors(np.array([5])).double()
    assert float(v @ v.T) == pytest.approx(s * s * enc.rotary_dim / 2, rel=1e-5)


# ------------------------------------------------------------------------------------------ ALiBi

_REFERENCE_SLOPES = {  # docs/references.md, "Reference values"
    8: [2.0 ** -k for k in range(1, 9)],
    12: [2.0 ** -k for k in range(1, 9)] + [2.0 ** -0.5, 2.0 ** -1.5, 2.0 ** -2.5, 2.0 ** -3.5],
    16: [2.0 ** (-k / 2) for k in range(1, 17)],
}


@pytest.mark.parametrize("heads", [8, 12, 16])
def test_bloom_slopes_are_the_reference_values(heads, tiny_lm):
    enc = tiny_lm(f"bloom-{heads}").encodings[0]
    assert isinstance(enc, posviz.AlibiBias)
    assert enc.slopes.shape == (heads,)
    np.testing.assert_allclose(enc.slopes, _REFERENCE_SLOPES[heads], rtol=1e-6)


def _builder(family: str, model, heads: int, n: int) -> np.ndarray:
    """The family's own ALiBi tensor for keys 0 .. n-1, [heads, n] (slope x key, up to a constant)."""
    if family.startswith("bloom"):
        from transformers.models.bloom.modeling_bloom import build_alibi_tensor

        return build_alibi_tensor(torch.ones(1, n, dtype=torch.long), heads, torch.float32).reshape(heads, n).numpy()
    if family.startswith("falcon"):
        from transformers.models.falcon.modeling_falcon import build_alibi_tensor

        # eager FalconAttention adds it before the 1/sqrt(head_dim) scaling and again, scaled, in the mask
        scale = 2 / (model.config.hidden_size // heads) ** 0.5
        return scale * build_alibi_tensor(torch.ones(1, n, dtype=torch.long), heads, torch.float32).reshape(heads, n).numpy()
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    bias_max = model.config.attn_config.alibi_bias_max
    return build_mpt_alibi_tensor(heads, n, bias_max).reshape(heads, n).float().numpy()


@pytest.mark.parametrize("family", ["bloom", "bloom-8", "bloom-12", "bloom-16", "mpt", "mpt-12", "falcon-alibi"])
def test_alibi_bias_rows_are_the_models_builder(family, tiny_lm, reference):
    model, _ = reference(family)
    lm = tiny_lm(family)
    assert lm.scheme == "alibi"
    enc = lm.encodings[0]
    assert isinstance(enc, posviz.AlibiBias)
    heads = lm.num_heads
    n = 40
    bias = enc.bias(np.arange(n))
    assert bias.shape == (heads, n, n) and bias.dtype == np.float32
    own = _builder(family, model, heads, n)
    lower = np.tril(np.ones((n, n), dtype=bool))
    assert np.isnan(bias[:, ~lower]).all() and np.isfinite(bias[:, lower]).all()
    np.testing.assert_allclose(np.diagonal(bias, axis1=1, axis2=2), 0.0, atol=1e-6)  # -slope * (m - m)
    # over the keys n <= m, each row differs from the model's own tensor by a constant (softmax removes it)
    for m in range(1, n):
        diff = bias[:, m, : m + 1].astype(np.float64) - own[:, : m + 1]
        spread = diff.max(axis=1) - diff.min(axis=1)
        assert (spread < 1e-4 * max(1, m)).all(), (m, spread)
    # and it is not flat: the per-key steps are the model's slopes
    np.testing.assert_allclose(np.diff(bias[:, n - 1, :], axis=1), np.diff(own, axis=1), atol=1e-4)


def test_falcon_alibi_is_what_its_eager_attention_applies(tiny_lm, reference):
    """With the query/key weights zeroed, Falcon's attention is softmax of the ALiBi bias alone.
    The weights are zeroed on a copy: the session's reference model stays as saved."""
    model = copy.deepcopy(reference("falcon-alibi")[0])
    enc = tiny_lm("falcon-alibi").encodings[0]
    attention = model.h[0].self_attention
    with torch.no_grad():
        attention.query_key_value.weight.zero_()
        if attention.query_key_value.bias is not None:
            attention.query_key_value.bias.zero_()
        n = 12
        out = model(input_ids=random_ids(n), attention_mask=torch.ones(1, n, dtype=torch.long), output_attentions=True)
    probs = out.attentions[0][0].double().numpy()  # [heads, n, n]
    bias = enc.bias(np.arange(n)).astype(np.float64)
    for m in range(n):
        row = np.exp(bias[:, m, : m + 1] - bias[:, m, : m + 1].max(axis=1, keepdims=True))
        np.testing.assert_allclose(probs[:, m, : m + 1], row / row.sum(axis=1, keepdims=True), atol=1e-5)
    assert reference("falcon-alibi")[0].h[0].self_attention.query_key_value.weight.abs().max() > 0


def test_mpt_alibi_is_what_its_attention_adds(tiny_lm, reference):
    """The MPT model passes its builder's tensor to every layer as position_bias."""
    model, _ = reference("mpt")
    enc = tiny_lm("mpt").encodings[0]
    n = 24
    seen = {}

    def hook(_mod, args, kwargs):
        seen["bias"] = kwargs.get("position_bias", args[1] if len(args) > 1 else None)

    handle = model.blocks[0].attn.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            model(input_ids=random_ids(n), attention_mask=torch.ones(1, n, dtype=torch.long))
    finally:
        handle.remove()
    own = seen["bias"].float().numpy().reshape(model.config.n_heads, -1)[:, -n:]  # keys of the last n positions
    bias = enc.bias(np.arange(n))
    row = bias[:, n - 1, :].astype(np.float64)
    diff = row - own
    assert (diff.max(axis=1) - diff.min(axis=1) < 1e-4).all()


# ------------------------------------------------------------------------------------------- T5

def _t5_encodings(tiny_lm):
    encs = tiny_lm("t5").encodings
    assert [type(e) for e in encs] == [posviz.RelativeBias, posviz.RelativeBias]
    by = {e.component: e for e in encs}
    assert set(by) == {"encoder", "decoder"}
    assert not by["encoder"].causal and by["decoder"].causal
    return by


@pytest.mark.parametrize("stack", ["encoder", "decoder"])
def test_t5_bias_is_compute_bias(stack, tiny_lm, reference):
    model, _ = reference("t5")
    enc = _t5_encodings(tiny_lm)[stack]
    layer = getattr(model, stack).block[0].layer[0].SelfAttention
    n = 150  # beyond max_distance 128
    with torch.no_grad():
        own = layer.compute_bias(n, n)[0].numpy()  # [heads, query, key]
    bias = enc.bias(np.arange(n))
    assert bias.shape == own.shape == (4, n, n)
    if stack == "decoder":  # keys after the query are masked: NaN in posviz, compare where defined
        upper = np.triu(np.ones((n, n), dtype=bool), k=1)
        assert np.isnan(bias[:, upper]).all()
        assert np.isfinite(bias[:, ~upper]).all()
        np.testing.assert_array_equal(bias[:, ~upper], own[:, ~upper])
    else:
        np.testing.assert_array_equal(bias, own)
    # by_offset(k) is the bias of query 0 against key k
    np.testing.assert_array_equal(enc.by_offset(np.arange(n)), own[:, 0, :])
    np.testing.assert_array_equal(enc.by_offset(-np.arange(n)), own[:, :, 0])
    assert enc.table.shape == (32, 4)


@pytest.mark.parametrize("stack", ["encoder", "decoder"])
def test_t5_buckets_are_the_models_own(stack, tiny_lm):
    from transformers.models.t5.modeling_t5 import T5Attention

    enc = _t5_encodings(tiny_lm)[stack]
    rel = np.arange(-400, 401)
    own = T5Attention._relative_position_bucket(torch.as_tensor(rel), bidirectional=stack == "encoder",
                                                num_buckets=32, max_distance=128).numpy()
    np.testing.assert_array_equal(enc.buckets(rel), own)
    assert enc.buckets(rel.reshape(1, -1, 1)).shape == (1, rel.size, 1)


def _changes(b: np.ndarray, ks: np.ndarray) -> list[int]:
    return [int(k) for k, prev, cur in zip(ks[1:], b[:-1], b[1:]) if cur != prev]


def test_t5_bidirectional_bucket_edges(tiny_lm):
    """docs/references.md, "Reference values" (bidirectional, 32 buckets, max_distance 128)."""
    enc = _t5_encodings(tiny_lm)["encoder"]
    assert enc.buckets(np.array([0]))[0] == 0
    np.testing.assert_array_equal(enc.buckets(-np.arange(1, 8)), np.arange(1, 8))
    np.testing.assert_array_equal(enc.buckets(np.array([-8, -9, -10])), [8, 8, 8])
    np.testing.assert_array_equal(enc.buckets(np.arange(1, 8)), np.arange(17, 24))
    np.testing.assert_array_equal(enc.buckets(np.array([8, 9])), [24, 24])
    ks = np.arange(0, 2001)
    assert _changes(enc.buckets(ks), ks) == [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 23, 32, 46, 64, 91]
    assert (enc.buckets(np.arange(91, 2001)) == 31).all()
    assert enc.buckets(np.array([90]))[0] == 30


def test_t5_causal_bucket_edges(tiny_lm):
    """docs/references.md, "Reference values": decoder (causal) buckets change at |rel| = 1..16, 19, 21, ..., 113."""
    enc = _t5_encodings(tiny_lm)["decoder"]
    ks = np.arange(0, 2001)
    b = enc.buckets(-ks)
    assert _changes(b, ks) == list(range(1, 17)) + [19, 21, 24, 27, 31, 35, 40, 46, 52, 59, 67, 77, 87, 99, 113]
    assert (b[113:] == 31).all()
    assert (enc.buckets(np.arange(1, 50)) == 0).all()  # keys after the query: one (masked) bucket


# ----------------------------------------------------------------------------------------- MPNet

def test_mpnet_absolute_table_takes_row_p_plus_2(tiny_lm, reference):
    model, _ = reference("mpnet")
    spec = SCHEME_FAMILIES["mpnet"]
    encs = tiny_lm("mpnet").encodings
    assert [type(e) for e in encs] == [posviz.PositionEmbeddings, posviz.RelativeBias]
    table, rel = encs
    assert table.offset == 2 and table.source == spec.position_module and table.scheme == "learned_absolute"
    assert table.matrix.shape == (spec.max_tokens, 32)
    n = spec.max_tokens
    ids = random_ids(n)
    with Capture(model) as cap:
        cap.output_of(spec.position_module)
        run_model(model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}, encoder_decoder=False)
    np.testing.assert_array_equal(table.matrix, cap.outputs[spec.position_module][0].numpy())
    stored = model.get_submodule(spec.position_module).weight.detach().numpy()
    assert not np.allclose(table.matrix[0], stored[0])


def test_mpnet_relative_bias_is_compute_position_bias(tiny_lm, reference):
    model, _ = reference("mpnet")
    rel = tiny_lm("mpnet").encodings[1]
    assert isinstance(rel, posviz.RelativeBias) and rel.component == "relative bias" and not rel.causal
    n = 60
    with torch.no_grad():
        own = model.encoder.compute_position_bias(torch.zeros(1, n, 32))[0].numpy()
    np.testing.assert_array_equal(rel.bias(np.arange(n)), own)
    offsets = np.arange(-300, 301)
    np.testing.assert_array_equal(
        rel.buckets(offsets), model.encoder.relative_position_bucket(torch.as_tensor(offsets)).numpy())


def test_t5_encoder_bias_names_its_one_unused_row(tiny_lm):
    """T5's 32 buckets over both directions within 512 positions: 31 are added, and the text says the one
    other row is never used (in words for one row: "the other row is", not "the other 1 are")."""
    rel = tiny_lm("t5").encodings[0]
    assert (rel.table.shape[0], rel.used_buckets) == (32, 31)
    assert "adds only 31 of them: the other row is never used, and not shown." in rel.describe()


def test_mpnet_bias_is_what_the_forward_adds_when_the_table_has_more_buckets(tmp_path):
    """A table of 64 buckets: MPNetEncoder.forward still buckets with compute_position_bias' default (32), so
    the bias shown is the one captured from the forward pass, and the text says 32 rows are never used."""
    from tests.support.tiny_models import build_tiny, tiny_config

    config = tiny_config("mpnet")
    config.relative_attention_num_buckets = 64
    lm = posviz.load_model(str(build_tiny("mpnet", tmp_path, config=config)))
    encoder = lm.model.encoder
    captured = []
    own = encoder.compute_position_bias
    encoder.compute_position_bias = lambda *a, **k: captured.append(own(*a, **k)) or captured[-1]
    try:
        ids = torch.tensor([[0, *range(5, 25), 2]])
        with torch.no_grad():
            lm.model(input_ids=ids, attention_mask=torch.ones_like(ids))
    finally:
        del encoder.compute_position_bias
    rel = lm.encodings[1]
    reach = torch.arange(-(lm.max_tokens - 1), lm.max_tokens)
    used = encoder.relative_position_bucket(reach, num_buckets=32).unique().numel()  # within its 64 positions
    assert rel.table.shape[0] == 64 and rel.used_buckets == used < 32
    np.testing.assert_array_equal(rel.bias(np.arange(22)), captured[0][0].numpy())
    assert f"The table has 64 rows, but the model's forward pass adds only {used} of them" in rel.describe()


# ------------------------------------------------------------------------------------ sinusoidal

_SINUSOIDS = {  # family -> (layout, offset, attribute holding the table)
    "marian": ("halves", 0, "weight"),
    "pegasus": ("halves", 0, "weight"),
    "m2m_100": ("t2t", 2, "weights"),
    "xlm-sin": ("interleaved", 0, "weight"),
    "distilbert-sin": ("interleaved", 0, "weight"),
}


@pytest.mark.parametrize("family", list(_SINUSOIDS))
def test_sinusoid_tables_are_the_modules_and_the_formula(family, tiny_lm, reference):
    layout, offset, attr = _SINUSOIDS[family]
    spec = SCHEME_FAMILIES[family]
    model, _ = reference(family)
    lm = tiny_lm(family)
    assert lm.scheme == "sinusoidal"
    pe = lm.encodings[0]
    assert isinstance(pe, posviz.PositionEmbeddings)
    assert pe.scheme == "sinusoidal" and pe.sinusoid == layout and pe.offset == offset
    assert pe.source == spec.position_module
    held = getattr(model.get_submodule(spec.position_module), attr).detach().float().numpy()
    assert pe.matrix.dtype == np.float32 and pe.matrix.shape == (held.shape[0] - offset, 32)
    np.testing.assert_array_equal(pe.matrix, held[offset:])
    # float32 module against the float64 formula. M2M100's buffer row r is PE(r) and the model reads
    # row p + 2 at position p (padding_idx + 1 + p), so the vector it adds at p is PE(p + 2): the
    # formula's rows from the offset on.
    n_rows = pe.matrix.shape[0]
    np.testing.assert_allclose(pe.matrix, posviz.sinusoidal(n_rows + offset, 32, layout)[offset:], atol=1e-5)
    other = "halves" if layout == "interleaved" else "interleaved"
    assert not np.allclose(pe.matrix, posviz.sinusoidal(n_rows + offset, 32, other)[offset:], atol=1e-3)

    # and it is what the module adds in a forward pass, row p at 0-based position p
    n = spec.max_tokens
    ids = random_ids(n)
    with Capture(model) as cap:
        cap.output_of(spec.position_module)
        run_model(model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)},
                  encoder_decoder=spec.encoder_decoder)
    added = cap.outputs[spec.position_module].float().numpy().reshape(-1, n, 32)[0]
    np.testing.assert_array_equal(added, pe.matrix[:n])


# -------------------------------------------------------------------- sinusoid reference values


def test_sinusoid_reference_values():
    """The reference values of docs/references.md, each asserted here and only here, on the sinusoid
    computed from its formula (tests/support/sinusoid.py); other tests compare posviz with that.

    Vaswani et al. (2017): PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(p / 10000^(2i/d)), so
    PE_i . PE_j = sum_k cos((i - j) w_k) with w_k = 10000^(-2k/d): G = P P^T depends on i - j only,
    G[i, i] = d/2. 512 positions, d = 768 unless said otherwise.
    """
    g = sinusoid.gram(512, 768)
    curve = sinusoid.offset_curve(512, 768)  # g(k) from the closed form, k = 0 .. 511
    for k in range(512):  # the identity: every diagonal of P P^T is g(k), whatever the start position
        np.testing.assert_allclose(np.diagonal(g, k), curve[k], atol=1e-9, err_msg=str(k))
    assert curve[0] == pytest.approx(384.0, abs=1e-9)  # G[i, i] = d/2
    assert curve[1] == pytest.approx(373.770, abs=1e-3)  # G[i, i + 1]
    assert curve[5] == pytest.approx(284.562, abs=1e-3)
    assert curve[50] == pytest.approx(196.608, abs=1e-3)

    # the row profile r(j) = G[q, j] / max_j G[q, j] for q = 128, at j = q + k
    r = g[128] / g[128].max()
    for k, want in zip((1, 2, 5, 10, 50, 127), (0.9734, 0.9061, 0.7410, 0.6800, 0.5120, 0.4104)):
        assert r[128 + k] == pytest.approx(want, abs=6e-5), k
    assert int(np.argmin(r)) == 509 and r.min() == pytest.approx(0.2744, abs=6e-5)
    # the same profile of posviz's tensor2tensor layout (sin of every frequency, then cos; w_k = 10000^(-k/(d/2 - 1)))
    t2t = posviz.sinusoidal(512, 768, "t2t").astype(np.float64)
    r2 = (t2t[128] @ t2t.T) / (t2t[128] @ t2t.T).max()
    for k, want in zip((1, 2, 5, 10, 50, 127), (0.9734, 0.9064, 0.7417, 0.6809, 0.5133, 0.4120)):
        assert r2[128 + k] == pytest.approx(want, abs=6e-5), k

    # the dot product by offset falls until k = 43 and first rises again between k = 43 and 44
    for d in (512, 768):
        by_offset = sinusoid.offset_curve(512, d)
        assert (np.diff(by_offset[:44]) < 0).all() and by_offset[44] > by_offset[43], d
        assert sinusoid.first_rise(by_offset) == 43, d
    # Spearman(offset, g) over k = 1 .. 511
    assert spearmanr(np.arange(1, 512), curve[1:]).statistic == pytest.approx(-0.9844, abs=6e-5)


@pytest.mark.parametrize("d", [512, 768])
def test_sinusoidal_is_the_formula(d):
    """posviz.sinusoidal's interleaved layout is the formula (float32), so its Gram matrix is the
    formula's; "halves" (sin of every frequency, then cos) is a permutation of its columns."""
    want = sinusoid.vaswani(512, d)
    inter = posviz.sinusoidal(512, d)
    assert inter.shape == (512, d) and inter.dtype == np.float32
    np.testing.assert_allclose(inter, want, atol=1e-6)
    inter64 = inter.astype(np.float64)
    g = inter64 @ inter64.T
    np.testing.assert_allclose(g, want @ want.T, atol=1e-3)
    for k in (1, 5, 50, 200):  # every diagonal constant, in float32 too
        diag = np.diagonal(g, k)
        assert diag.max() - diag.min() < 1e-3, k
    halves = posviz.sinusoidal(512, d, "halves")
    np.testing.assert_allclose(halves, np.concatenate([want[:, 0::2], want[:, 1::2]], axis=1), atol=1e-6)
    halves64 = halves.astype(np.float64)
    np.testing.assert_allclose(halves64 @ halves64.T, g, atol=1e-6)
    assert not np.allclose(inter, halves)  # a column permutation, not the same matrix
    assert posviz.sinusoidal(4, 6).dtype == np.float32
    for bad in [dict(width=7), dict(width=8, layout="zigzag")]:
        with pytest.raises(ValueError):
            posviz.sinusoidal(4, **bad)


# --------------------------------------------------------------------------------------- DeBERTa

def test_deberta_relative_embeddings_are_get_rel_embedding(tiny_lm, reference):
    model, _ = reference("deberta-v2")
    lm = tiny_lm("deberta-v2")
    assert lm.scheme == "relative_embeddings"
    encs = lm.encodings
    assert [type(e) for e in encs] == [posviz.RelativeEmbeddings]  # no absolute table (position_biased_input False)
    enc = encs[0]
    assert getattr(model.embeddings, "position_embeddings", None) is None
    assert enc.num_positions == 2 * model.config.position_buckets == 32
    with torch.no_grad():
        own = model.encoder.get_rel_embedding().numpy()
    got = enc.vectors(np.arange(enc.num_positions)).cpu().numpy()
    np.testing.assert_allclose(got, own, atol=1e-6)
    # norm_rel_ebd="layer_norm": the encoder's LayerNorm is applied, so this is not the raw table
    assert not np.allclose(own, model.encoder.rel_embeddings.weight.detach().numpy(), atol=1e-3)
    assert enc.first_label == -16


# ----------------------------------------------------------------------------------- describe()

_PAPERS = {  # scheme -> (author, year) the description must name
    "learned_absolute": ("Devlin", "2019"),
    "sinusoidal": ("Vaswani", "2017"),
    "rotary": ("Su", "2021"),
    "alibi": ("Press", "2022"),
    "relative_bias": ("Raffel", "2020"),
    "relative_embeddings": ("He", "2021"),
}


@pytest.mark.parametrize("family", ["bert", "llama", "bloom", "t5"] + list(SCHEME_FAMILIES))
def test_describe_names_paper_and_source(family, tiny_lm):
    encs = tiny_lm(family).encodings
    assert encs
    for enc in encs:
        text = enc.describe()
        author, year = _PAPERS[enc.scheme]
        assert re.search(rf"\b{author}\b.*\b{year}\b", text), (enc.scheme, text)
        assert enc.source and f"`{enc.source}`" in text, (enc.source, text)
        assert isinstance(enc.formula, str) and enc.formula
        assert enc.num_positions > 0


# ------------------------------------------------------------------------------------ known gaps


def test_mpt_max_tokens_is_max_seq_len(tiny_lm):
    lm = tiny_lm("mpt")
    assert lm.max_tokens == lm.config.max_seq_len == 64
    assert lm.encodings[0].num_positions == 64


def test_whisper_encoder_positions_are_its_t2t_sinusoid(tmp_path):
    """Whisper's encoder holds a fixed tensor2tensor sinusoid (``sinusoids`` in modeling_whisper);
    posviz reads the module's own weights and calls them sinusoidal."""
    from transformers import AutoModel, AutoTokenizer, WhisperConfig

    config = WhisperConfig(vocab_size=30522, d_model=32, encoder_layers=1, decoder_layers=1,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=37,
                           decoder_ffn_dim=37, max_source_positions=64, max_target_positions=64, num_mel_bins=8,
                           pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=3)
    model = AutoModel.from_config(config)
    model.save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(posviz.loading.bundled_model_path()).save_pretrained(tmp_path)
    lm = posviz.load_model(str(tmp_path))
    enc = lm.encodings[0]
    assert lm.scheme == "sinusoidal" and enc.sinusoid == "t2t" and enc.source == "encoder.embed_positions"
    np.testing.assert_array_equal(enc.matrix, model.encoder.embed_positions.weight.detach().numpy())
    np.testing.assert_allclose(enc.matrix, posviz.sinusoidal(64, 32, "t2t"), atol=1e-5)
