"""posviz.input_representation against the model's own embedding computation (forward hooks)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import posviz
from tests.support.reference import Capture, encode, run_model
from tests.support.tiny_models import FAMILIES, LEARNED, LONG_TEXT, PAIR, SENTENCE

ATOL = 1e-5


def _own_embeddings(model, tok, spec, text, text_pair=None, **enc_kw):
    """Run the model's own forward and record what its embedding modules produced."""
    batch = encode(tok, text, text_pair, **enc_kw)
    with Capture(model) as cap:
        cap.output_of(spec.position_module).output_of(spec.word_module)
        if spec.segment_module:
            cap.output_of(spec.segment_module)
        if spec.layernorm_module:
            cap.input_of(spec.layernorm_module).output_of(spec.layernorm_module)
        else:
            cap.input_of(spec.first_layer_module)
        run_model(model, batch, encoder_decoder=spec.encoder_decoder)
    out = {
        "ids": batch["input_ids"][0],
        "token_type_ids": batch.get("token_type_ids"),
        "tokens": tok.convert_ids_to_tokens(batch["input_ids"][0].tolist()),
        "position": cap.outputs[spec.position_module][0].numpy(),
        "token": cap.outputs[spec.word_module][0].numpy(),
        "segment": cap.outputs[spec.segment_module][0].numpy() if spec.segment_module else None,
    }
    if spec.layernorm_module:
        out["sum"] = cap.inputs[spec.layernorm_module][0].numpy()
        out["normalized"] = cap.outputs[spec.layernorm_module][0].numpy()
    else:
        out["sum"] = cap.inputs[spec.first_layer_module][0].numpy()
        out["normalized"] = None
    return out


