"""Speech encoders and the schemes of their own, each against the model's own modules on a tiny random config.

wav2vec2, HuBERT, WavLM (convolutional positions; WavLM's relative bias), Whisper (encoder sinusoid and
decoder table), Mamba, Mamba-2, Falcon-Mamba, RWKV (no positional encoding), XLNet (relative sinusoid),
Reformer (axial table), CTRL and XGLM (sinusoids). Checkpoints come from ``tests/support/tiny_speech.py``
(conftest's ``tiny_path``). The ground truth is the model itself, loaded here with plain transformers:
its modules' weights and outputs in a forward pass (hooks), its ``compute_bias``, its
``relative_positional_encoding`` and ``rel_shift_bnij``; and the formula's values where there is one.
"""

from __future__ import annotations

import copy
import re
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModel

import posviz
from posviz.families import family_of
from posviz.hooks import hooked
from posviz.loading import LoadedModel
from posviz.positions.axial import AxialEmbeddings
from posviz.positions.base import PositionRemovalError
from posviz.positions.convolution import ConvolutionalPositions, tap_offsets
from posviz.positions.none import NoPositions, NoPositionsSpec
from posviz.positions.relative_sinusoid import RelativeSinusoid
from tests.support.reference import Capture, random_ids
from tests.support.tiny_speech import FAMILIES