def _check_against_model(emb, own, pe_matrix):
    n = len(own["tokens"])
    assert list(emb.tokens) == own["tokens"]
    width = own["sum"].shape[1]
    for name in ("token", "position", "sum"):
        arr = getattr(emb, name)
        assert isinstance(arr, np.ndarray) and arr.dtype == np.float32, name
        assert arr.shape == (n, width), name
    np.testing.assert_allclose(emb.position, own["position"], atol=ATOL, rtol=0)
    np.testing.assert_allclose(emb.position, pe_matrix[:n], atol=ATOL, rtol=0)
    np.testing.assert_allclose(emb.token, own["token"], atol=ATOL, rtol=1e-5)
    np.testing.assert_allclose(emb.sum, own["sum"], atol=ATOL, rtol=1e-5)
    if own["segment"] is None:
        assert emb.segment is None
        parts = emb.token + emb.position
    else:
        assert emb.segment.shape == (n, width)
        assert emb.segment.dtype == np.float32
        np.testing.assert_allclose(emb.segment, own["segment"], atol=ATOL, rtol=0)
        parts = emb.token + emb.segment + emb.position
    np.testing.assert_allclose(parts, emb.sum, atol=ATOL, rtol=1e-5)
    if own["normalized"] is None:
        assert emb.normalized is None
    else:
        assert emb.normalized.dtype == np.float32
        assert emb.normalized.shape == (n, width)
        np.testing.assert_allclose(emb.normalized, own["normalized"], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("family", LEARNED)
def test_input_embeddings_match_model(family, tiny_lm, reference):
    spec = FAMILIES[family]
    model, tok = reference(family)
    lm = tiny_lm(family)
    emb = posviz.input_representation(lm, SENTENCE)
    own = _own_embeddings(model, tok, spec, SENTENCE)
    _check_against_model(emb, own, lm.encodings[0].matrix)
    assert emb.truncated == 0


@pytest.mark.parametrize("family", LEARNED)
def test_input_embeddings_pair_match_model(family, tiny_lm, reference):
    spec = FAMILIES[family]
    model, tok = reference(family)
    lm = tiny_lm(family)
    emb = posviz.input_representation(lm, SENTENCE, text_pair=PAIR)
    own = _own_embeddings(model, tok, spec, SENTENCE, PAIR)
    _check_against_model(emb, own, lm.encodings[0].matrix)
    single = posviz.input_representation(lm, SENTENCE)
    assert len(emb.tokens) > len(single.tokens)


@pytest.mark.parametrize("family", ["bert", "albert", "electra"])
def test_pair_gives_segment_b(family, tiny_lm, reference):
    model, tok = reference(family)
    spec = FAMILIES[family]
    emb = posviz.input_representation(tiny_lm(family), SENTENCE, text_pair=PAIR)
    tt = encode(tok, SENTENCE, PAIR)["token_type_ids"][0].numpy()
    assert (tt == 0).any() and (tt == 1).any()
    seg_table = model.get_submodule(spec.segment_module).weight.detach().numpy()
    np.testing.assert_allclose(emb.segment[tt == 0], np.broadcast_to(seg_table[0], ((tt == 0).sum(), seg_table.shape[1])), atol=ATOL)
    np.testing.assert_allclose(emb.segment[tt == 1], np.broadcast_to(seg_table[1], ((tt == 1).sum(), seg_table.shape[1])), atol=ATOL)
    a, b = emb.segment[tt == 0][0], emb.segment[tt == 1][0]
    assert not np.allclose(a, b)
    # single text: segment A everywhere
    single = posviz.input_representation(tiny_lm(family), SENTENCE)
    np.testing.assert_allclose(single.segment, np.broadcast_to(seg_table[0], single.segment.shape), atol=ATOL)


def test_bert_tokens_cls_sep(tiny_lm):
    emb = posviz.input_representation(tiny_lm("bert"), SENTENCE, text_pair=PAIR)
    assert emb.tokens[0] == "[CLS]"
    assert emb.tokens[-1] == "[SEP]"
    assert emb.tokens.count("[SEP]") == 2
    assert "quick" in emb.tokens and "amused" in emb.tokens


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_empty_text_raises(text, tiny_lm):
    with pytest.raises(ValueError):
        posviz.input_representation(tiny_lm("bert"), text)


# ----------------------------------------------------------------------------- bundled model


def test_bundled_input_embeddings_match_model(bundled_lm, bundled_reference):
    model, tok = bundled_reference
    emb = posviz.input_representation(bundled_lm, SENTENCE, text_pair=PAIR)
    own = _own_embeddings(model, tok, FAMILIES["bert"], SENTENCE, PAIR)
    _check_against_model(emb, own, bundled_lm.encodings[0].matrix)
    assert emb.tokens[0] == "[CLS]"
    # normalized is the embeddings module's own output (eval mode: dropout off)
    with torch.no_grad():
        batch = encode(tok, SENTENCE, PAIR)
        out = model.embeddings(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"])
    np.testing.assert_allclose(emb.normalized, out[0].numpy(), atol=1e-4)


# ----------------------------------------------------------------------------- truncation


def _full_count(tok, text, text_pair=None):
    return len(tok(text, text_pair)["input_ids"])


def test_bundled_truncation(bundled_lm, bundled_reference):
    model, tok = bundled_reference
    full = _full_count(tok, LONG_TEXT)
    assert full > 512
    emb = posviz.input_representation(bundled_lm, LONG_TEXT)
    assert len(emb.tokens) == 512
    assert emb.sum.shape == (512, 384)
    assert emb.truncated == full - 512
    own = _own_embeddings(model, tok, FAMILIES["bert"], LONG_TEXT, truncation=True, max_length=512)
    _check_against_model(emb, own, bundled_lm.encodings[0].matrix)


@pytest.mark.parametrize("family", ["bert", "roberta", "gpt2", "opt", "bart"])
def test_tiny_truncation(family, tiny_lm, reference):
    spec = FAMILIES[family]
    model, tok = reference(family)
    lm = tiny_lm(family)
    assert lm.max_tokens == spec.max_tokens
    full = _full_count(tok, LONG_TEXT)
    emb = posviz.input_representation(lm, LONG_TEXT)
    assert len(emb.tokens) == spec.max_tokens
    assert emb.truncated == full - spec.max_tokens > 0
    own = _own_embeddings(model, tok, spec, LONG_TEXT, truncation=True, max_length=spec.max_tokens)
    _check_against_model(emb, own, lm.encodings[0].matrix)


def test_tiny_pair_truncation(tiny_lm, reference):
    _, tok = reference("bert")
    lm = tiny_lm("bert")
    full = _full_count(tok, LONG_TEXT, PAIR)
    emb = posviz.input_representation(lm, LONG_TEXT, text_pair=PAIR)
    assert len(emb.tokens) == 64
    assert emb.truncated == full - 64
    assert emb.tokens.count("[SEP]") == 2


@pytest.mark.parametrize("family", ["marian", "pegasus", "m2m_100"])
def test_sinusoidal_encoders_input_sum_is_what_the_first_layer_receives(family, tiny_lm, reference):
    """Marian and Pegasus scale the token vectors outside the module and return positions without
    a batch axis; M2M100 scales inside and offsets its sinusoid by 2. The sum posviz reports must
    be the hidden state entering the encoder's first layer."""
    model, tok = reference(family)
    lm = tiny_lm(family)
    emb = posviz.input_representation(lm, SENTENCE)
    seen = {}

    def first_layer_input(_module, args, kwargs):
        seen.setdefault("h", kwargs.get("hidden_states", args[0] if args else None))

    handle = model.encoder.layers[0].register_forward_pre_hook(first_layer_input, with_kwargs=True)
    try:
        with torch.no_grad():
            model.get_encoder()(**{k: v for k, v in tok(SENTENCE, return_tensors="pt").items()
                                   if k in ("input_ids", "attention_mask")})
    finally:
        handle.remove()
    n = len(emb.tokens)
    assert emb.position.shape == emb.token.shape == (n, lm.config.d_model)
    np.testing.assert_allclose(emb.sum, seen["h"][0].numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(emb.position, lm.encodings[0].matrix[:n], atol=1e-6)