CONV = ["wav2vec2", "hubert", "wavlm"]
RECURRENT = ["mamba", "mamba2", "falcon_mamba", "rwkv"]
TOL = dict(rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def path_of(tiny_path, tmp_path_factory):
    """path_of(family) -> the tiny model's folder; for the convolutional ones a copy whose weight-norm
    magnitudes g_t are scaled by random factors, as after training (at initialisation g_t = ‖v_t‖, so the
    effective weight would equal its direction v and a test could not tell them apart)."""
    cache = {}

    def get(family: str):
        if family not in cache:
            cache[family] = tiny_path(family)
            if family in CONV:
                model = AutoModel.from_pretrained(cache[family])
                with torch.no_grad():
                    g = model.encoder.pos_conv_embed.conv.parametrizations.weight.original0
                    g.mul_(0.5 + 1.5 * torch.rand(g.shape, generator=torch.Generator().manual_seed(2)))
                cache[family] = tmp_path_factory.mktemp(f"trained-{family}")
                model.save_pretrained(cache[family])
        return cache[family]

    return get


@pytest.fixture(scope="module")
def own(path_of):
    """own(family) -> the tiny model loaded with plain transformers (eager attention, eval): the ground truth.
    Shared by the module: a test that changes it works on a copy."""
    cache = {}

    def get(family: str):
        if family not in cache:
            cache[family] = AutoModel.from_pretrained(path_of(family), attn_implementation="eager").eval()
        return cache[family]

    return get


@pytest.fixture(scope="module")
def loaded(own, path_of):
    """loaded(family) -> a posviz LoadedModel of the full tiny model (every weight, forward passes possible),
    built from posviz.loading's parts without a tokenizer (speech encoders have none)."""
    cache = {}

    def get(family: str) -> LoadedModel:
        if family not in cache:
            model = copy.deepcopy(own(family)).base_model.eval()
            cache[family] = LoadedModel(str(path_of(family)), None, model, None, family_of(model.config),
                                        torch.device("cpu"))
        return cache[family]

    return get


@pytest.fixture(scope="module")
def positions_only(path_of):
    """positions_only(family) -> ``posviz.load_model(folder, positions_only=True)`` (cached)."""
    cache = {}

    def get(family: str) -> LoadedModel:
        if family not in cache:
            cache[family] = posviz.load_model(str(path_of(family)), positions_only=True)
        return cache[family]

    return get


def _audio(n: int = 800, seed: int = 0) -> torch.Tensor:
    """[1, n] random samples: 800 samples give 79 frames through the tiny feature encoder."""
    return torch.randn(1, n, generator=torch.Generator().manual_seed(seed))


def _output(model, inputs: dict, patches=()) -> torch.Tensor:
    with hooked(patches=patches), torch.no_grad():
        return model(**inputs).last_hidden_state


# ------------------------------------------------------------------ convolutional positions


@pytest.mark.parametrize("family", CONV)
def test_conv_kernel_is_the_modules_effective_weight(family, own, loaded):
    conv = own(family).encoder.pos_conv_embed.conv
    enc = loaded(family).encodings[0]
    assert isinstance(enc, ConvolutionalPositions) and enc.scheme == "convolutional"
    assert enc.source == "encoder.pos_conv_embed.conv" and enc.groups == 4 and enc.weight_norm
    assert enc.kernel.shape == (32, 8, 16) and enc.kernel_size == 16
    np.testing.assert_array_equal(enc.kernel.numpy(), conv.weight.detach().numpy())  # the parametrized weight
    # weight norm over each tap (dim=2): W_t = g_t v_t / ||v_t||, so ||W_t|| = |g_t|
    g = conv.parametrizations.weight.original0.detach()
    v = conv.parametrizations.weight.original1.detach()
    np.testing.assert_allclose(enc.tap_norms(), g.abs().flatten().numpy(), **TOL)
    np.testing.assert_allclose(enc.kernel.numpy(), (g * v / v.norm(dim=(0, 1), keepdim=True)).numpy(), **TOL)
    assert not np.allclose(enc.kernel.numpy(), v.numpy(), atol=1e-3)  # not the raw parametrization


@pytest.mark.parametrize("family", CONV)
def test_conv_taps_read_the_offsets_shown(family, own, loaded):
    """An impulse at frame j through the module's own conv and same-pad layer: output frame i gets the
    kernel tap whose offset (posviz's) is j − i, and nothing beyond the taps' reach."""
    module = own(family).encoder.pos_conv_embed
    enc = loaded(family).encodings[0]
    n, j = 40, 20
    impulse = torch.randn(32, generator=torch.Generator().manual_seed(3))
    x = torch.zeros(1, 32, n)
    x[0, :, j] = impulse
    with torch.no_grad():
        out = module.padding(module.conv(x))[0] - module.conv.bias[:, None]  # [channels, n]
    offsets = enc.offsets
    np.testing.assert_array_equal(offsets, np.arange(-8, 8))
    for i in range(n):
        found = np.flatnonzero(offsets == j - i)
        if found.size:  # the grouped product of tap t alone with the impulse
            t = int(found[0])
            with torch.no_grad():
                want = torch.nn.functional.conv1d(impulse[None, :, None], enc.kernel[:, :, t:t + 1],
                                                  groups=enc.groups)[0, :, 0]
            np.testing.assert_allclose(out[:, i].numpy(), want.numpy(), **TOL)
        else:
            np.testing.assert_allclose(out[:, i].numpy(), 0.0, atol=1e-6)


def test_tap_offsets_odd_and_even():
    assert tap_offsets(128)[[0, -1]].tolist() == [-64, 63]  # wav2vec 2.0 base: 128 taps
    assert tap_offsets(5).tolist() == [-2, -1, 0, 1, 2]


@pytest.mark.parametrize("family", CONV)
def test_conv_signature_and_description(family, loaded):
    enc = loaded(family).encodings[0]
    assert not (enc.has_vectors or enc.has_bias)
    sig = enc.signature()
    assert sig.x_name == "offsets" and sig.name == "norm"
    np.testing.assert_array_equal(sig.x, np.arange(-8, 8))
    (norms,) = sig.series.values()
    np.testing.assert_array_equal(norms, enc.tap_norms())
    text = enc.describe()
    assert re.search(r"\bBaevski\b.*\b2020\b", text) and "`encoder.pos_conv_embed.conv`" in text
    for fact in ("width 16 frames", "4 groups of 8 channels", "offsets -8 … 7", "relatively", "content", "gelu"):
        assert fact.replace("-", "−") in text, fact


@pytest.mark.parametrize("family", CONV)
def test_conv_removal_is_the_model_without_its_convolution(family, own, loaded):
    """With the patch, the output is the model's own output with a zero convolution (GELU(0) = 0: nothing
    added), whatever the kernel holds; without it, the kernel matters."""
    lm = loaded(family)
    patches = lm.family.removal(lm.model)
    assert any("encoder.pos_conv_embed" in p.description for p in patches)
    inputs = {"input_values": _audio()}
    zero = copy.deepcopy(own(family))
    other = copy.deepcopy(own(family))
    with torch.no_grad():
        zero.encoder.pos_conv_embed.conv.bias.zero_()
        zero.encoder.pos_conv_embed.conv.parametrizations.weight.original0.zero_()
        other.encoder.pos_conv_embed.conv.parametrizations.weight.original0.mul_(3.0)
    conv_only = [p for p in patches if "pos_conv_embed" in p.description]
    removed = _output(lm.model, inputs, conv_only)
    np.testing.assert_allclose(removed.numpy(), _output(zero, inputs).numpy(), **TOL)
    other_patches = [p for p in family_of(other.config).removal(other) if "pos_conv_embed" in p.description]
    np.testing.assert_allclose(_output(other, inputs, other_patches).numpy(), removed.numpy(), **TOL)
    assert not np.allclose(_output(lm.model, inputs).numpy(), removed.numpy(), atol=1e-3)


@pytest.mark.parametrize("family", CONV)
def test_conv_positions_only_reads_the_same_kernel(family, loaded, positions_only):
    lm = positions_only(family)
    assert lm.positions_only and lm.tokenizer is None
    for full, light in zip(loaded(family).encodings, lm.encodings, strict=True):
        assert type(full) is type(light) and full.component == light.component
        if isinstance(full, ConvolutionalPositions):
            np.testing.assert_array_equal(light.kernel.numpy(), full.kernel.numpy())
        else:
            np.testing.assert_array_equal(light.table.numpy(), full.table.numpy())


def test_positions_only_reads_legacy_weight_norm_names(tmp_path, path_of, own):
    """Checkpoints saved before torch's parametrized weight norm store ``weight_g`` / ``weight_v`` (with the
    head model's prefix): the positions-only load reads them under those names."""
    folder = tmp_path / "legacy"
    shutil.copytree(path_of("wav2vec2"), folder)
    tensors = load_file(folder / "model.safetensors")
    renamed = {"wav2vec2." + k.replace("parametrizations.weight.original0", "weight_g")
               .replace("parametrizations.weight.original1", "weight_v"): v for k, v in tensors.items()}
    assert "wav2vec2.encoder.pos_conv_embed.conv.weight_g" in renamed
    save_file(renamed, folder / "model.safetensors", metadata={"format": "pt"})
    enc = posviz.load_model(str(folder), positions_only=True).encodings[0]
    kernel = own("wav2vec2").encoder.pos_conv_embed.conv.weight.detach()
    np.testing.assert_array_equal(enc.kernel.numpy(), kernel.numpy())


# ------------------------------------------------------------------------- WavLM's relative bias


def test_wavlm_bias_is_compute_bias(own, loaded):
    attention = own("wavlm").encoder.layers[0].attention
    conv, rel = loaded("wavlm").encodings
    assert (conv.component, rel.component) == ("convolution", "relative bias")
    assert isinstance(rel, posviz.RelativeBias) and not rel.causal and rel.heads == 4
    assert rel.source == "encoder.layers.0.attention.rel_attn_embed" and rel.table.shape == (32, 4)
    n = 100  # beyond max_bucket_distance 64
    with torch.no_grad():
        expected = attention.compute_bias(n, n).numpy()  # [heads, query, key]
    np.testing.assert_array_equal(rel.bias(np.arange(n)), expected)
    offsets = np.arange(-300, 301)
    np.testing.assert_array_equal(rel.buckets(offsets),
                                  attention._relative_positions_bucket(torch.as_tensor(offsets)).numpy())
    # both directions, logarithmic beyond 8; as in T5, bucket 16 (offset +0) is never reached: 0 is bucket 0
    np.testing.assert_array_equal(np.unique(rel.buckets(offsets)), np.delete(np.arange(32), 16))


def test_wavlm_bias_is_what_the_first_layer_passes_on(own, loaded):
    """The ungated bias the first attention computes and hands to the next layers (its third output)."""
    model = own("wavlm")
    rel = loaded("wavlm").encodings[1]
    seen = {}
    handle = model.encoder.layers[0].attention.register_forward_hook(lambda _m, _a, out: seen.update(bias=out[2]))
    try:
        with torch.no_grad():
            model(input_values=_audio())
    finally:
        handle.remove()
    bias = seen["bias"]  # [batch * heads, n, n]
    n = bias.shape[-1]
    np.testing.assert_array_equal(rel.bias(np.arange(n)), bias.reshape(4, n, n).numpy())


def test_wavlm_description_says_the_gate_is_not_shown(loaded):
    text = loaded("wavlm").encodings[1].describe()
    assert re.search(r"\bRaffel\b.*\b2020\b", text) and re.search(r"\bChen\b.*\b2022\b", text)
    assert "gate is not shown" in text and "`encoder.layers.0.attention.rel_attn_embed`" in text


def test_wavlm_removal_takes_out_convolution_and_bias(own, loaded):
    lm = loaded("wavlm")
    patches = lm.family.removal(lm.model)
    assert [p.description.split("`")[1] for p in patches] == ["encoder.pos_conv_embed",
                                                               "encoder.layers.0.attention.rel_attn_embed"]
    zero = copy.deepcopy(own("wavlm"))
    with torch.no_grad():
        zero.encoder.pos_conv_embed.conv.bias.zero_()
        zero.encoder.pos_conv_embed.conv.parametrizations.weight.original0.zero_()
        zero.encoder.layers[0].attention.rel_attn_embed.weight.zero_()
    inputs = {"input_values": _audio(seed=1)}
    np.testing.assert_allclose(_output(lm.model, inputs, patches).numpy(), _output(zero, inputs).numpy(), **TOL)


# ----------------------------------------------------------------------------------------- Whisper


def test_whisper_has_its_encoder_sinusoid_and_decoder_table(own, tiny_lm):
    model = own("whisper")
    lm = tiny_lm("whisper")
    encoder, decoder = lm.encodings
    assert (encoder.component, decoder.component) == ("encoder", "decoder")
    assert encoder.scheme == "sinusoidal" and decoder.scheme == "learned_absolute"
    assert lm.scheme_label == "fixed sinusoidal position embeddings + learned absolute position embeddings"
    np.testing.assert_array_equal(encoder.matrix, model.encoder.embed_positions.weight.detach().numpy())
    np.testing.assert_allclose(encoder.matrix, posviz.sinusoidal(64, 32, "t2t"), atol=1e-5)
    table = model.decoder.embed_positions.weight.detach().numpy()
    assert decoder.source == "decoder.embed_positions" and decoder.offset == 0
    np.testing.assert_array_equal(decoder.matrix, table)
    # what the decoder adds at positions 0 .. n - 1
    n = 20
    with Capture(model) as cap, torch.no_grad():
        cap.output_of("decoder.embed_positions")
        model(input_features=torch.randn(1, 8, 128, generator=torch.Generator().manual_seed(0)),
              decoder_input_ids=random_ids(n))
    np.testing.assert_array_equal(cap.outputs["decoder.embed_positions"].reshape(n, 32).numpy(), decoder.matrix[:n])


def test_whisper_positions_only_matches(tiny_lm, positions_only):
    for full, light in zip(tiny_lm("whisper").encodings, positions_only("whisper").encodings, strict=True):
        np.testing.assert_array_equal(light.matrix, full.matrix)


# --------------------------------------------------------------- no positional encoding (recurrent)


@pytest.mark.parametrize("family", RECURRENT)
def test_recurrent_models_say_where_order_comes_from(family, tiny_lm):
    lm = tiny_lm(family)
    (enc,) = lm.encodings
    assert isinstance(enc, NoPositions) and enc.scheme == "none" and enc.signature() is None
    text = enc.describe()
    assert text != NoPositions("", 0).describe()
    assert text.count(". ") == 0 and text.endswith(".")  # one sentence
    assert "recurrence" in text and "no positional encoding" in text
    assert ("causal convolution" in text) if family != "rwkv" else ("token shift" in text)
    assert lm.family.positional  # it knows order, by its computation
    with pytest.raises(PositionRemovalError, match="recurrence"):
        lm.family.removal(lm.model)


@pytest.mark.parametrize("family", RECURRENT)
def test_recurrent_models_do_know_order(family, own):
    """Two tokens swapped before the last: the last token's output changes (a bag of tokens would not)."""
    ids = random_ids(8)
    swapped = ids.clone()
    swapped[0, [2, 5]] = ids[0, [5, 2]]
    model = own(family)
    with torch.no_grad():
        a, b = model(input_ids=ids).last_hidden_state[0, -1], model(input_ids=swapped).last_hidden_state[0, -1]
    assert not torch.allclose(a, b, atol=1e-4)


def test_no_positions_without_reason_keeps_the_generic_text():
    spec = NoPositionsSpec()
    enc = spec.read(None, None, heads=1, max_tokens=1)
    assert "bag of tokens" in enc.describe() and not spec.positional and spec.removal(None) == []


# -------------------------------------------------------------------------------------------- XLNet


def test_xlnet_rows_are_its_relative_positional_encoding(own, tiny_lm):
    model = own("xlnet")
    lm = tiny_lm("xlnet")
    (enc,) = lm.encodings
    assert isinstance(enc, RelativeSinusoid) and lm.scheme == "relative_sinusoid"
    n = lm.max_tokens
    assert n == 512 and enc.num_positions == 2 * n - 1 and enc.first_label == -(n - 1)
    assert enc.axis_label == "relative position" and enc.source == "XLNetModel.relative_positional_encoding()"
    with torch.no_grad():
        built = model.relative_positional_encoding(n, n)[:, 0, :].numpy()  # distances n, n - 1, …, −n + 1
    rows = enc.vectors(np.arange(enc.num_positions)).numpy()
    np.testing.assert_array_equal(rows, built[1:][::-1])


def test_xlnet_attention_reads_row_of_query_minus_key(own, tiny_lm):
    """The model's own rel_shift_bnij gives query i and key j the column of R for the distance i − j."""
    from transformers.models.xlnet.modeling_xlnet import XLNetRelativeAttention

    enc = tiny_lm("xlnet").encodings[0]
    n = 12
    model = own("xlnet")
    with torch.no_grad():
        built = model.relative_positional_encoding(n, n)[:, 0, :]  # [2n, d]
    columns = torch.arange(2 * n, dtype=torch.float32).expand(1, 1, n, 2 * n).contiguous()
    used = XLNetRelativeAttention.rel_shift_bnij(columns, klen=n)[0, 0].long()  # [i, j] -> column of R
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    np.testing.assert_array_equal(built[used].numpy(),
                                  enc.vectors((i - j) - enc.first_label).numpy())


def test_xlnet_rows_are_the_sinusoid_of_the_distance(tiny_lm):
    enc = tiny_lm("xlnet").encodings[0]
    reach = -enc.first_label
    formula = posviz.sinusoidal(reach + 1, 32, "halves")  # sin then cos, frequencies 10000^(-2k/d)
    ahead = enc.vectors(np.arange(reach, 2 * reach + 1)).numpy()  # distances 0 .. reach
    behind = enc.vectors(np.arange(reach, -1, -1)).numpy()  # distances 0 .. -reach
    np.testing.assert_allclose(ahead, formula, atol=1e-4)
    np.testing.assert_allclose(behind, formula * np.r_[-np.ones(16), np.ones(16)], atol=1e-4)  # sin is odd
    sig = enc.signature()
    np.testing.assert_array_equal(sig.x, np.arange(-reach, reach + 1))
    (curve,) = sig.series.values()
    np.testing.assert_allclose(curve[reach], 16.0, rtol=1e-5)  # R_0 · R_0 = d / 2
    np.testing.assert_allclose(curve, curve[::-1], atol=1e-3)  # depends on |d| only


def test_xlnet_description_and_removal(tiny_lm):
    lm = tiny_lm("xlnet")
    text = lm.encodings[0].describe()
    assert re.search(r"\bDai\b.*\b2019\b", text) and re.search(r"\bYang\b.*\b2019\b", text)
    assert "`XLNetModel.relative_positional_encoding()`" in text and "−511 … 511" in text
    with pytest.raises(PositionRemovalError, match="relative_positional_encoding"):
        lm.family.removal(lm.model)


# ----------------------------------------------------------------------------------------- Reformer


@pytest.mark.parametrize("n", [64, 24])
def test_reformer_row_p_is_what_the_module_adds(n, own, tiny_lm):
    model = own("reformer")
    (enc,) = tiny_lm("reformer").encodings
    assert isinstance(enc, AxialEmbeddings) and enc.scheme == "axial"
    assert enc.shape == (8, 8) and enc.num_positions == 64 == tiny_lm("reformer").max_tokens
    with Capture(model) as cap, torch.no_grad():
        cap.output_of("embeddings.position_embeddings")
        model(input_ids=random_ids(n))
    added = cap.outputs["embeddings.position_embeddings"][0]
    assert added.shape == (n, 32)
    np.testing.assert_array_equal(enc.vectors(np.arange(n)).numpy(), added.numpy())


def test_reformer_factors_are_the_modules_weights(own, tiny_lm):
    weights = own("reformer").embeddings.position_embeddings.weights
    enc = tiny_lm("reformer").encodings[0]
    np.testing.assert_array_equal(enc.factors[0].numpy(), weights[0].detach().reshape(8, 16).numpy())
    np.testing.assert_array_equal(enc.factors[1].numpy(), weights[1].detach().reshape(8, 16).numpy())
    # positions in one row of the grid share the first 16 dims, positions 8 apart the last 16
    rows = enc.vectors(np.arange(64)).numpy()
    np.testing.assert_array_equal(rows[8:16, :16], np.broadcast_to(rows[8, :16], (8, 16)))
    np.testing.assert_array_equal(rows[3::8, 16:], np.broadcast_to(rows[3, 16:], (8, 16)))
    text = enc.describe()
    assert re.search(r"\bKitaev\b.*\b2020\b", text) and "`embeddings.position_embeddings`" in text
    assert "grid of 8 rows × 8 columns" in text
    sig = enc.signature()
    (norms,) = sig.series.values()
    np.testing.assert_allclose(norms, np.linalg.norm(rows, axis=1), **TOL)


def test_reformer_removal_and_positions_only(own, tiny_lm, positions_only):
    lm = tiny_lm("reformer")
    (patch,) = lm.family.removal(lm.model)
    assert patch.module is lm.model.embeddings.position_embeddings
    light = positions_only("reformer").encodings[0]
    np.testing.assert_array_equal(light.vectors(np.arange(64)).numpy(),
                                  lm.encodings[0].vectors(np.arange(64)).numpy())


def test_reformer_without_axial_embeddings_is_a_learned_table(tmp_path):
    """``axial_pos_embds=False``: Reformer's plain PositionEmbeddings, a table at ``….embedding``."""
    from tests.support.tiny_models import build_tiny, tiny_config

    config = tiny_config("reformer")
    config.axial_pos_embds = False
    lm = posviz.load_model(str(build_tiny("reformer", tmp_path, config=config)))
    (enc,) = lm.encodings
    assert enc.scheme == "learned_absolute" and enc.source == "embeddings.position_embeddings.embedding"
    np.testing.assert_array_equal(enc.matrix, lm.model.embeddings.position_embeddings.embedding.weight.detach().numpy())
    assert enc.num_positions == lm.max_tokens == 64


# --------------------------------------------------------------------------------------- CTRL, XGLM


def test_ctrl_sinusoid_is_its_buffer_and_what_it_adds(own, tiny_lm):
    model = own("ctrl")
    lm = tiny_lm("ctrl")
    (enc,) = lm.encodings
    assert enc.scheme == "sinusoidal" and enc.sinusoid == "halves" and enc.source == "pos_encoding"
    np.testing.assert_array_equal(enc.matrix, model.pos_encoding.numpy())
    np.testing.assert_allclose(enc.matrix, posviz.sinusoidal(64, 32, "halves"), atol=1e-5)
    assert not np.allclose(enc.matrix, posviz.sinusoidal(64, 32, "interleaved"), atol=1e-3)
    # the first layer's input is w(ids)·√d + PE (dropout is off in eval)
    n = 30
    ids = random_ids(n)
    with Capture(model) as cap, torch.no_grad():
        cap.input_of("h.0")
        cap.output_of("w")
        model(input_ids=ids)
    added = cap.inputs["h.0"][0] - cap.outputs["w"][0] * np.sqrt(32)
    np.testing.assert_allclose(added.numpy(), enc.matrix[:n], **TOL)
    with pytest.raises(PositionRemovalError, match="pos_encoding"):
        lm.family.removal(lm.model)
    assert lm.family.input_positions is None


def test_xglm_sinusoid_is_its_module_offset_2(own, tiny_lm):
    model = own("xglm")
    (enc,) = tiny_lm("xglm").encodings
    assert enc.scheme == "sinusoidal" and enc.sinusoid == "t2t" and enc.offset == 2
    held = model.embed_positions.weights.numpy()
    np.testing.assert_array_equal(enc.matrix, held[2:])
    np.testing.assert_allclose(enc.matrix, posviz.sinusoidal(66, 32, "t2t")[2:], atol=1e-5)
    n = 30
    with Capture(model) as cap, torch.no_grad():
        cap.output_of("embed_positions")
        model(input_ids=random_ids(n))
    np.testing.assert_array_equal(cap.outputs["embed_positions"][0].numpy(), enc.matrix[:n])


@pytest.mark.parametrize("family", ["ctrl", "xglm"])
def test_sinusoid_positions_only_matches(family, tiny_lm, positions_only):
    np.testing.assert_array_equal(positions_only(family).encodings[0].matrix, tiny_lm(family).encodings[0].matrix)


def test_every_family_of_the_group_is_in_the_table():
    from transformers import AutoConfig

    for name, spec in FAMILIES.items():
        config = spec.make_config()
        assert family_of(config).scheme == spec.scheme, name
        assert AutoConfig.for_model(config.model_type).model_type == name


@pytest.mark.parametrize("family, table", [("mamba", "embeddings"), ("xlnet", "word_embedding")])
def test_word_order_runs_on_a_model_without_attention_or_batch_first_embeddings(family, table, tiny_lm):
    """Mamba returns no attentions; XLNet's word_embedding runs time-major. The comparison's input is the
    model's own token vectors of the sentence (its first hidden state), in the original order."""
    from posviz.analysis.word_order import compare_orders
    from posviz.tokenization import encode

    lm = tiny_lm(family)
    text = "The cat chased the dog"
    result = compare_orders(lm, text, [4, 1, 2, 3, 0])
    ids = encode(lm, text).model_inputs["input_ids"][0]
    weights = getattr(lm.model, table).weight.detach().numpy()
    np.testing.assert_allclose(result.input_original, weights[ids.numpy()], **TOL)
    assert not result.causal and not result.must_match.any()  # nothing claimed without attention to read
